#!/usr/bin/env python3
"""test_kill.py — SIGKILL qtrain at random (seeded) moments, --resume after each, lose nothing.

One run (4 layers, 192 wide, fp8 with delayed scaling, a 22 MB checkpoint after every step,
so checkpoint writes are most of the wall time) is killed KILLS times: about half at a random
moment after its start (start-up, resume, steps, log flushes, checkpoint writes), the rest
a random moment shortly after a checkpoint's .tmp file appears (inside a checkpoint write).
The schedule is counted in steps, never in seconds: a kill comes after the segment's nth
fresh .tmp (n drawn from 0-2 or 1-3) plus a random fraction of one step, the step's wall time
measured live from the intervals between fresh .tmp files (at first, from the uninterrupted
reference run: t_ref / STEPS). So a segment advances at most ~3 steps on any machine, however
fast or slow, or loaded differently from the reference. After every kill:
  - the run file opens with h5py (swmr=True) and, after `h5clear -s` on a copy, with h5dump;
    /train/step is 0..n-1 with no gap, and n >= the checkpoint's step (the log is flushed
    before each checkpoint);
  - RUN.ckpt.h5, if present, is whole: its "complete" marker and every tensor's CRC-32 check
    (computed here with zlib, not by qtrain); if a kill fell between the two renames, .prev is;
  - three times, on a copy of the folder: a torn checkpoint (truncated) and a corrupt one
    (a byte of a tensor flipped) are refused by this checker and by qtrain, which resumes
    from .prev; with both bad, --resume refuses to start rather than start over.
Finally the killed-and-resumed run, once complete, has bit for bit the weights, Adam moments,
scaling states, losses, batch hashes, validation losses, quantization-error rows and recalib
events of an uninterrupted run.

usage: test_kill.py QTRAIN [CORPUS [ARCH]] — ARCH gpt (default) or llama."""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

QTRAIN = sys.argv[1]
CORPUS = sys.argv[2] if len(sys.argv) > 2 else ""
ARCH = sys.argv[3] if len(sys.argv) > 3 else "gpt"
MLP_W = {"gpt": "fcw", "llama": "gatew"}[ARCH]
KILLS = 24
STEPS = 64
SEED = 20261129
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks, ckpt_ok, write_corpus  # noqa: E402

check = Checks()


if not shutil.which("h5clear") or not shutil.which("h5dump"):
    print("SKIP: h5clear/h5dump not installed")
    sys.exit(77)
tmp = tempfile.mkdtemp(prefix="qtrain_kill_")
data = os.path.join(tmp, "corpus.txt")
write_corpus(data, CORPUS, 300000)

ARGS = ["--data", data, "--layers", "4", "--heads", "4", "--dim", "192", "--seq", "32", "--batch", "4",
        "--threads", "1", "--steps", str(STEPS), "--warmup", "4", "--eval-every", "8", "--eval-batches", "2",
        "--qerr-every", "5", "--ckpt-every", "1", "--recipe", "fp8", "--arch", ARCH]


def cmd(out, extra=()):
    return [QTRAIN] + ARGS + ["--out", out, "--resume"] + list(extra)


def ckpt_step(path):
    with h5py.File(path, "r") as f:
        return int(f.attrs["step"])


def everything(ckpt):
    with h5py.File(ckpt, "r") as f:
        out = {}
        f.visititems(lambda n, o: out.__setitem__(n, o[...]) if isinstance(o, h5py.Dataset) else None)
        out["@step"] = int(f.attrs["step"])
        return out


def log_tables(path):
    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        return {k: f[k][...] for k in ("train/step", "train/loss", "train/lr", "train/grad_norm", "train/batch_hash",
                                        "eval/step", "eval/val_loss", "quant/error", "events/recalib")}


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def check_log(run, ck_step, tag):
    """The run file after a kill: opens (h5py SWMR, and h5dump after h5clear -s), no gap."""
    if not os.path.exists(run):
        check(ck_step is None, f"{tag}: no run file but a checkpoint of step {ck_step}")
        return
    try:
        with h5py.File(run, "r", libver="latest", swmr=True) as f:
            n = min(len(f["train/" + k]) for k in ("step", "loss", "lr", "grad_norm", "step_ms", "data_wait_ms",
                                                   "tokens_per_s", "batch_hash"))
            steps = f["train/step"][:n]
    except Exception as e:  # a run file killed while being created holds nothing worth keeping
        check(ck_step is None, f"{tag}: run file does not open ({e}) but a checkpoint of step {ck_step} exists")
        return
    check(np.array_equal(steps, np.arange(n)), f"{tag}: /train/step is not 0..{n - 1}: {steps}")
    if ck_step is not None:
        check(n >= ck_step, f"{tag}: log has {n} rows, the checkpoint is of step {ck_step}")
    cp = os.path.join(tmp, "h5dump_copy.h5")
    shutil.copy(run, cp)
    subprocess.run(["h5clear", "-s", cp], capture_output=True)
    d = subprocess.run(["h5dump", cp], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    check(d.returncode == 0, f"{tag}: h5dump after h5clear -s: {d.stderr[-300:]}")


def corrupt_copies(run, tag):
    """Torn and corrupt checkpoints in a copy of the folder: detected, .prev used."""
    ck = run.replace(".h5", ".ckpt.h5")
    if not (os.path.exists(ck) and os.path.exists(ck + ".prev")):
        return 0
    prev_step = ckpt_step(ck + ".prev")
    n = 0
    for how in ("truncate", "flip", "both"):
        d = os.path.join(tmp, f"copy_{tag}_{how}")
        os.makedirs(d)
        for p in (run, ck, ck + ".prev"):
            shutil.copy(p, d)
        cr, cc = os.path.join(d, os.path.basename(run)), os.path.join(d, os.path.basename(ck))
        victims = [cc] + ([cc + ".prev"] if how == "both" else [])
        for v in victims:
            if how == "truncate" or v == cc + ".prev":
                with open(v, "r+b") as f:
                    f.truncate(os.path.getsize(v) // 2)
            else:
                with h5py.File(v, "r") as f:
                    off = f["params/" + MLP_W].id.get_offset() + 1234
                with open(v, "r+b") as f:
                    f.seek(off)
                    b = f.read(1)
                    f.seek(off)
                    f.write(bytes([b[0] ^ 0x40]))
        check(not ckpt_ok(cc), f"{tag}/{how}: the damaged checkpoint passes the CRC check")
        p = subprocess.run(cmd(cr, ["--stop-after", str(prev_step + 1)]), capture_output=True, text=True, timeout=120)
        if how == "both":
            check(p.returncode == 1 and "no checkpoint verifies" in p.stderr and p.stderr.count("\n") == 1,
                  f"{tag}/{how}: --resume with no whole checkpoint: exit {p.returncode}: {p.stderr!r}")
            with h5py.File(cr, "r", libver="latest", swmr=True) as f:
                check(len(f["train/step"]) >= prev_step, f"{tag}/{how}: the run file was cut back")
        else:
            check(p.returncode == 0 and f"resuming from {cc}.prev at step {prev_step}" in p.stderr,
                  f"{tag}/{how}: qtrain did not fall back to .prev: exit {p.returncode}: {p.stderr[-400:]}")
        n += 1
        shutil.rmtree(d)
    return n


# ---- the uninterrupted reference -----------------------------------------------------
t0 = time.time()
ref = os.path.join(tmp, "ref", "run.h5")
os.makedirs(os.path.dirname(ref))
p = subprocess.run(cmd(ref, ["--quiet"]), capture_output=True, text=True, timeout=600)
check(p.returncode == 0, f"reference run: {p.stderr}")
t_ref = time.time() - t0

# ---- the killed one --------------------------------------------------------------------
rnd = random.Random(SEED)
run = os.path.join(tmp, "killed", "run.h5")
os.makedirs(os.path.dirname(run))
ck = run.replace(".h5", ".ckpt.h5")
tmpf = ck + ".tmp"
kills = in_ckpt = torn_tmp = between = at_start = resumes = damaged = 0
segments = []
step_times = [t_ref / STEPS]  # an upper bound at first (start-up included); then measured live


def stat_or_none(path):
    """stat, or None when absent: in one call, since qtrain renames the .tmp at any moment."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def step_s():
    recent = sorted(step_times[-9:])
    return recent[len(recent) // 2]


def wait_fresh_tmp(proc, n, before):
    """Block until the nth .tmp that appears after `before` (0: return at once). A fresh
    .tmp is one that was absent at the previous poll or is another inode, or a rewrite of a
    torn .tmp left by the last kill (qtrain truncates it: same inode, new mtime); the
    intervals between fresh ones are the step's wall time (a checkpoint follows every step)."""
    seen, last_t, prev, stale = 0, None, before, before
    deadline = time.time() + 20 + 4 * t_ref  # a bound on the wait, not an assertion
    while seen < n and time.time() < deadline and proc.poll() is None:
        st = stat_or_none(tmpf)
        rewritten = stale is not None and st is not None and st.st_ino == stale.st_ino and \
            st.st_mtime_ns != stale.st_mtime_ns
        if st is None or rewritten:
            stale = None
        if st is not None and (prev is None or st.st_ino != prev.st_ino or rewritten):
            now = time.time()
            if last_t is not None:
                step_times.append(now - last_t)
            seen, last_t = seen + 1, now
        prev = st
        time.sleep(0.0005)


while True:
    mode = "ckpt" if kills < KILLS and rnd.random() < 0.5 else "time"
    # ckpt: within the first 40% of the step after the nth fresh .tmp, where the checkpoint
    # write (most of a step's wall time here) is under way; time: anywhere in the step after
    # the (n-1)th, start-up and resume included when n = 1
    nth = rnd.randint(1, 3)
    frac = rnd.random()
    before = stat_or_none(tmpf)
    had_ckpt = os.path.exists(ck) or os.path.exists(ck + ".prev")
    resumes += had_ckpt
    proc = subprocess.Popen(cmd(run, ["--quiet"]), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if kills >= KILLS:
        _, err = proc.communicate(timeout=600)
        check(proc.returncode == 0, f"final segment: exit {proc.returncode}: {err}")
        break
    wait_fresh_tmp(proc, nth if mode == "ckpt" else nth - 1, before)
    delay = frac * (0.4 if mode == "ckpt" else 1.0) * step_s()
    time.sleep(delay)
    if proc.poll() is not None:  # finished before the kill: the run is complete
        _, err = proc.communicate()
        check(proc.returncode == 0, f"segment ended on its own: exit {proc.returncode}: {err}")
        break
    proc.kill()
    proc.communicate()
    kills += 1
    st = stat_or_none(tmpf)
    fresh_tmp = st is not None and (before is None or (st.st_ino, st.st_mtime_ns) != (before.st_ino, before.st_mtime_ns))
    in_ckpt += fresh_tmp
    tag = f"kill {kills} ({mode} {nth}, +{delay * 1000:.0f} ms)"
    # the newest whole checkpoint
    ck_step = None
    if os.path.exists(ck):
        check(ckpt_ok(ck), f"{tag}: {ck} is not whole")
        ck_step = ckpt_step(ck)
    elif os.path.exists(ck + ".prev"):
        between += 1
        check(ckpt_ok(ck + ".prev"), f"{tag}: between renames and .prev is not whole")
        ck_step = ckpt_step(ck + ".prev")
    if ck_step is None or (segments and ck_step == segments[-1]):
        at_start += 1  # killed before this segment wrote a checkpoint
    segments.append(ck_step)
    torn_tmp += fresh_tmp and not ckpt_ok(tmpf)  # else killed between its close and its rename
    check_log(run, ck_step, tag)
    if kills in (6, 12, 18):
        damaged += corrupt_copies(run, f"k{kills}")

check(kills >= 20, f"only {kills} kills before the run completed")
check(in_ckpt >= 5, f"only {in_ckpt} kills inside a checkpoint write")

# ---- same result as the uninterrupted run, bit for bit ------------------------------
a, b = everything(ref.replace(".h5", ".ckpt.h5")), everything(ck)
check(a.keys() == b.keys(), "checkpoint tensors differ")
for k in a:
    check(bits_equal(a[k], b[k]), f"final checkpoint: {k} differs from the uninterrupted run")
la, lb = log_tables(ref), log_tables(run)
for k in la:
    check(bits_equal(la[k], lb[k]), f"run file: {k} differs from the uninterrupted run ({len(la[k])} vs {len(lb[k])} rows)")
with h5py.File(run, "r") as f:  # closed cleanly at the end: opens without SWMR and without h5clear
    st = f["status"][:]
    check(st[-1]["state"] == b"done", f"final status {st[-1]}")
check(np.array_equal(lb["train/step"], np.arange(STEPS)), "final /train/step is not 0..STEPS-1")

print(f"test_kill: {kills} SIGKILLs (seed {SEED}): {in_ckpt} inside a checkpoint write ({torn_tmp} leaving a torn .tmp), "
      f"{between} between its two renames, {at_start} before the segment wrote a new checkpoint; {resumes} resumes "
      f"from a checkpoint; "
      f"{damaged} damaged-checkpoint copies; reference {t_ref:.1f} s, a step {step_s() * 1000:.0f} ms; {check.passed} checks passed, {check.failed} failed")
shutil.rmtree(tmp, ignore_errors=True) if not check.failed else print("kept", tmp)
sys.exit(1 if check.failed else 0)
