#!/usr/bin/env python3
"""test_qtrain_mpi.py — data-parallel qtrain (mpirun -np 2) against one process,
read back with h5py: the same loss curve over 20 steps (1e-5 relative for fp32
and bf16, 1e-3 for fp8 and nvfp4; the GPT, and the Llama in fp32 and bf16
(5e-5) with grouped-query attention and in fp8 with Smooth-SwiGLU, whose channel scales
are the global batch's: rank 0 quantizes the same folded down-projection
weight as one process) and batch hashes, 2-rank checkpoints resuming on 2
ranks bit-identically (GPT nvfp4, Llama fp8), --grad-comm bf16|fp8 logging a
small non-zero error, a batch that does not divide exiting 2 with one line.
usage: test_qtrain_mpi.py QTRAIN CORPUS MPIRUN [MPIRUN FLAGS...]"""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

QTRAIN, CORPUS, MPIRUN, MPIFLAGS = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks, write_corpus  # noqa: E402

check = Checks()


def run(args, ranks):
    cmd = ([MPIRUN] + MPIFLAGS + ["-np", str(ranks)] if ranks else []) + [QTRAIN] + args
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


tmp = tempfile.mkdtemp(prefix="qtrain_mpi_")
data = os.path.join(tmp, "corpus.txt")
write_corpus(data, CORPUS, 200000)

SMALL = ["--data", data, "--layers", "2", "--heads", "4", "--dim", "64", "--seq", "32", "--batch", "8",
         "--steps", "20", "--warmup", "5", "--threads", "1", "--quiet", "--eval-every", "10", "--eval-batches", "2",
         "--qerr-every", "0"]


def train(name, extra, ranks):
    out = os.path.join(tmp, name + ".h5")
    p = run(SMALL + ["--out", out] + extra, ranks)
    check(p.returncode == 0, "%s (%s ranks): exit %d: %s" % (name, ranks or 1, p.returncode, p.stderr[-2000:]))
    return out


def col(path, name):
    with h5py.File(path, "r") as f:
        return f[name][:]


def attrs(path):
    with h5py.File(path, "r") as f:
        return {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f.attrs.items()}


# ---- the same loss curve as one process ----------------------------------
LLAMA_GQA = ["--arch", "llama", "--kv-heads", "2"]
LLAMA_SMOOTH = ["--arch", "llama", "--qerr-every", "10"]
for recipe, tol, arch, name in [("fp32", 1e-5, [], "fp32"), ("bf16", 1e-5, [], "bf16"), ("fp8", 1e-3, [], "fp8"),
                                ("nvfp4", 1e-3, [], "nvfp4"), ("fp32", 1e-5, LLAMA_GQA, "llama_fp32"),
                                # bf16 rounds the activations: the summed gradients' last-bit differences move a
                                # few across a rounding boundary (1e-5 seen at 20 steps; fp32 agrees to 5e-8)
                                ("bf16", 5e-5, LLAMA_GQA, "llama_bf16"),
                                ("fp8,smooth-swiglu", 1e-3, LLAMA_SMOOTH, "llama_fp8_smooth")]:
    one = train("one_" + name, ["--recipe", recipe] + arch, 0)
    two = train("two_" + name, ["--recipe", recipe] + arch, 2)
    if not (os.path.exists(one) and os.path.exists(two)):
        continue
    l1, l2 = col(one, "train/loss"), col(two, "train/loss")
    check(len(l1) == 20 and len(l2) == 20, "%s: 20 steps each (%d, %d)" % (recipe, len(l1), len(l2)))
    rel = float(np.max(np.abs(l1 - l2) / np.abs(l1))) if len(l1) == len(l2) else 1.0
    print("%-6s max relative loss difference, 1 vs 2 ranks: %.3g (tolerance %g)" % (recipe, rel, tol))
    check(rel <= tol, "%s: loss curves differ by %g relative" % (recipe, rel))
    check(np.array_equal(col(one, "train/batch_hash"), col(two, "train/batch_hash")), recipe + ": batch hashes")
    v1, v2 = col(one, "eval/val_loss"), col(two, "eval/val_loss")
    check(len(v1) == len(v2) and np.allclose(v1, v2, rtol=tol), "%s: val loss %s vs %s" % (recipe, v1, v2))
    a1, a2 = attrs(one), attrs(two)
    check(a1.get("world_size") == "1" and a2.get("world_size") == "2", recipe + ": world_size attribute")
    check(a2.get("grad_comm") == "fp32", recipe + ": grad_comm attribute")
    c1, c2 = col(one, "train/comm_ms"), col(two, "train/comm_ms")
    check(np.all(c1 == 0) and np.all(c2 > 0), recipe + ": comm_ms 0 in one process, > 0 on 2 ranks")
    check(np.all(np.isnan(col(two, "train/grad_comm_rel_err"))), recipe + ": grad_comm_rel_err NaN for fp32")
    if "smooth-swiglu" in recipe:
        # step 0's weights are equal: with the channel maxima reduced over the ranks, rank 0 folds the same
        # scales into the down projection's weight as one process does (bit for bit), not its own half's
        q1, q2 = col(one, "quant/error"), col(two, "quant/error")
        sel = lambda q: q[(q["step"] == 0) & (q["gemm"] == b"down") & (q["operand"] == b"w") & (q["pass"] == b"fprop")]
        w1, w2 = sel(q1), sel(q2)
        check(len(w1) == 2 and np.array_equal(w1["amax"], w2["amax"]) and np.array_equal(w1["rel_l2"], w2["rel_l2"]),
              "%s: the folded down weight at step 0 is one process's on rank 0: %s vs %s" % (name, w1["amax"], w2["amax"]))
# ---- 2-rank checkpoints resume on 2 ranks bit-identically -------------------
full = os.path.join(tmp, "two_nvfp4.h5")
part = os.path.join(tmp, "resumed.h5")
p = run(SMALL + ["--recipe", "nvfp4", "--out", part, "--ckpt-every", "5", "--stop-after", "10"], 2)
check(p.returncode == 0, "stop-after run: %d %s" % (p.returncode, p.stderr[-1000:]))
check(len(col(part, "train/loss")) == 10, "stopped after 10 steps")
p = run(SMALL + ["--recipe", "nvfp4", "--out", part, "--resume"], 2)
check(p.returncode == 0, "--resume on 2 ranks: %d %s" % (p.returncode, p.stderr[-1000:]))
if os.path.exists(full):
    lf, lp = col(full, "train/loss"), col(part, "train/loss")
    check(len(lp) == 20 and np.array_equal(lf, lp), "resumed losses bit-identical: %s vs %s" % (lf[-3:], lp[-3:]))
    ck_full, ck_part = full.replace(".h5", ".ckpt.h5"), part.replace(".h5", ".ckpt.h5")
    with h5py.File(ck_full, "r") as a, h5py.File(ck_part, "r") as b:
        names = []
        a["params"].visit(lambda n: names.append(n) if isinstance(a["params"][n], h5py.Dataset) else None)
        same = len(names) > 0 and all(np.array_equal(a["params"][n][...], b["params"][n][...]) for n in names)
        check(same, "final weights bit-identical after a 2-rank resume")
        check(int(a.attrs["step"]) == 20 and int(b.attrs["step"]) == 20, "both checkpoints at step 20")

# the Llama's 2-rank checkpoint (its tensors, its scaling states) resumes on 2 ranks bit-identically
full = os.path.join(tmp, "two_llama_fp8_smooth.h5")
part = os.path.join(tmp, "resumed_llama.h5")
p = run(SMALL + ["--recipe", "fp8,smooth-swiglu"] + LLAMA_SMOOTH + ["--out", part, "--ckpt-every", "5", "--stop-after",
                                                                  "10"], 2)
check(p.returncode == 0, "llama stop-after run: %d %s" % (p.returncode, p.stderr[-1000:]))
p = run(SMALL + ["--recipe", "fp8,smooth-swiglu"] + LLAMA_SMOOTH + ["--out", part, "--resume"], 2)
check(p.returncode == 0, "llama --resume on 2 ranks: %d %s" % (p.returncode, p.stderr[-1000:]))
if os.path.exists(full):
    lf, lp = col(full, "train/loss"), col(part, "train/loss")
    check(len(lp) == 20 and np.array_equal(lf, lp), "llama resumed losses bit-identical: %s vs %s" % (lf[-3:], lp[-3:]))

# ---- low-precision gradient exchange -----------------------------------------
ref = col(os.path.join(tmp, "two_fp32.h5"), "train/loss")
for comm, extra, hi in [("bf16", [], 0.01), ("fp8", [], 0.1), ("fp8", ["--grad-comm-ef"], 0.1)]:
    name = "comm_" + comm + ("_ef" if extra else "")
    out = train(name, ["--recipe", "fp32", "--grad-comm", comm] + extra, 2)
    if not os.path.exists(out):
        continue
    err = col(out, "train/grad_comm_rel_err")
    med = float(np.median(err))
    print("--grad-comm %s%s: median relative error of the exchanged gradient %.3g, final loss %.4f (fp32 %.4f)"
          % (comm, " (EF)" if extra else "", med, col(out, "train/loss")[-1], ref[-1]))
    check(np.all(np.isfinite(err)) and np.all(err > 0) and med < hi, "%s: rel err %s" % (name, err[:5]))
    a = attrs(out)
    check(a.get("grad_comm") == comm and a.get("grad_comm_ef") == ("1" if extra else "0"), name + ": attributes")
    loss = col(out, "train/loss")
    check(np.all(np.abs(loss - ref) / ref < 0.05), name + ": loss stays near the fp32 exchange's")

# ---- bad input: one line, exit 2 ---------------------------------------------
p = run(SMALL + ["--batch", "7", "--out", os.path.join(tmp, "bad.h5")], 2)
lines = [l for l in p.stderr.splitlines() if l.strip()]
check(p.returncode == 2, "--batch 7 on 2 ranks exits 2, not %d" % p.returncode)
check(len(lines) == 1 and "not divisible" in lines[0], "one line: %r" % p.stderr)

print("test_qtrain_mpi: %d passed, %d failed" % (check.passed, check.failed))
sys.exit(1 if check.failed else 0)
