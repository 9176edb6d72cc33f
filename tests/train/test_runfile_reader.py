#!/usr/bin/python3
"""test_runfile_reader.py — the one run-file reader (train/runfile/qp_runfile.h)
against h5py, an independent reader of the same files.

  test_runfile_reader.py RUNFILE_DUMP QTRAIN SRCDIR WORKDIR

runfile_dump prints every column of every dataset of the schema as the
reader reads it by name (and checks that reading a column alone and in one
struct with its dataset's other columns agree). Here, for
  - a run file qtrain writes now (fp8, quantization errors and outliers
    logged, one injected NaN loss skipped, so /events/divergence has a row),
  - tests/fixtures/runfile_schema1.h5.gz, a run file of schema version 1,
every column the dump reports must be h5py's, row for row and bit for bit
(integers exactly, floats to the bit, NaN as NaN, strings byte for byte);
every dataset and column h5py finds under the documented paths must be in
the dump, and every column the dump calls absent must be absent from the
file (the version-1 file lacks the phase columns, /train/threads and
/quant/outliers). A checkpoint is told apart (exit 3) and a file that is
not a run file is one line (exit 2).
"""
import gzip
import math
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks  # noqa: E402

DUMP, QTRAIN, SRC, WORK = sys.argv[1:5]
check = Checks()

# where docs/runfile.md puts each dataset of the schema (the test's own
# statement of the layout, not read from the reader's table)
LAYOUT = {"train": "train", "eval": "eval", "quant_error": "quant/error", "events": "events/recalib",
          "divergence": "events/divergence", "status": "status", "quant_outliers": "quant/outliers",
          "block_scales": "quant/block_scales", "block_scale_hist": "quant/block_scale_hist"}
GROUPS = {"train", "eval"}


def dump(path):
    p = subprocess.run([DUMP, path], capture_output=True, text=True, timeout=120)
    return p


def parse(text):
    """{(set, column): [values]}, {(set, column) absent}, version"""
    cols, absent, version = {}, set(), None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        f = lines[i].split()
        if f[0] == "version":
            version = int(f[1])
            i += 1
        elif f[0] == "absent":
            absent.add((f[1], f[2]))
            i += 1
        elif f[0] == "column":
            n = int(f[3])
            cols[(f[1], f[2])] = lines[i + 1:i + 1 + n]
            i += 1 + n
        else:
            raise ValueError(f"runfile_dump: unexpected line {lines[i]!r}")
    return cols, absent, version


def same(text, v):
    """Is the dump's text for one value h5py's value v?"""
    if isinstance(v, bytes):
        return (b"" if text == "-" else bytes.fromhex(text)) == v.rstrip(b"\0")
    if isinstance(v, (float, np.floating)):
        x = float.fromhex(text)
        return (math.isnan(x) and math.isnan(v)) or (np.float64(x).tobytes() == np.float64(v).tobytes())
    return int(text) == int(v)


def column_of(f, name, col):
    """h5py's column: a group's 1-D series, a table's field; None when absent."""
    where = LAYOUT[name]
    if where not in f:
        return None
    if name in GROUPS:
        return f[where][col][()] if col in f[where] else None
    ds = f[where][()]
    return ds[col] if col in ds.dtype.names else None


def compare(path, what, want_absent=()):
    p = dump(path)
    if not check(p.returncode == 0, f"{what}: runfile_dump exit {p.returncode}: {p.stderr}"):
        return
    cols, absent, version = parse(p.stdout)
    with h5py.File(path, "r", swmr=True, locking=False) as f:
        attr = f.attrs.get("runfile_schema")
        want_version = int(attr.decode() if isinstance(attr, bytes) else attr) if attr is not None else 1
        check(version == want_version, f"{what}: schema version {version}, h5py says {want_version}")
        n_values = 0
        for (name, col), values in cols.items():
            ref = column_of(f, name, col)
            if not check(ref is not None, f"{what}: the reader read {name}.{col}, h5py finds none"):
                continue
            ref = ref.tolist()
            check(len(values) == len(ref), f"{what}: {name}.{col}: {len(values)} rows, h5py {len(ref)}")
            bad = [i for i, (t, v) in enumerate(zip(values, ref)) if not same(t, v)]
            check(not bad, f"{what}: {name}.{col} differs from h5py at rows {bad[:5]} "
                           f"({values[bad[0]] if bad else ''} vs {ref[bad[0]] if bad else ''})")
            n_values += len(values)
        for name, col in absent:
            check(column_of(f, name, col) is None, f"{what}: the reader calls {name}.{col} absent; h5py finds it")
        # every documented dataset's column h5py sees is in the dump
        for name, where in LAYOUT.items():
            if where not in f:
                continue
            seen = list(f[where].keys()) if name in GROUPS else list(f[where].dtype.names)
            for col in seen:
                check((name, col) in cols, f"{what}: h5py finds {name}.{col}, the reader did not read it")
        for name, col in want_absent:
            check((name, col) in absent, f"{what}: {name}.{col} should be absent from a version-{version} file")
    print(f"{what}: {len(cols)} columns, {n_values} values as h5py reads them; {len(absent)} absent")
    return cols


def corpus(path):
    words = "the king and queen of a small town said that we shall go to see her father now".split()
    with open(path, "w") as f:
        f.write("\n".join(" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(9)) for i in range(3000)))


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    data = os.path.join(WORK, "corpus.txt")
    corpus(data)
    run = os.path.join(WORK, "run.h5")
    p = subprocess.run([QTRAIN, "--data", data, "--layers", "2", "--heads", "2", "--dim", "32", "--seq", "16",
                        "--batch", "4", "--steps", "12", "--warmup", "2", "--eval-every", "4", "--eval-batches", "2",
                        "--qerr-every", "4", "--ckpt-every", "6", "--threads", "1", "--recipe", "fp8", "--seed", "3",
                        "--inject", "nan:loss@5", "--on-divergence", "skip-step", "--quiet", "--out", run],
                       capture_output=True, text=True, timeout=240)
    if not check(p.returncode == 0, f"qtrain: exit {p.returncode}: {p.stderr[-800:]}"):
        sys.exit(check.summary("runfile_reader"))
    cols = compare(run, "a run file of this qtrain") or {}
    for name in ("train", "eval", "quant_error", "quant_outliers", "divergence", "status"):
        check(any(k[0] == name and v for k, v in cols.items()), f"fresh run: {name} has rows to compare")

    v1 = os.path.join(WORK, "runfile_v1.h5")
    with gzip.open(os.path.join(SRC, "tests", "fixtures", "runfile_schema1.h5.gz"), "rb") as src, open(v1, "wb") as dst:
        shutil.copyfileobj(src, dst)
    compare(v1, "the schema-1 fixture", want_absent=[("train", "gemm_ms"), ("train", "threads"),
                                                      ("quant_outliers", "kurtosis")])

    p = dump(run[:-3] + ".ckpt.h5")
    check(p.returncode == 3 and p.stdout.strip() == "checkpoint", f"a checkpoint: exit {p.returncode}, {p.stdout!r}")
    other = os.path.join(WORK, "other.h5")
    with h5py.File(other, "w") as f:
        f["x"] = [1.0]
    p = dump(other)
    check(p.returncode == 2 and p.stderr == f"runfile_dump: {other}: not a qprec run file (no /train)\n",
          f"not a run file: exit {p.returncode}, {p.stderr!r}")
    sys.exit(check.summary("runfile_reader"))


main()
