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
    (TINY[:2] + ["--arch", "gpt", "--recipe", "fp8,smooth-swiglu"], "down GEMM"),
    (TINY[:2] + ARCH_ARGS + ["--recipe", "bf16,fcproj=fp8-e4m3" if ARCH == "llama" else "bf16,up=fp8-e4m3"],
     "which this model's blocks do not have"),
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

# every copy of the model kernels the CPU runs (x86-64-v4, x86-64-v3,
# baseline) rounds exactly alike (head size 32: the Llama's rotation takes
# its vector path too); QP_MODEL_ISA caps the level, and names no other
p3, c = train("det_isa", ["--steps", "10", "--recipe", "bf16", "--dim", "64"])
check(p3.returncode == 0, "isa run")
with h5py.File(c, "r") as fc:
    best = fc.attrs["model_kernels"]
    best_loss = fc["train/loss"][:]
levels = ["baseline", "x86-64-v3", "x86-64-v4"]
check(best in levels, f"model_kernels attribute {best}")
for cap in levels[:levels.index(best)]:
    out = os.path.join(tmp, f"det_isa_{cap}.h5")
    p4 = run(TINY + ["--out", out, "--steps", "10", "--recipe", "bf16", "--dim", "64"], env={"QP_MODEL_ISA": cap})
    check(p4.returncode == 0, f"QP_MODEL_ISA={cap} run")
    with h5py.File(out, "r") as fd:
        got = fd.attrs["model_kernels"]
        check(levels.index(got) <= levels.index(cap), f"QP_MODEL_ISA={cap} honoured (ran {got})")
        check(np.array_equal(best_loss.view(np.uint64), fd["train/loss"][:].view(np.uint64)),
              f"{best} and {got} kernels give bit-identical losses")
bad = run(TINY + ["--out", os.path.join(tmp, "det_isa_bad.h5"), "--steps", "2"], env={"QP_MODEL_ISA": "avx9000"})
check(bad.returncode == 2 and "QP_MODEL_ISA=avx9000" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1,
      f"an unknown QP_MODEL_ISA is a one-line error, exit 2 (rc {bad.returncode}: {bad.stderr.strip()[-200:]})")

# QP_GEMM chooses the kernel of BF16 products (auto: by the CPU's features,
# train/precision/qp_gemm.h): recorded in gemm_bf16; forcing the kernel auto chose
# gives the same bits; the other kernel still trains; any other value is a
# one-line error, exit 2
gemm_runs = {}
for kernel in ["auto", "bf16", "f32"]:
    out = os.path.join(tmp, f"gemm_{kernel}.h5")
    pk = run(TINY + ["--out", out, "--steps", "6", "--recipe", "bf16", "--dim", "64"], env={"QP_GEMM": kernel})
    check(pk.returncode == 0, f"QP_GEMM={kernel} run: {pk.stderr.strip()[-200:]}")
    with h5py.File(out, "r") as fk:
        gemm_runs[kernel] = (fk.attrs["gemm_bf16"], fk["train/loss"][:])
check(gemm_runs["f32"][0] == "fp32-forced", f"QP_GEMM=f32 recorded as {gemm_runs['f32'][0]}")
check(gemm_runs["bf16"][0] in ("onednn-bf16", "fp32-fallback"), f"QP_GEMM=bf16 recorded as {gemm_runs['bf16'][0]}")
chosen = gemm_runs["auto"][0]
check(chosen in ("onednn-bf16", "fp32-chosen", "fp32-fallback"), f"QP_GEMM=auto recorded as {chosen}")
twin = "bf16" if chosen == "onednn-bf16" else "f32"
check(np.array_equal(gemm_runs["auto"][1].view(np.uint64), gemm_runs[twin][1].view(np.uint64)),
      f"auto ({chosen}) gives the losses of QP_GEMM={twin}")
check(all(np.isfinite(v[1]).all() for v in gemm_runs.values()), "every kernel's losses are finite")
bad = run(TINY + ["--out", os.path.join(tmp, "gemm_bad.h5"), "--steps", "2"], env={"QP_GEMM": "fp32"})
check(bad.returncode == 2 and "QP_GEMM=fp32" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1,
      f"an unknown QP_GEMM is a one-line error, exit 2 (rc {bad.returncode}: {bad.stderr.strip()[-200:]})")

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

# --requantize: the backward quantizes X and W again instead of reusing the
# forward's copies (bf16 reuses both, fp8 both under delayed scaling, nvfp4 its
# 16x16 W): the same bits, with the choice recorded
for recipe in ["bf16", "fp8", "nvfp4"]:
    p, out = train("requant_" + recipe, ["--steps", "6", "--recipe", recipe, "--qerr-every", "3", "--requantize"])
    check(p.returncode == 0, f"--requantize {recipe}: {p.stderr}")
    kept = runs.get(recipe) or train("kept_" + recipe, ["--steps", "6", "--recipe", recipe, "--qerr-every", "3"])[1]
    with h5py.File(out, "r") as fr, h5py.File(kept, "r") as fk:
        check(fr.attrs["requantize"] == "1" and fk.attrs["requantize"] == "0", f"{recipe}: requantize attribute")
        same = all(np.array_equal(fr[k][:], fk[k][:]) for k in ("train/loss", "train/grad_norm", "eval/val_loss"))
        qr, qk = fr["quant/error"][:], fk["quant/error"][:]
        check(same and len(qr) > 0 and qr.tobytes() == qk.tobytes(),
              f"{recipe}: --requantize gives the same losses, grad norms, validation losses and qerr rows")

# ... and without the copies a run holds less memory: a 6-layer 256-wide GPT at
# B8 T128 keeps 6 x 2.6M BF16 values (31.5 MB) of X and W for the backward
# (measured: 25-33 MB less peak RSS, runs differing by up to 6 MB). Where the
# producers quantize X (QP_PRODUCER_ROUNDING, on CPUs whose BF16 products run
# in FP32) there is no copy of most X to free, and what --requantize saved
# was 14.5-18.5 MiB against this bound: the producers are off here, so the
# copies this measures are there on every CPU (54-56 MiB saved on the Xeon).
if ARCH == "gpt":
    def peak_rss_kib(extra):
        args = [QTRAIN, "--data", data, "--layers", "6", "--heads", "4", "--dim", "256", "--seq", "128",
                "--batch", "8", "--steps", "2", "--threads", "2", "--quiet", "--eval-every", "0",
                "--qerr-every", "0", "--ckpt-every", "0", "--recipe", "bf16",
                "--out", os.path.join(tmp, "rss.h5")] + extra
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=dict(os.environ, QP_PRODUCER_ROUNDING="off"))
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        return proc.returncode, usage.ru_maxrss
    rc_k, kept_kib = peak_rss_kib([])
    rc_r, requant_kib = peak_rss_kib(["--requantize"])
    check(rc_k == 0 and rc_r == 0 and kept_kib - requant_kib > 15 * 1024,
          f"--requantize lowers peak RSS by the copies (> 15 MiB of 31.5 MB): {kept_kib} -> {requant_kib} KiB")

# Producer rounding (train/precision/qp_linear.h, qp_linear_takes_rounded): where the
# GEMM multiplies quantized values in FP32 (QP_GEMM=f32), the bf16 recipe's
# GEMM inputs (and the fp8 recipe's, at their delayed scales) are quantized
# by the kernels that write them, except on steps that record quantization
# errors (--qerr-every 3: steps 0 and 3 take the dispatch's pass).
# QP_PRODUCER_ROUNDING=off quantizes them all in the dispatch: every dataset
# but the timings bit for bit, with an Inf weight (step 4) making the
# quantized operands count non-finite values into /events/recalib.
TIMING = ("_ms", "tokens_per_s")


def same_run_files(a, b):
    """The datasets of a that differ from b's (timings aside), and how many were compared."""
    diff, n = [], 0
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        def visit(name, obj):
            nonlocal n
            if not isinstance(obj, h5py.Dataset) or name.endswith(TIMING):
                return
            n += 1
            x, y = obj[()], fb[name][()] if name in fb else None
            if y is None or not (x.tobytes() == y.tobytes() if hasattr(x, "tobytes") else x == y):
                diff.append(name)
        fa.visititems(visit)
    return diff, n


INF_AT_4 = ["--inject", "inf:param:ln2w[3]@4", "--on-divergence", "skip-step"]
for recipe, extra, what in [("bf16", [], "bf16"), ("fp8", [], "fp8"), ("bf16", INF_AT_4, "bf16, an Inf weight at step 4"),
                            ("fp8", INF_AT_4, "fp8, an Inf weight at step 4")]:
    outs = {}
    for mode in ("on", "off"):
        outs[mode] = os.path.join(tmp, f"produce_{recipe}_{mode}_{len(extra)}.h5")
        p = run(TINY + ["--out", outs[mode], "--steps", "7", "--recipe", recipe, "--qerr-every", "3",
                        "--ckpt-every", "0"] + extra, env={"QP_GEMM": "f32", "QP_PRODUCER_ROUNDING": mode})
        outs[mode + "_rc"] = p.returncode
        outs[mode + "_err"] = p.stderr
    # the weight stays Inf: the run stops (nonfinite_weights), exit 3, after the forward counted it
    want_rc = 3 if extra else 0
    check(outs["on_rc"] == want_rc and outs["off_rc"] == want_rc,
          f"{what}: exits {outs['on_rc']}, {outs['off_rc']} (want {want_rc}): {outs['on_err'][-300:]}")
    diff, n = same_run_files(outs["on"], outs["off"])
    check(n > 10 and not diff, f"{what}: producer rounding on and off give the same {n} datasets ({diff})")
    if extra:
        with h5py.File(outs["on"], "r") as f:
            ev = f["events/recalib"][:]
            check(b"nonfinite" in set(ev["kind"]) and b"x" in set(ev["operand"]),
                  f"{what}: the rounded X counts its Inf ({set(ev['kind'])}, {set(ev['operand'])})")
bad = run(TINY + ["--out", os.path.join(tmp, "produce_bad.h5"), "--steps", "2"], env={"QP_PRODUCER_ROUNDING": "1"})
check(bad.returncode == 2 and "QP_PRODUCER_ROUNDING=1" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1,
      f"QP_PRODUCER_ROUNDING other than on/off is a one-line error, exit 2 (rc {bad.returncode}: {bad.stderr[-200:]})")

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

# ---- the recipe language: --explain, recipe_plan, a preset and its spelling ------
def explain(recipe, layers="2"):
    e = run(["--recipe", recipe, "--layers", layers, "--explain"] + ARCH_ARGS)
    check(e.returncode == 0 and e.stderr == "", f"--explain {recipe}: exit {e.returncode} {e.stderr}")
    return [l for l in e.stdout.splitlines() if not l.startswith("#")]


rules = explain("nvfp4")
check(rules == ["L0.fprop.x=nvfp4:current", "L0.fprop.w=nvfp4-2d:current", "L0.dgrad.dy=nvfp4:current:sr",
                "L0.dgrad.w=nvfp4-2d:current", "L0.wgrad.dy=nvfp4:current:sr:rht=16",
                "L0.wgrad.x=nvfp4:current:rht=16", "L1.fprop.x=bf16", "L1.fprop.w=bf16", "L1.dgrad.dy=bf16",
                "L1.dgrad.w=bf16", "L1.wgrad.dy=bf16", "L1.wgrad.x=bf16"], f"nvfp4 on 2 blocks expands to {rules}")
# Transformer Engine's recipe classes with their defaults (docs/recipes.md cites each one's source)
TE_PRESETS = {
    "te-nvfp4": ["fprop.x=nvfp4:current", "fprop.w=nvfp4-2d:current", "dgrad.dy=nvfp4:current:sr",
                 "dgrad.w=nvfp4-2d:current", "wgrad.dy=nvfp4:current:sr:rht=te", "wgrad.x=nvfp4:current:rht=te"],
    "te-nvfp4-4o6": ["fprop.x=nvfp4-4o6-te:current", "fprop.w=nvfp4-4o6-te-2d:current",
                     "dgrad.dy=nvfp4-4o6-te:current:sr", "dgrad.w=nvfp4-4o6-te-2d:current",
                     "wgrad.dy=nvfp4-4o6-te:current:sr", "wgrad.x=nvfp4-4o6-te:current"],
    "te-fp8-block": ["fprop.x=fp8-block-pow2", "fprop.w=fp8-block-2d-pow2", "dgrad.dy=fp8-block-pow2",
                     "dgrad.w=fp8-block-2d-pow2", "wgrad.dy=fp8-block-pow2", "wgrad.x=fp8-block-pow2"],
    "te-mxfp8": [f"{p}={'mxfp8-rceil'}" for p in ("fprop.x", "fprop.w", "dgrad.dy", "dgrad.w", "wgrad.dy", "wgrad.x")],
    "te-fp8-current": ["fprop.x=fp8-e4m3:current", "fprop.w=fp8-e4m3:current", "dgrad.dy=fp8-e5m2:current",
                       "dgrad.w=fp8-e4m3:current", "wgrad.dy=fp8-e5m2:current", "wgrad.x=fp8-e4m3:current"],
    "te-fp8-delayed": [f"{p}={f}:delayed:hist=1024:amax=max" for p, f in
                       (("fprop.x", "fp8-e4m3"), ("fprop.w", "fp8-e4m3"), ("dgrad.dy", "fp8-e5m2"),
                        ("dgrad.w", "fp8-e4m3"), ("wgrad.dy", "fp8-e5m2"), ("wgrad.x", "fp8-e4m3"))],
}
for preset, want in TE_PRESETS.items():
    rules = explain(preset)
    check(rules == ["L0-1." + w for w in want], f"{preset} on 2 blocks (every block quantized) expands to {rules}")
for args, fragment in [(["--recipe", "nvfp4,L5=bf16", "--explain"], "blocks 0..3"),
                       (["--recipe", "nvfp4,x=nvfp5", "--explain"], "unknown format 'nvfp5'"),
                       (["--recipe", "nvfp4", "--layers", "0", "--explain"], "--layers")]:
    p = run(args)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == 2 and len(lines) == 1 and lines[0].startswith("qtrain: ") and fragment in lines[0] and
          p.stdout == "", f"{args}: exit {p.returncode}, stderr {p.stderr!r}")
# A preset and its explicit spelling (the expansion joined by ','), in the
# same run of this test: bit-identical losses, errors and events, and the
# same canonical recipe_plan in both run files (te-nvfp4: TE's fixed-sign
# wgrad RHT, rht=te).
for preset in ["nvfp4", "fp8", "te-nvfp4"]:
    rules = explain(preset)
    common = ["--steps", "8", "--qerr-every", "2"]
    pa, a = train("preset_" + preset, common + ["--recipe", preset])
    pb, b = train("spelled_" + preset, common + ["--recipe", ",".join(rules)])
    check(pa.returncode == 0 and pb.returncode == 0, f"{preset} / spelled out: {pa.stderr} {pb.stderr}")
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        for k in ["train/loss", "train/grad_norm", "eval/val_loss", "quant/error", "events/recalib"]:
            check(fa[k][:].tobytes() == fb[k][:].tobytes(), f"{preset} and its spelling differ in {k}")
        plan = "\n".join(rules) + "\n"
        check(fa.attrs["recipe_plan"] == plan and fb.attrs["recipe_plan"] == plan,
              f"{preset}: recipe_plan {fa.attrs['recipe_plan']!r}")
        check(fb.attrs["recipe"] == ",".join(rules), "the run file keeps the recipe as given")
        if preset == "te-nvfp4":
            # every use is NVFP4: a /quant/block_scales row beside each /quant/error row,
            # its /quant/block_scale_hist bins summing to its blocks
            qe, bs, bh = fa["quant/error"][:], fa["quant/block_scales"][:], fa["quant/block_scale_hist"][:]
            key = lambda r: (int(r["step"]), int(r["layer"]), bytes(r["gemm"]), bytes(r["operand"]), bytes(r["pass"]))
            check(len(bs) > 0 and sorted(map(key, bs)) == sorted(map(key, qe)),
                  f"te-nvfp4: {len(bs)} block-scale rows for {len(qe)} qerr rows")
            sums = {}
            for h in bh:
                check(h["count"] > 0 and 0 <= h["bin"] < 279, f"histogram row {h}")
                sums[key(h)] = sums.get(key(h), 0) + int(h["count"])
            check(all(sums.get(key(r)) == int(r["n_blocks"]) for r in bs),
                  "te-nvfp4: each use's histogram counts sum to its n_blocks")
            check(all(r["format"] in (b"nvfp4", b"nvfp4-2d") for r in bs), f"formats {set(bs['format'])}")
            check(np.all(np.isfinite(bs["block_scale_log2_std"])) and np.all(bs["block_scale_log2_std"] >= 0),
                  "te-nvfp4: block_scale_log2_std finite")
            check(fa["quant/block_scales"][:].tobytes() == fb["quant/block_scales"][:].tobytes() and
                  bh.tobytes() == fb["quant/block_scale_hist"][:].tobytes(),
                  "te-nvfp4 and its spelling: identical block-scale statistics")
# the architecture's own GEMMs: --explain names them, a rule on its last MLP GEMM
# (fcproj / down) quantizes that GEMM alone, the other architecture's are refused
ORDERED = {"gpt": "qkv, attproj, fc, fcproj", "llama": "qkv, attproj, gate, up, down"}[ARCH]
MLP_LAST = {"gpt": "fcproj", "llama": "down"}[ARCH]
e = run(["--recipe", "fp8", "--layers", "2", "--explain"] + ARCH_ARGS)
check(e.returncode == 0 and f"for 2 blocks of --arch {ARCH} (GEMMs {ORDERED})" in e.stdout, f"--explain: {e.stdout}")
rules = explain(f"bf16,{MLP_LAST}=fp8-e4m3:current")
others = "+".join(g for g in ORDERED.split(", ") if g != MLP_LAST)
check(f"L0-1.{others}.fprop.x=bf16" in rules and f"L0-1.{MLP_LAST}.fprop.x=fp8-e4m3:current" in rules,
      f"{MLP_LAST}=fp8 on 2 blocks expands to {rules}")
p, out = train("mlp_last_" + MLP_LAST, ["--steps", "2", "--qerr-every", "1", "--recipe",
                                        f"bf16,{MLP_LAST}=fp8-e4m3:current"])
check(p.returncode == 0, f"{MLP_LAST}=fp8: {p.stderr}")
if p.returncode == 0:
    with h5py.File(out, "r") as f:
        q = f["quant/error"][:]
        fp8 = q["gemm"] == MLP_LAST.encode()
        check(set(q["gemm"]) == GEMMS and np.all(q["rel_l2"][fp8] > 1e-3) and np.all(q["rel_l2"][~fp8] < 1e-2) and
              np.all(q["sat_frac"][~fp8] == 0) and f.attrs["recipe_plan"] == "\n".join(rules) + "\n",
              f"{MLP_LAST}=fp8: only {MLP_LAST} carries E4M3's error")
if ARCH == "llama":
    # smooth-swiglu is a recipe modifier: the run file's recipe and recipe_plan carry it once; the down
    # GEMM's input (the scaled SwiGLU output) differs from plain fp8's, block 0's qkv input at step 0 does not
    # (later blocks see down's differently quantized output)
    runs = {}
    for tag, recipe in [("plain", "fp8"), ("smooth", "fp8,smooth-swiglu")]:
        p, out = train("smooth_" + tag, ["--steps", "2", "--qerr-every", "1", "--recipe", recipe])
        check(p.returncode == 0, f"{recipe}: {p.stderr}")
        if p.returncode == 0:
            with h5py.File(out, "r") as f:
                runs[tag] = (f["quant/error"][:], dict(f.attrs))
    if len(runs) == 2:
        (qa, aa), (qb, ab) = runs["plain"], runs["smooth"]
        check(ab["recipe_plan"] == aa["recipe_plan"] + "smooth-swiglu\n" and "smooth_swiglu" not in ab and
              "Smooth-SwiGLU" in ab["recipe_description"], f"smooth-swiglu in the run file: {ab['recipe_plan']!r}")
        pick = lambda q, g: q[(q["step"] == 0) & (q["layer"] == 0) & (q["gemm"] == g) & (q["operand"] == b"x") &
                              (q["pass"] == b"fprop")]
        check(np.array_equal(pick(qa, b"qkv")["amax"], pick(qb, b"qkv")["amax"]) and
              np.all(pick(qb, b"down")["amax"] >= 1) and np.all(pick(qb, b"down")["amax"] < 2) and
              np.all(pick(qa, b"down")["amax"] < 1), "smooth-swiglu scales the down GEMM's input only (amax in [1, 2))")
# per-use recipes train, and quantize where they say
p, out = train("fprop_only", ["--steps", "3", "--qerr-every", "1", "--recipe", "bf16,fprop=nvfp4"])
check(p.returncode == 0, f"bf16,fprop=nvfp4: {p.stderr}")
with h5py.File(out, "r") as f:
    q = f["quant/error"][:]
    check(np.all(q["rel_l2"][q["pass"] == b"fprop"] > 0.01) and np.all(q["rel_l2"][q["pass"] != b"fprop"] < 0.01),
          "bf16,fprop=nvfp4: only fprop has NVFP4's error")
for recipe in ["fp8-current,w=nvfp4,L1=bf16", "nvfp4,bf16-last=0,~L1=bf16", "bf16,wgrad=fp8-e4m3:delayed",
               "fp32,w=mxfp4"]:
    p, out = train("rules_" + str(abs(hash(recipe))), ["--steps", "3", "--recipe", recipe])
    ok = p.returncode == 0
    if ok:
        with h5py.File(out, "r") as f:
            ok = np.all(np.isfinite(f["train/loss"][:])) and len(f["train/loss"]) == 3
    check(ok, f"recipe {recipe}: {p.stderr}")
# the new formats from recipes, end to end (read back with h5py): DeepSeek-V3's
# FP8 blocks (K-chunked GEMMs; 128 wide so whole 128-chunks and 128x128 weight
# blocks occur), a 128-point wgrad RHT, TE's round-up MXFP8 scales
WIDE = list(TINY)
WIDE[WIDE.index("--dim") + 1] = "128"
new_fmt = {}
for tag, recipe in [("bf16", "bf16"), ("deepseek", "bf16,x+dy=fp8-block,w=fp8-block-2d"),
                    ("rht16", "nvfp4"), ("rht128", "nvfp4,wgrad:rht=128"),
                    ("mxfp8", "mxfp8"), ("rceil", "x+w+dy=mxfp8-rceil")]:
    out = os.path.join(tmp, "newfmt_" + tag + ".h5")
    p = run(WIDE + ["--out", out, "--steps", "3", "--qerr-every", "1", "--recipe", recipe])
    check(p.returncode == 0, f"recipe {recipe}: {p.stderr}")
    if p.returncode != 0:
        continue
    with h5py.File(out, "r") as f:
        new_fmt[tag] = (f["train/loss"][:], f["quant/error"][:], f.attrs["recipe_plan"])
        check(np.all(np.isfinite(new_fmt[tag][0])) and len(new_fmt[tag][0]) == 3, f"{recipe}: 3 finite losses")
if len(new_fmt) == 6:
    loss, q, plan = new_fmt["deepseek"]
    check("fprop.w=fp8-block-2d" in plan and "fprop.x=fp8-block\n" in plan and "wgrad.dy=fp8-block\n" in plan,
          f"DeepSeek-V3: recipe_plan {plan!r}")
    check(set(q["pass"]) == {b"fprop", b"dgrad", b"wgrad"} and np.all((q["rel_l2"] > 1e-3) & (q["rel_l2"] < 0.1)),
          "DeepSeek-V3: every use carries E4M3's error (1e-3 .. 0.1)")
    check(abs(loss[0] - new_fmt["bf16"][0][0]) < 0.02 * new_fmt["bf16"][0][0],
          f"DeepSeek-V3: first loss {loss[0]} within 2% of BF16's {new_fmt['bf16'][0][0]}")
    plan = new_fmt["rht128"][2]
    check("wgrad.x=nvfp4:current:rht=128" in plan and "rht=16" not in plan, f"rht=128: recipe_plan {plan!r}")
    q16, q128 = new_fmt["rht16"][1], new_fmt["rht128"][1]
    q16, q128 = q16[q16["step"] == 0], q128[q128["step"] == 0]  # the same weights and batch
    w16, w128 = q16["rel_l2"][q16["pass"] == b"wgrad"], q128["rel_l2"][q128["pass"] == b"wgrad"]
    f16, f128 = q16["rel_l2"][q16["pass"] != b"wgrad"], q128["rel_l2"][q128["pass"] != b"wgrad"]
    check(len(w16) == len(w128) > 0 and not np.array_equal(w16, w128) and np.array_equal(f16, f128),
          "rht=128 changes wgrad's operands and nothing else")
    qm, qr = new_fmt["mxfp8"][1], new_fmt["rceil"][1]
    check(len(qm) == len(qr) and not np.array_equal(qm["rel_l2"], qr["rel_l2"]) and
          np.all(np.abs(qr["rel_l2"] - qm["rel_l2"]) < 0.5 * qm["rel_l2"] + 1e-3),
          "mxfp8-rceil: MXFP8's error with other block scales")
# the 128-point RHT needs batch x seq a multiple of 128: 2 x 32 is refused
HALF = list(WIDE)
HALF[HALF.index("--batch") + 1] = "2"
p = run(HALF + ["--recipe", "nvfp4,wgrad:rht=128", "--out", os.path.join(tmp, "rht128_64.h5")])
check(p.returncode == 2 and "128-point" in p.stderr and "multiple of 128" in p.stderr and
      not os.path.exists(os.path.join(tmp, "rht128_64.h5")), f"rht=128 over 64 tokens: exit {p.returncode} {p.stderr}")
# an RHT the model's shapes do not allow is bad input before anything runs
p = run(TINY[:2] + ["--dim", "24", "--heads", "2", "--recipe", "bf16,fprop=nvfp4:rht=16",
                    "--out", os.path.join(tmp, "rht24.h5")])
check(p.returncode == 2 and "multiple of 16" in p.stderr and not os.path.exists(os.path.join(tmp, "rht24.h5")),
      f"RHT over 24 columns: exit {p.returncode} {p.stderr}")

# ---- resume is bit-identical --------------------------------------------------
for recipe in ["bf16", "fp8", "nvfp4", "fp8,dy:hist=16:amax=most-recent"]:
    full = ["--steps", "12", "--ckpt-every", "4", "--recipe", recipe]
    tag = recipe.replace(",", "_").replace(":", "_").replace("=", "")
    p, ref = train("resume_ref_" + tag, full)
    p1, part = train("resume_" + tag, full + ["--stop-after", "7"])
    check(p.returncode == 0 and p1.returncode == 0, f"resume runs {recipe}: {p.stderr} {p1.stderr}")
    with h5py.File(part, "r") as f:
        check(len(f["train/loss"]) == 7, "interrupted run logged 7 steps")
    p2, part2 = train("resume_" + tag, full + ["--resume"])
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
# SIGINT and SIGTERM are blocked in every thread but one that waits for them in rt_sigtimedwait (sigwait;
# the kernel unblocks what it waits for while it waits): no handler ever interrupts a system call of the
# trainer, HDF5 or OpenMP (tools/qtrain.c)
threads = []
for task in os.listdir(f"/proc/{proc.pid}/task"):
    try:
        with open(f"/proc/{proc.pid}/task/{task}/status") as st:
            mask = int(next(l for l in st if l.startswith("SigBlk:")).split()[1], 16)
        with open(f"/proc/{proc.pid}/task/{task}/syscall") as sc:
            call = sc.read().split()[0]
        both = bool(mask & (1 << (signal.SIGINT - 1))) and bool(mask & (1 << (signal.SIGTERM - 1)))
        threads.append("blocked" if both else "waiting" if call == "128" else f"open (syscall {call})")
    except (FileNotFoundError, ProcessLookupError, StopIteration):
        pass  # a thread that ended meanwhile
check(len(threads) >= 3 and threads.count("waiting") == 1 and threads.count("blocked") == len(threads) - 1,
      f"SIGINT/SIGTERM blocked in every thread but the one waiting for them: {threads}")
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
