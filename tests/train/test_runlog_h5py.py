#!/usr/bin/python3
"""test_runlog_h5py.py -- the run file as h5py sees it: written by
test_runlog_writer (train/runfile/qp_runlog), read while it is written, after the
writer is SIGKILLed, and after a resume.

  test_runlog_h5py.py WRITER WORKDIR [H5DUMP H5CLEAR]

Checks, against values recomputed here (expected_rows() mirrors the
writer's step_rows() formula for formula, so floats compare exactly):
  - a finished run: every dataset, table column and attribute, dtypes and
    the documented schema, read with a plain (non-SWMR) open; h5dump -H;
  - SWMR in lockstep: the writer stops after each flush until told to go
    on; each time, a reader that stayed open (swmr=True, refresh()) sees
    exactly the flushed rows, so the rows grow under its eyes;
  - SWMR free-running: the reader polls while the writer appends; whatever
    it sees is a correct prefix at least as long as the last flush reported;
  - SIGKILL mid-run: the file opens (swmr=True), holds every row up to the
    last reported flush, h5dump -H reads it; resume cuts it to a step and
    continues, and the result is what an unbroken run would have written.
    HDF5 1.10 tools (h5dump) and non-SWMR opens refuse a killed writer's
    file until its "open for writing" mark is cleared: the documented
    recipe, h5clear -s on a copy, is checked to make h5dump -H work.
No assertion depends on timing; waits are bounded only to avoid hangs.
Prints "N passed, M failed"; exit status 1 on any failure.
"""
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks  # noqa: E402

check = Checks()
WAIT_S = 60  # bound on any single wait; never an assertion

# /train's columns as docs/runfile.md documents them (its table is the
# schema's, test runlog_compat_docs), so the file is checked against the docs
def documented(path):
    import re
    lines = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "runfile.md"),
                 encoding="utf-8").read().splitlines()
    i = lines.index(f"<!-- schema: {path} -->")
    rows = []
    for l in lines[i + 3:]:
        if not l.startswith("|"):
            break
        rows.append(re.match(r"\| `([a-z_0-9]+)` \| ([a-z0-9]+)", l).groups())
    return rows


TRAIN_TYPES = dict(documented("/train"))
TRAIN = list(TRAIN_TYPES)
QERR = ["step", "layer", "gemm", "operand", "pass", "rel_l2", "snr_db", "sat_frac", "zero_frac", "amax", "scale"]
RECALIB = ["step", "layer", "gemm", "operand", "kind", "old_scale", "new_scale", "amax"]
DIVERGENCE = ["step", "loss", "reason", "action"]
STATUS = ["step", "state", "message"]
OUTLIERS = ["step", "layer", "gemm", "tokens", "channels", "amax", "kurtosis", "topk", "topk_frac", "top_channel",
            "chan_amax_ratio"]
INTS = ("step", "layer", "tokens", "channels", "topk", "top_channel")
ATTRS = {"model": "gpt-tiny", "recipe": "nvfp4/\u00b5batch", "seed": "1234", "empty": "", "runfile_schema": "5"}
GEMMS, OPERANDS, PASSES = ["fc", "attn_qkv", "fc"], ["x", "w", "dy"], ["fprop", "fprop", "dgrad"]


def expected_rows(steps):
    """Rows the writer appends for these steps (see test_runlog_writer.c)."""
    train = {k: [] for k in TRAIN}
    ev = {"step": [], "val_loss": []}
    qerr, recalib, div = [], [], []
    for s in steps:
        d = float(s)
        row = dict(step=s, loss=3.0 + 1.0 / d, lr=6e-4 * d / (d + 100.0), grad_norm=0.5 + d * 0.125,
                   step_ms=100.0 + float(s % 7), data_wait_ms=float(s % 3) * 0.25,
                   tokens_per_s=65536.0 / (0.1 + float(s % 7) * 0.001),
                   batch_hash=(s * 0x9E3779B97F4A7C15) % (1 << 64), comm_ms=float(s % 5) * 0.5,
                   power_w=250.0 + float(s % 11), energy_j=2.5 * d, gpu_util=float(s % 101),
                   grad_comm_rel_err=float(s % 4) * 0.001, gemm_ms=40.0 + float(s % 9),
                   quant_ms=10.0 + 0.5 * float(s % 4), attn_ms=20.0 + 0.25 * d, rowops_ms=5.0 + 1.0 / d,
                   optim_ms=2.0 + float(s % 2), threads=1 + s % 3)
        for k in TRAIN:
            train[k].append(row[k])
        if s % 5 == 0:
            ev["step"].append(s)
            ev["val_loss"].append(3.5 + 2.0 / d)
        if s % 2 == 0:
            for k in range(3):
                qerr.append((s, k, GEMMS[k], OPERANDS[k], PASSES[k], 0.01 * (k + 1) + d * 1e-6, 40.0 - k,
                             k * 0.001, 0.5 / (d + k), 448.0 - d, 1.0 / (k + 1)))
        if s % 7 == 0:
            recalib.append((s, s % 3, "fc", "w", "amax_history", 1.0 / d, 2.0 / d, d * 1.5))
        if s == 9:
            div.append((9, 3.0 + 1.0 / 9.0, "loss spike \u00d73 at step 9", "skip_step"))
    return train, ev, qerr, recalib, div


def table_rows(ds, cols, n=None):
    a = ds[:] if n is None else ds[:n]
    out = []
    for r in a:
        out.append(tuple(r[c].decode() if isinstance(r[c], bytes) else r[c].item() for c in cols))
    return out


def same_rows(got, want):
    """Rows equal, floats bit for bit (NaN never expected here)."""
    return len(got) == len(want) and all(g == w for g, w in zip(got, want))


def check_prefix(f, nsteps, what, refresh=False):
    """The first nsteps train rows, and every eval/table row they imply, are
    present and right; longer datasets are allowed (rows past the flush)."""
    steps = list(range(1, nsteps + 1))
    train, ev, qerr, recalib, div = expected_rows(steps)
    dsets = [f["train"][k] for k in TRAIN] + [f["eval/step"], f["eval/val_loss"], f["quant/error"],
                                              f["events/recalib"], f["events/divergence"], f["status"]]
    if refresh:
        for ds in dsets:
            ds.refresh()
    ok = True
    for k in TRAIN:
        ds = f["train"][k]
        ok &= check(len(ds) >= nsteps, f"{what}: /train/{k} has {len(ds)} rows, flushed {nsteps}")
        ok &= check(ds[:nsteps].tolist() == train[k], f"{what}: /train/{k} values of the first {nsteps} rows")
    ne = len(ev["step"])
    ok &= check(len(f["eval/step"]) >= ne and f["eval/step"][:ne].tolist() == ev["step"], f"{what}: /eval/step")
    ok &= check(f["eval/val_loss"][:ne].tolist() == ev["val_loss"], f"{what}: /eval/val_loss")
    for name, cols, want in (("quant/error", QERR, qerr), ("events/recalib", RECALIB, recalib),
                             ("events/divergence", DIVERGENCE, div)):
        ds = f[name]
        ok &= check(len(ds) >= len(want) and same_rows(table_rows(ds, cols, len(want)), want),
                    f"{what}: /{name} first {len(want)} rows")
    return ok


def check_schema(f):
    for k in TRAIN:
        want = {"int64": np.int64, "uint64": np.uint64, "float64": np.float64}[TRAIN_TYPES[k]]
        check(f["train"][k].dtype == want and f["train"][k].ndim == 1 and f["train"][k].maxshape == (None,),
              f"/train/{k}: dtype {f['train'][k].dtype}, maxshape {f['train'][k].maxshape}")
    check(f["eval/step"].dtype == np.int64 and f["eval/val_loss"].dtype == np.float64, "/eval dtypes")
    widths = {"gemm": 32, "operand": 16, "pass": 16, "kind": 32, "reason": 256, "action": 32, "state": 16,
              "message": 512}
    for name, cols in (("quant/error", QERR), ("events/recalib", RECALIB), ("events/divergence", DIVERGENCE),
                       ("status", STATUS), ("quant/outliers", OUTLIERS)):
        dt = f[name].dtype
        check(list(dt.names) == cols, f"/{name} columns {dt.names}")
        for c in cols:
            t = dt[c]
            if c in widths:
                check(t == np.dtype(f"S{widths[c]}"), f"/{name}.{c} is {t}, want S{widths[c]}")
            else:
                check(t == (np.int64 if c in INTS else np.float64), f"/{name}.{c} is {t}")
    got = {k: v for k, v in f.attrs.items()}
    check(got == ATTRS, f"root attributes {got}")
    check(all(isinstance(v, str) for v in got.values()), "root attributes are str")
    check(sorted(f.keys()) == ["eval", "events", "quant", "status", "train"], f"top level {sorted(f.keys())}")


class Writer:
    """The writer process with its stdout read by a thread, so the test can
    wait for a "flushed" line with a bound and never block forever."""

    def __init__(self, *args):
        self.p = subprocess.Popen([WRITER, *map(str, args)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.flushed = 0
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.p.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def next_line(self, timeout=WAIT_S):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return "timeout"
        if line and line.startswith("flushed "):
            self.flushed = int(line.split()[1])
        return line

    def go_on(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()

    def finish(self):
        try:
            rc = self.p.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        return rc, self.p.stderr.read()


def h5dump_ok(path, what):
    if not H5DUMP:
        return
    p = subprocess.run([H5DUMP, "-H", path], capture_output=True, text=True, timeout=WAIT_S)
    check(p.returncode == 0 and 'GROUP "train"' in p.stdout and 'DATASET "batch_hash"' in p.stdout,
          f"{what}: h5dump -H rc {p.returncode}: {p.stderr[:300]}")


def test_finished(work):
    path = os.path.join(work, "done.h5")
    w = Writer("create", path, 40, 1, 0)
    rc, err = w.finish()
    if not check(rc == 0, f"writer rc {rc}: {err}"):
        return
    with h5py.File(path, "r") as f:  # a closed run file opens without SWMR
        check_schema(f)
        check_prefix(f, 40, "finished run")
        check(all(len(f["train"][k]) == 40 for k in TRAIN), "finished run: exactly 40 train rows")
        _, ev, qerr, recalib, div = expected_rows(range(1, 41))
        check(len(f["eval/step"]) == len(ev["step"]) == 8, "8 eval rows")
        check(len(f["quant/error"]) == len(qerr) == 60 and len(f["events/recalib"]) == len(recalib) == 5,
              "table lengths")
        check(f["train/batch_hash"][39] == (40 * 0x9E3779B97F4A7C15) % (1 << 64) > (1 << 63),
              "batch_hash keeps all 64 unsigned bits")
        check(same_rows(table_rows(f["status"], STATUS), [(0, "running", "started"), (40, "done", "finished")]),
              f"status rows {table_rows(f['status'], STATUS)}")
    h5dump_ok(path, "finished run")


def test_swmr_lockstep(work):
    path = os.path.join(work, "lockstep.h5")
    w = Writer("create", path, 30, 4, -1)
    line = w.next_line()
    if not check(line == "flushed 4", f"first writer line {line!r}"):
        w.p.kill()
        w.finish()
        return
    seen = []
    # Opened once, while the writer holds the file; each refresh must show
    # exactly what was flushed (the writer is blocked, so nothing more).
    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        check(f.swmr_mode, "reader is in SWMR mode")
        check_schema(f)
        while line and line.startswith("flushed"):
            n = w.flushed
            check_prefix(f, n, f"lockstep at step {n}", refresh=True)
            check(all(len(f["train"][k]) == n for k in TRAIN), f"lockstep: exactly {n} train rows")
            st = table_rows(f["status"], STATUS)
            check(st[-1] == (0, "running", "started"), f"status while running: {st}")
            seen.append(len(f["train/step"]))
            w.go_on()
            line = w.next_line()
        check(line == "closed", f"writer's last line {line!r}")
        for ds in (f["train/step"], f["status"]):
            ds.refresh()
        check(len(f["train/step"]) == 30, "reader sees all 30 rows after the writer closed")
        check(table_rows(f["status"], STATUS)[-1] == (30, "done", "finished"), "reader sees the final status")
    rc, err = w.finish()
    check(rc == 0, f"lockstep writer rc {rc}: {err}")
    check(seen == [4, 8, 12, 16, 20, 24, 28, 30], f"rows grew with every flush: {seen}")


def test_swmr_free(work):
    path = os.path.join(work, "free.h5")
    w = Writer("create", path, 400, 3, 2)
    line = w.next_line()
    if not check(line and line.startswith("flushed"), f"first writer line {line!r}"):
        w.p.kill()
        w.finish()
        return
    polls = 0
    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        while True:
            while True:  # the latest flush reported before this read
                try:
                    line = w.lines.get_nowait()
                except queue.Empty:
                    break
                if line is None or line == "closed":
                    break
                w.flushed = int(line.split()[1])
            n = w.flushed
            ok = check_prefix(f, n, f"free-running poll {polls} (flushed {n})", refresh=True)
            polls += 1
            if not ok or line in (None, "closed") or polls > 100000:
                break
    rc, err = w.finish()
    check(rc == 0, f"free-running writer rc {rc}: {err}")
    check(polls >= 1, "reader polled")
    print(f"free-running SWMR: {polls} polls while the writer ran")


def test_kill_and_resume(work):
    path = os.path.join(work, "killed.h5")
    w = Writer("create", path, 10 ** 6, 4, 1)
    line = ""
    while w.flushed < 48:
        line = w.next_line()
        if line in ("timeout", None, "closed"):
            break
    if not check(w.flushed >= 48, f"writer reached step 48 (last line {line!r})"):
        w.p.kill()
        w.finish()
        return
    w.p.send_signal(signal.SIGKILL)
    rc, _ = w.finish()
    check(rc == -signal.SIGKILL, f"writer killed (rc {rc})")
    while (line := w.next_line(timeout=5)) not in (None, "timeout"):
        pass  # flush lines written before the kill
    n = w.flushed
    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        check_prefix(f, n, f"after SIGKILL (last flush at {n})")
        check(table_rows(f["status"], STATUS)[-1] == (0, "running", "started"), "killed run's status: running")
        have = min(len(f["train"][k]) for k in TRAIN)
    print(f"SIGKILL: last reported flush at step {n}; the file holds {have} train rows")
    if H5CLEAR:
        copy = os.path.join(work, "killed-copy.h5")
        shutil.copyfile(path, copy)
        p = subprocess.run([H5CLEAR, "-s", copy], capture_output=True, text=True, timeout=WAIT_S)
        check(p.returncode == 0, f"h5clear -s on a copy of the killed file: {p.stderr[:300]}")
        h5dump_ok(copy, "killed run after h5clear -s")

    k = n - 5  # a checkpoint before the last flush: later rows are dropped
    w = Writer("resume", path, k, k + 20, 1, 0)
    rc, err = w.finish()
    if not check(rc == 0, f"resume writer rc {rc}: {err}"):
        return
    with h5py.File(path, "r") as f:  # closed cleanly again: plain open works
        check_schema(f)
        check_prefix(f, k + 20, "resumed run")
        check(all(len(f["train"][kk]) == k + 20 for kk in TRAIN), "resumed run: exactly the steps 1..k+20")
        _, ev, qerr, recalib, div = expected_rows(range(1, k + 21))
        check(len(f["eval/step"]) == len(ev["step"]) and len(f["quant/error"]) == len(qerr) and
              len(f["events/recalib"]) == len(recalib) and len(f["events/divergence"]) == len(div) == 1,
              "resumed run: no duplicate or leftover rows in /eval and the tables")
        st = table_rows(f["status"], STATUS)
        check(same_rows(st, [(0, "running", "started"), (k, "running", f"resumed from step {k}"),
                             (k + 20, "done", "finished")]), f"resumed run status rows {st}")
    h5dump_ok(path, "resumed run")


def main():
    global WRITER, H5DUMP, H5CLEAR
    if len(sys.argv) not in (3, 5):
        print(__doc__, file=sys.stderr)
        return 2
    WRITER, work = sys.argv[1], sys.argv[2]
    H5DUMP, H5CLEAR = sys.argv[3:5] if len(sys.argv) == 5 else (None, None)
    os.makedirs(work, exist_ok=True)
    test_finished(work)
    test_swmr_lockstep(work)
    test_swmr_free(work)
    test_kill_and_resume(work)
    return check.summary("test_runlog_h5py")


if __name__ == "__main__":
    sys.exit(main())
