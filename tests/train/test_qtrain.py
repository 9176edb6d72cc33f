#!/usr/bin/env python3
"""test_qtrain.py — qtrain end to end, read back with h5py (an independent reader):
bad input (one line, exit 2), determinism, matched recipes (same initial weights
and batches), bit-identical --resume, every recipe runs, divergence, eval-only.

usage: test_qtrain.py QTRAIN [CORPUS [ARCH]] — every run with --arch ARCH
(default gpt); ctest runs it for gpt and for llama (grouped-query, 2 heads
sharing one key/value head)."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

QTRAIN = sys.argv[1]
CORPUS = sys.argv[2] if len(sys.argv) > 2 else ""
ARCH = sys.argv[3] if len(sys.argv) > 3 else "gpt"
ARCH_ARGS = {"gpt": ["--arch", "gpt"], "llama": ["--arch", "llama", "--kv-heads", "1"]}[ARCH]
GEMMS = {"gpt": {b"qkv", b"attproj", b"fc", b"fcproj"}, "llama": {b"qkv", b"attproj", b"gate", b"up", b"down"}}[ARCH]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks, write_corpus  # noqa: E402

check = Checks()


def run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([QTRAIN] + args, capture_output=True, text=True, env=e, timeout=600)


tmp = tempfile.mkdtemp(prefix="qtrain_test_")
data = os.path.join(tmp, "corpus.txt")
write_corpus(data, CORPUS, 200000)

TINY = ["--data", data, "--layers", "2", "--heads", "2", "--dim", "32", "--seq", "32", "--batch", "4",
        "--threads", "2", "--quiet", "--eval-every", "4", "--eval-batches", "2", "--warmup", "2"] + ARCH_ARGS


def train(name, extra):
    out = os.path.join(tmp, name + ".h5")
    p = run(TINY + ["--out", out] + extra)
    return p, out


# ---- bad input: one line on stderr, exit 2 ----------------------------------
bad = [
    (["--layers", "2"], "--data is required"),
    (["--data", os.path.join(tmp, "missing.txt")], "missing.txt"),
    (TINY[:2] + ["--dim", "0"], "--dim"),
    (TINY[:2] + ["--heads", "3", "--dim", "32"], "does not divide"),
    (TINY[:2] + ["--seq", "1000000"], "--seq"),
    (TINY[:2] + ["--recipe", "fp7"], "valid: fp32, bf16"),
    (TINY[:2] + ["--recipe", "bf16,nvfp4-rht"], "nvfp4 recipe only"),
    (TINY[:2] + ["--bogus", "1"], "unknown option"),
    (TINY[:2] + ["--lr", "abc"], "--lr"),
    (TINY[:2] + ["--lr", "-1"], "--lr"),
    (TINY[:2] + ["--steps"], "needs a value"),
    (TINY[:2] + ["--out", "/nonexistent-dir/x/run.h5", "--steps", "1"], "run.h5"),
    (TINY[:2] + ["--eval-only"], "--resume-from"),
    (TINY[:2] + ["--batch", "-4"], "--batch"),
    (TINY[:2] + ["--arch", "mamba"], "--arch must be gpt or llama, not 'mamba'"),
    (TINY[:2] + ["--arch", "llama", "--heads", "4", "--kv-heads", "3"], "--kv-heads 3 does not divide --heads 4"),
    (TINY[:2] + ["--arch", "llama", "--kv-heads", "0"], "--kv-heads"),
    (TINY[:2] + ["--arch", "gpt", "--kv-heads", "2"], "llama architecture's"),
    (TINY[:2] + ["--arch", "gpt", "--smooth-swiglu"], "llama architecture's"),
    (TINY[:2] + ["--arch", "llama", "--heads", "4", "--dim", "36"], "even head size"),
    (TINY[:2] + ["--arch", "llama", "--mlp-hidden", "x"], "--mlp-hidden"),
    (TINY[:2] + ARCH_ARGS + ["--inject", "nan:grad:fcw@1" if ARCH == "llama" else "nan:grad:gatew@1"],
     "unknown tensor"),
]
for args, fragment in bad:
    p = run(args)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == 2, f"{args}: exit {p.returncode}, want 2 ({p.stderr.strip()})")
    check(len(lines) == 1 and fragment in lines[0], f"{args}: stderr {p.stderr!r} lacks {fragment!r}")
    check(p.stdout == "", f"{args}: printed on stdout")

# ---- determinism and matched recipes -----------------------------------------
p1, a = train("det_a", ["--steps", "10", "--recipe", "bf16"])
p2, b = train("det_b", ["--steps", "10", "--recipe", "bf16"])
check(p1.returncode == 0 and p2.returncode == 0, f"bf16 runs: {p1.stderr} {p2.stderr}")
with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
    la, lb = fa["train/loss"][:], fb["train/loss"][:]
    check(len(la) == 10 and np.array_equal(la.view(np.uint64), lb.view(np.uint64)), "same seed: bit-identical losses")
    check(np.array_equal(fa["eval/val_loss"][:], fb["eval/val_loss"][:]), "same seed: identical val losses")
    check(la[-1] < la[0], f"loss falls: {la[0]} -> {la[-1]}")
    for k in ["step", "loss", "lr", "grad_norm", "step_ms", "data_wait_ms", "tokens_per_s", "batch_hash"]:
        check(k in fa["train"] and len(fa["train"][k]) == 10, f"/train/{k}")
    check(fa["status"][-1]["state"] == b"done", "status done")
    check(fa.attrs["recipe"] == "bf16" and int(fa.attrs["num_params"]) > 0, "root attributes")
    check(fa.attrs["arch"] == ARCH, f"arch attribute {fa.attrs['arch']}")
    if ARCH == "llama":  # the defaults resolved: one key/value head asked for, 8C/3 -> 128 (multiple of 64)
        check(fa.attrs["kv_heads"] == "1" and fa.attrs["mlp_hidden"] == "128", "llama shape attributes")
        C, V, H, L, KV = 32, 256, 128, 2, 1 * 16
        want = V * C + L * (C + (C + 2 * KV) * C + C * C + C + 3 * H * C) + C + V * C
        check(int(fa.attrs["num_params"]) == want, f"llama parameter count {fa.attrs['num_params']}, want {want}")

# the AVX-512 copy of the model kernels rounds exactly like the baseline copy
# (head size 32: the Llama's rotation takes its vector path too)
p3, c = train("det_isa", ["--steps", "10", "--recipe", "bf16", "--dim", "64"])
p4 = run(TINY + ["--out", os.path.join(tmp, "det_isa_base.h5"), "--steps", "10", "--recipe", "bf16", "--dim", "64"],
         env={"QP_MODEL_ISA": "baseline"})
check(p3.returncode == 0 and p4.returncode == 0, "isa runs")
with h5py.File(c, "r") as fc, h5py.File(os.path.join(tmp, "det_isa_base.h5"), "r") as fd:
    check(fd.attrs["model_kernels"] == "baseline", "QP_MODEL_ISA=baseline honoured")
    check(np.array_equal(fc["train/loss"][:].view(np.uint64), fd["train/loss"][:].view(np.uint64)),
          f"{fc.attrs['model_kernels']} and baseline kernels give bit-identical losses")

runs = {}
for recipe in ["fp32", "fp8", "nvfp4"]:
    p, out = train("match_" + recipe, ["--steps", "6", "--recipe", recipe, "--qerr-every", "3"])
    check(p.returncode == 0, f"{recipe}: {p.stderr}")
    runs[recipe] = out
with h5py.File(runs["fp32"], "r") as f0, h5py.File(runs["fp8"], "r") as f1, h5py.File(runs["nvfp4"], "r") as f2:
    check(f0.attrs["init_param_hash"] == f1.attrs["init_param_hash"] == f2.attrs["init_param_hash"],
          "every recipe starts from the same weights")
    h0, h1, h2 = f0["train/batch_hash"][:], f1["train/batch_hash"][:], f2["train/batch_hash"][:]
    check(np.array_equal(h0, h1) and np.array_equal(h0, h2), "every recipe sees the same batches")
    check(not np.array_equal(f0["train/loss"][:], f2["train/loss"][:]), "recipes differ in their losses")
    q = f2["quant/error"][:]
    check(len(q) > 0 and set(q["pass"]) == {b"fprop", b"dgrad", b"wgrad"}, "nvfp4 logs per-pass errors")
    check(set(q["gemm"]) == GEMMS, f"{ARCH}'s GEMMs in /quant/error: {set(q['gemm'])}")
    for f in (f0, f2):  # outliers for every recipe, fp32 too: the GEMM inputs before quantization
        o = f["quant/outliers"][:]
        check(set(o["gemm"]) == GEMMS and set(o["step"]) == {0, 3} and set(o["layer"]) == {0, 1},
              f"/quant/outliers: every block GEMM at steps 0 and 3: {set(o['gemm'])} {set(o['step'])}")
        ok = np.all(o["amax"] > 0) and np.all(o["kurtosis"] >= 1) and np.all(o["topk"] == 1)
        check(ok and np.all((o["topk_frac"] > 0) & (o["topk_frac"] <= 1)) and np.all(o["chan_amax_ratio"] >= 1) and
              np.all(o["top_channel"] < o["channels"]), "outlier statistics in range")
    check(set(q["operand"]) == {b"x", b"w", b"dy"}, "nvfp4 logs x, w, dy")
    check(np.all(q["rel_l2"][q["layer"] == 0] > 0.01), "nvfp4 quantized blocks have a real error")
    check(np.all(q["rel_l2"][q["layer"] == 1] < 0.01), "the last block is BF16 in the nvfp4 recipe")
    ev = f1["events/recalib"][:]
    check(len(ev) > 0 and b"scale_change" in set(ev["kind"]), "fp8 delayed scaling reports recalibrations")

r = subprocess.run(["h5dump", "-H", runs["nvfp4"]], capture_output=True, text=True)
check(r.returncode == 0 and 'DATASET "error"' in r.stdout and 'DATASET "val_loss"' in r.stdout,
      "h5dump reads the run file")

# ---- every recipe and modifier runs ------------------------------------------
for recipe in ["fp8-current", "mxfp8", "nvfp4-naive", "mxfp4", "nvfp4,nvfp4-rht", "nvfp4-sr", "nvfp4-2d",
               "nvfp4,bf16-last=0,bf16-first=1"]:
    p, out = train("recipe_" + recipe.replace(",", "_").replace("=", ""), ["--steps", "3", "--recipe", recipe])
    ok = p.returncode == 0
    if ok:
        with h5py.File(out, "r") as f:
            ok = np.all(np.isfinite(f["train/loss"][:])) and len(f["train/loss"]) == 3
    check(ok, f"recipe {recipe}: {p.stderr}")

# ---- resume is bit-identical --------------------------------------------------
for recipe in ["bf16", "fp8", "nvfp4"]:
    full = ["--steps", "12", "--ckpt-every", "4", "--recipe", recipe]
    p, ref = train("resume_ref_" + recipe, full)
    p1, part = train("resume_" + recipe, full + ["--stop-after", "7"])
    check(p.returncode == 0 and p1.returncode == 0, f"resume runs {recipe}: {p.stderr} {p1.stderr}")
    with h5py.File(part, "r") as f:
        check(len(f["train/loss"]) == 7, "interrupted run logged 7 steps")
    p2, part2 = train("resume_" + recipe, full + ["--resume"])
    check(p2.returncode == 0, f"resume {recipe}: {p2.stderr}")
    with h5py.File(ref, "r") as fr, h5py.File(part, "r") as fp:
        lr_, lp = fr["train/loss"][:], fp["train/loss"][:]
        check(np.array_equal(fr["train/step"][:], fp["train/step"][:]), f"{recipe}: resumed steps 0..11 once each")
        check(np.array_equal(lr_.view(np.uint64), lp.view(np.uint64)), f"{recipe}: resumed losses bit-identical")
        check(np.array_equal(fr["eval/val_loss"][:], fp["eval/val_loss"][:]), f"{recipe}: resumed val losses")
    with h5py.File(ref[:-3] + ".ckpt.h5", "r") as cr, h5py.File(part[:-3] + ".ckpt.h5", "r") as cp:
        same = all(np.array_equal(cr["params"][k][:].view(np.uint32), cp["params"][k][:].view(np.uint32))
                   for k in cr["params"])
        check(same, f"{recipe}: final weights bit-identical after resume")

# ---- SIGTERM stops cleanly: status "stopped", exit 130, file opens without h5clear, resume finishes ----
import signal
import time
out = os.path.join(tmp, "sigterm.h5")
proc = subprocess.Popen([QTRAIN] + TINY + ["--out", out, "--steps", "400", "--ckpt-every", "5", "--recipe", "bf16"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
deadline = time.time() + 120
while time.time() < deadline and not os.path.exists(out[:-3] + ".ckpt.h5"):
    time.sleep(0.05)
proc.send_signal(signal.SIGTERM)
_, errtxt = proc.communicate(timeout=120)
check(proc.returncode == 130 and "stopped by a signal" in errtxt, f"SIGTERM: exit {proc.returncode}: {errtxt}")
with h5py.File(out, "r") as f:  # a plain (non-SWMR) open works: the file was closed
    check(f["status"][-1]["state"] == b"stopped", "status stopped")
    n_stopped = len(f["train/loss"])
p5, _ = train("sigterm", ["--steps", "400", "--ckpt-every", "5", "--recipe", "bf16", "--resume"])
with h5py.File(out, "r") as f:
    check(p5.returncode == 0 and np.array_equal(f["train/step"][:], np.arange(400)), "resume after SIGTERM completes")

# ---- divergence ---------------------------------------------------------------
p, out = train("diverge", ["--steps", "30", "--lr", "50", "--warmup", "0", "--grad-clip", "0", "--recipe", "bf16"])
check(p.returncode == 3, f"divergence exits 3, got {p.returncode}: {p.stderr}")
check("before the first checkpoint" in p.stderr or "checkpoint kept" in p.stderr, f"divergence message: {p.stderr}")
with h5py.File(out, "r") as f:
    d = f["events/divergence"][:]
    check(len(d) == 1 and f["status"][-1]["state"] == b"diverged", "divergence recorded")

# ---- post-training quantization: eval-only -------------------------------------
p, out = train("ptq_src", ["--steps", "4", "--recipe", "bf16"])
ck = out[:-3] + ".ckpt.h5"
pe = run(["--data", data, "--eval-only", "--resume-from", ck, "--recipe", "nvfp4", "--batch", "4",
          "--eval-batches", "2", "--out", os.path.join(tmp, "ptq.h5"), "--quiet"])
check(pe.returncode == 0 and pe.stdout.startswith("val_loss "), f"eval-only: {pe.stdout} {pe.stderr}")
with h5py.File(os.path.join(tmp, "ptq.h5"), "r") as f:
    check(len(f["eval/val_loss"]) == 1 and len(f["quant/error"]) > 0, "eval-only logs val loss and errors")
    check(set(f["quant/error"][:]["pass"]) == {b"fprop"}, "eval-only quantizes forward GEMMs only")
    check(f.attrs["arch"] == ARCH and set(f["quant/outliers"][:]["gemm"]) == GEMMS,
          "eval-only takes the checkpoint's architecture and logs its GEMM inputs' outliers")
# a checkpoint of one architecture does not resume as the other
other = ["--arch", "gpt"] if ARCH == "llama" else ["--arch", "llama"]
pm = run(TINY[:len(TINY) - len(ARCH_ARGS)] + other + ["--out", out, "--steps", "6", "--resume", "--recipe", "bf16"])
lines = [l for l in pm.stderr.splitlines() if l.strip()]
check(pm.returncode == 2 and len(lines) == 1 and f"is of --arch {ARCH}" in lines[0],
      f"resume across architectures refused: {pm.returncode} {pm.stderr}")

print(f"test_qtrain: {check.passed} passed, {check.failed} failed")
sys.exit(1 if check.failed else 0)
