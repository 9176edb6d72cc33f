#!/usr/bin/env python3
"""test_qtrain_mpi_cuda.py — data-parallel qtrain on GPUs (mpirun -np 2
qtrain --device cuda, NCCL all-reduce) against one GPU process: the same loss
curve over 20 steps (1e-5 relative for fp32, 1e-3 for fp8 and nvfp4), the same
batch hashes, comm_ms logged; --grad-comm bf16|fp8 (exchanged on the host)
with a small non-zero error; --inject of a NaN gradient stopping the run. SKIP (77) with fewer than two GPUs. Has not run
on a GPU machine yet.
usage: test_qtrain_mpi_cuda.py QTRAIN CORPUS MPIRUN [MPIRUN FLAGS...]"""
import os
import shutil
import subprocess
import sys
import tempfile

QTRAIN, CORPUS, MPIRUN, MPIFLAGS = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]


def gpus():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        p = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in p.stdout.splitlines() if line.startswith("GPU "))


n = gpus()
if n < 2:
    print("test_qtrain_mpi_cuda: %d GPU(s), needs 2: SKIP" % n)
    sys.exit(77)

import h5py  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks, write_corpus  # noqa: E402

check = Checks()
tmp = tempfile.mkdtemp(prefix="qtrain_mpi_cuda_")
data = write_corpus(os.path.join(tmp, "corpus.txt"), CORPUS, 200000)

SMALL = ["--device", "cuda", "--data", data, "--layers", "2", "--heads", "4", "--dim", "64", "--seq", "32",
         "--batch", "8", "--steps", "20", "--warmup", "5", "--threads", "1", "--quiet", "--eval-every", "10",
         "--eval-batches", "2", "--qerr-every", "0"]


def train(name, extra, ranks):
    out = os.path.join(tmp, name + ".h5")
    cmd = ([MPIRUN] + MPIFLAGS + ["-np", str(ranks)] if ranks else []) + [QTRAIN] + SMALL + ["--out", out] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=600)
    check(p.returncode == 0, "%s (%s ranks): exit %d: %s" % (name, ranks or 1, p.returncode, p.stderr[-2000:]))
    return out


def col(path, name):
    with h5py.File(path, "r") as f:
        return f[name][:]


for recipe, tol in [("fp32", 1e-5), ("fp8", 1e-3), ("nvfp4", 1e-3)]:
    one = train("one_" + recipe, ["--recipe", recipe], 0)
    two = train("two_" + recipe, ["--recipe", recipe], 2)
    if not (os.path.exists(one) and os.path.exists(two)):
        continue
    l1, l2 = col(one, "train/loss"), col(two, "train/loss")
    check(len(l1) == 20 and len(l2) == 20, "%s: 20 steps each (%d, %d)" % (recipe, len(l1), len(l2)))
    rel = float(np.max(np.abs(l1 - l2) / np.abs(l1))) if len(l1) == len(l2) else 1.0
    print("%-6s max relative loss difference, 1 vs 2 GPU ranks: %.3g (tolerance %g)" % (recipe, rel, tol))
    check(rel <= tol, "%s: loss curves differ by %g relative" % (recipe, rel))
    check(np.array_equal(col(one, "train/batch_hash"), col(two, "train/batch_hash")), recipe + ": batch hashes")
    cm = col(two, "train/comm_ms")
    check(np.all(np.isfinite(cm)) and np.all(cm > 0), "%s: comm_ms of the 2-rank run %s" % (recipe, cm))

# --grad-comm on the device: the gradients go to the host, are exchanged there, and come back
ref = os.path.join(tmp, "two_fp32.h5")
for comm, hi in [("bf16", 0.01), ("fp8", 0.1)]:
    out = train("comm_" + comm, ["--recipe", "fp32", "--grad-comm", comm], 2)
    if not (os.path.exists(out) and os.path.exists(ref)):
        continue
    err = col(out, "train/grad_comm_rel_err")
    check(np.all(np.isfinite(err)) and np.all(err > 0) and float(np.median(err)) < hi,
          "--grad-comm %s on GPUs: rel err %s" % (comm, err[:5]))
    check(np.all(np.abs(col(out, "train/loss") - col(ref, "train/loss")) / col(ref, "train/loss") < 0.05),
          "--grad-comm %s on GPUs: loss near the fp32 exchange's" % comm)

# --inject on two GPU ranks: a NaN gradient at step 3 stops the run (exit 3, one line)
p = subprocess.run([MPIRUN] + MPIFLAGS + ["-np", "2", QTRAIN] + SMALL +
                   ["--out", os.path.join(tmp, "inj.h5"), "--inject", "nan:grad:wte@3"], capture_output=True,
                   text=True, timeout=600)
check(p.returncode == 3 and "diverged at step 3" in p.stderr, "--inject on GPUs: exit %d %r" % (p.returncode,
                                                                                                p.stderr[-500:]))
sys.exit(check.summary("test_qtrain_mpi_cuda"))
