#!/usr/bin/env python3
"""test_diskfull.py — a run whose checkpoint or run file cannot be written stops with one clear
line and a non-zero exit, and leaves the previous checkpoint and the log as they were; once there
is room again, --resume finishes it with the same weights as a run that never failed.

Cases (each: a 10-step run with a checkpoint, then a --resume that runs out of room):
  ckpt-ulimit   ulimit -f (set in the child; qtrain ignores SIGXFSZ) below the next checkpoint
  log-ulimit    ulimit -f a little above the run file, which grows every step (--qerr-every 1)
  ckpt-enospc   a 10 MiB tmpfs filled so the log fits but the next checkpoint does not (as root)
  log-enospc    the same tmpfs filled so even the run file has no room
  dev-full      the run file is a link to /dev/full
Checked each time: exit code, one stderr line with the reason ("File too large", "No space left
on device"), the previous checkpoint byte-identical and its CRCs good, no .tmp left, the run file
opens (h5py, swmr=True) with /train/step 0..n-1 and n >= the checkpoint's step, and the resumed run's
final checkpoint bit-identical to a reference."""
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

QTRAIN = sys.argv[1]
CORPUS = sys.argv[2] if len(sys.argv) > 2 else ""
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks, ckpt_ok, write_corpus  # noqa: E402

check = Checks()


tmp = tempfile.mkdtemp(prefix="qtrain_full_")
data = os.path.join(tmp, "corpus.txt")
write_corpus(data, CORPUS, 200000)

BASE = ["--data", data, "--layers", "2", "--heads", "4", "--dim", "64", "--seq", "32", "--batch", "4",
        "--threads", "1", "--quiet", "--warmup", "2", "--eval-every", "10", "--eval-batches", "2"]


def qtrain(out, extra, fsize=None):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return subprocess.run([QTRAIN] + BASE + ["--out", out] + extra, capture_output=True, text=True, timeout=300,
                          preexec_fn=limit if fsize else None)


def tensors(path):
    with h5py.File(path, "r") as f:
        out = {}
        f.visititems(lambda n, o: out.__setitem__(n, o[...].tobytes()) if isinstance(o, h5py.Dataset) else None)
        return out


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def log_rows(path):
    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        n = min(len(f["train/" + k]) for k in ("step", "loss", "lr", "grad_norm", "batch_hash"))
        return f["train/step"][:n], f["status"][:]


LONG = ["--steps", "120", "--qerr-every", "1", "--ckpt-every", "1000"]
SHORT = ["--steps", "20"]
refs = {}


def reference(extra):
    key = tuple(extra)
    if key not in refs:
        out = os.path.join(tmp, f"ref{len(refs)}", "run.h5")
        os.makedirs(os.path.dirname(out))
        p = qtrain(out, extra)
        check(p.returncode == 0, f"reference {extra}: {p.stderr}")
        refs[key] = tensors(out.replace(".h5", ".ckpt.h5"))
    return refs[key]


def case(name, folder, extra, want_frag, fsize=None, fill=None, unfill=None, rows=None):
    """A 10-step run, then `extra` resumed with no room: stop cleanly, keep everything."""
    out = os.path.join(folder, "run.h5")
    ck = out.replace(".h5", ".ckpt.h5")
    p = qtrain(out, extra + ["--ckpt-every", "10", "--stop-after", "10"])
    check(p.returncode == 0, f"{name}: first 10 steps: {p.stderr}")
    ck_sha, log_n = sha(ck), len(log_rows(out)[0])
    if fill:
        fill()
    p = qtrain(out, extra + ["--resume"], fsize)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == 1, f"{name}: exit {p.returncode}, want 1: {p.stderr}")
    check(len(lines) == 1 and all(w in lines[0] for w in want_frag), f"{name}: message {p.stderr!r}, want {want_frag}")
    check(sha(ck) == ck_sha and ckpt_ok(ck), f"{name}: the previous checkpoint changed or does not verify")
    check(not os.path.exists(ck + ".tmp"), f"{name}: a .tmp was left behind")
    steps, status = log_rows(out)
    check(np.array_equal(steps, np.arange(len(steps))) and len(steps) >= 10 and len(steps) >= log_n
          and (rows is None or len(steps) == rows),
          f"{name}: run file rows {steps}")
    if unfill:
        unfill()
    p = qtrain(out, extra + ["--resume"])
    check(p.returncode == 0, f"{name}: resumed with room again: exit {p.returncode}: {p.stderr}")
    check(tensors(ck) == reference(extra), f"{name}: final checkpoint differs from a run that never failed")
    steps, status = log_rows(out)
    n = int(extra[1])
    check(np.array_equal(steps, np.arange(n)) and status[-1]["state"] == b"done", f"{name}: final log {steps[-3:]} {status[-1]}")
    return 1


cases = 0
d = os.path.join(tmp, "ckpt_ulimit")
os.makedirs(d)
# the run file is ~0.35 MB and reserves ~1.9 MB ahead; the checkpoint needs ~2.8 MB
cases += case("ckpt-ulimit", d, SHORT, ["no room for a", "checkpoint", "File too large", "previous one is kept"],
              fsize=2 * 1024 * 1024 + 320 * 1024)
d = os.path.join(tmp, "log_ulimit")
os.makedirs(d)
cases += case("log-ulimit", d, LONG, ["run.h5: no room for the next rows", "File too large", "every row flushed before"],
              fsize=2 * 1024 * 1024 + 200 * 1024)

# ---- a real full disk: a small tmpfs (root only; skipped otherwise) ------------------------
mnt = os.path.join(tmp, "mnt")
os.makedirs(mnt)
mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=10m", "tmpfs", mnt], capture_output=True).returncode == 0
try:
    if mounted:
        filler = os.path.join(mnt, "filler")

        def fill_to(free_bytes):
            def f():
                st = os.statvfs(mnt)
                n = st.f_bavail * st.f_frsize - free_bytes
                with open(filler, "wb") as fh:
                    fh.write(b"\0" * max(n, 0))
            return f

        def unfill():
            os.unlink(filler)
        d = os.path.join(mnt, "c")
        os.makedirs(d)
        cases += case("ckpt-enospc", d, SHORT, ["no room for a", "No space left on device", "previous one is kept"],
                      fill=fill_to(2 * 1024 * 1024), unfill=unfill, rows=20)  # every row up to the checkpoint
        shutil.rmtree(d)
        d = os.path.join(mnt, "l")
        os.makedirs(d)
        cases += case("log-enospc", d, SHORT, ["run.h5: no room for the next rows", "No space left on device"],
                      fill=fill_to(512 * 1024), unfill=unfill, rows=10)  # refused at resume: nothing changed
    else:
        print("note: cannot mount a tmpfs here (not root?): the ENOSPC cases are skipped")
finally:
    if mounted:
        subprocess.run(["umount", mnt])

# ---- /dev/full as the run file -----------------------------------------------------------
d = os.path.join(tmp, "devfull")
os.makedirs(d)
os.symlink("/dev/full", os.path.join(d, "run.h5"))
p = qtrain(os.path.join(d, "run.h5"), ["--steps", "5"])
lines = [l for l in p.stderr.splitlines() if l.strip()]
check(p.returncode != 0 and len(lines) == 1 and "No space left on device" in lines[0], f"dev-full: {p.returncode} {p.stderr!r}")
check(os.path.islink(os.path.join(d, "run.h5")), "dev-full: the link was removed")
cases += 1

print(f"test_diskfull: {cases} cases{'' if mounted else ' (tmpfs cases skipped)'}, {check.passed} checks passed, {check.failed} failed")
if not check.failed:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if check.failed else 0)
