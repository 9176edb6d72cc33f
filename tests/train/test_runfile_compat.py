#!/usr/bin/python3
"""test_runfile_compat.py — the run file's schema (train/runfile/qp_runschema.h)
against its documentation and against run files of other schema versions.

  test_runfile_compat.py PART RUNSCHEMA_MD QTRAIN QPLOT QSWEEP SRCDIR WORKDIR

PART:
  docs     docs/runfile.md holds, under each "<!-- schema: PATH -->" marker,
           exactly the table runschema_md prints from the schema; and a run
           file qtrain writes now has exactly the documented datasets and
           columns with the documented types (h5py, an independent reader),
           plus root attribute runfile_schema, and every root attribute it
           wrote is named in the docs.
  fixture  tests/fixtures/runfile_schema1.h5.gz, a run file of schema
           version 1 (without the phase profile; the command that wrote it
           is below): qplot draws every figure kind from it, qsweep
           --summarize reads it (phase shares nan, the older columns right).
  newer    a file claiming a newer schema version: qplot, qsweep and
           qtrain --resume each refuse it with one line (exit 2 / failed).
  upgrade  a run file cut back to the version-1 layout (phase datasets,
           /quant/outliers and the attribute removed) continues under
           --resume: the phase series are added, NaN for the rows before,
           measured after, /quant/outliers is added with the resumed steps'
           rows, the version attribute becomes current, and the losses are
           bit-identical to an unbroken run's.

The fixture was made with (corpus: the first 200000 bytes of tinyshakespeare):
  qtrain --data corpus.txt --layers 2 --heads 2 --dim 32 --seq 16 --batch 4 --steps 12 --warmup 2
         --eval-every 6 --eval-batches 2 --qerr-every 6 --ckpt-every 0 --threads 1 --recipe fp8 --seed 5
         --quiet --out runfile_v1.h5
"""
import gzip
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks, read_csv  # noqa: E402

PART, MD, QTRAIN, QPLOT, QSWEEP, SRC, WORK = sys.argv[1:8]
FIXTURE = os.path.join(SRC, "tests", "fixtures", "runfile_schema1.h5.gz")
PHASES = ["gemm_ms", "quant_ms", "attn_ms", "rowops_ms", "optim_ms"]
check = Checks()


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 240), **kw)


def corpus(path):
    words = "the king and queen of a small town said that we shall go to see her father now".split()
    with open(path, "w") as f:
        f.write("\n".join(" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(9)) for i in range(3000)))


def tiny(data, out, steps, extra=()):
    return [QTRAIN, "--data", data, "--layers", "2", "--heads", "2", "--dim", "32", "--seq", "16", "--batch", "4",
            "--steps", str(steps), "--warmup", "2", "--eval-every", "4", "--eval-batches", "2", "--qerr-every", "4",
            "--threads", "1", "--recipe", "fp8", "--seed", "3", "--quiet", "--out", out] + list(extra)


def one_line(p, tool, fragment, what, code=2):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == code, f"{what}: exit {p.returncode}, want {code} ({p.stderr!r})")
    check(len(lines) == 1 and lines[0].startswith(tool + ": ") and fragment in lines[0],
          f"{what}: want one line '{tool}: ...{fragment}...', got {p.stderr!r}")


def doc_tables():
    """{path: (header+rows lines)} of docs/runfile.md's marked tables."""
    text = open(os.path.join(SRC, "docs", "runfile.md"), encoding="utf-8").read().splitlines()
    out = {}
    for i, line in enumerate(text):
        m = re.match(r"<!-- schema: (\S+) -->$", line)
        if m:
            rows = []
            for l in text[i + 1:]:
                if not l.startswith("|"):
                    break
                rows.append(l)
            out[m.group(1)] = rows
    return out


def cell_text(c):
    return c.strip().replace("\\|", "|")


def part_docs():
    p = run([MD])
    check(p.returncode == 0, f"runschema_md: {p.stderr}")
    want = {}
    for block in p.stdout.strip().split("\n\n"):
        lines = block.splitlines()
        want[re.match(r"<!-- schema: (\S+) -->", lines[0]).group(1)] = lines[1:]
    docs = doc_tables()
    check(sorted(docs) == sorted(want), f"docs/runfile.md marks {sorted(docs)}, the schema has {sorted(want)}")
    for path, rows in want.items():
        got = docs.get(path, [])
        check(got == rows, f"docs/runfile.md's table of {path} differs from the schema:\n" +
              "\n".join(f"  docs:   {a}\n  schema: {b}" for a, b in zip(got + [""] * len(rows), rows) if a != b))

    # a file written now against the documented tables (docs -> names and types)
    os.makedirs(WORK, exist_ok=True)
    data = os.path.join(WORK, "corpus.txt")
    corpus(data)
    out = os.path.join(WORK, "now.h5")
    p = run(tiny(data, out, 6))
    check(p.returncode == 0, f"qtrain: {p.stderr}")
    types = {"int64": ("i", 8), "uint64": ("u", 8), "float64": ("f", 8)}
    with h5py.File(out, "r") as f:
        check(f.attrs.get("runfile_schema") == "5", f"runfile_schema attribute: {f.attrs.get('runfile_schema')!r}")
        seen = set()
        f.visititems(lambda n, o: seen.add("/" + n) if isinstance(o, h5py.Dataset) else None)
        documented = set()
        for path, rows in docs.items():
            cols = [[cell_text(c) for c in r.strip("|").split(" | ")] for r in rows[2:]]
            table = rows[0].startswith("| column")
            if table:
                documented.add(path)
                dt = f[path].dtype
                check(list(dt.names) == [c[0].strip("`") for c in cols], f"{path}: columns {dt.names}")
                for c in cols:
                    name, typ = c[0].strip("`"), c[1].split(",")[0]
                    if name not in dt.names:
                        continue
                    t = dt[name]
                    ok = (t.kind == "S" and t.itemsize == int(typ[1:])) if typ.startswith("S") else \
                        (t.kind, t.itemsize) == types[typ]
                    check(ok, f"{path}/{name}: {t} is not the documented {typ}")
            else:
                for c in cols:
                    name, typ = path + "/" + c[0].strip("`"), c[1]
                    documented.add(name)
                    if check(name in seen, f"{name} documented but not written"):
                        d = f[name]
                        check((d.dtype.kind, d.dtype.itemsize) == types[typ] and d.ndim == 1 and
                              (d.shape[0] == 6 or path != "/train"),
                              f"{name}: {d.dtype} {d.shape}, documented {typ}")
        check(seen == documented, f"written but not documented: {sorted(seen - documented)}")
        # the root attributes (train/run/qp_train_attrs.c's table): each one named in the docs
        text = open(os.path.join(SRC, "docs", "runfile.md"), encoding="utf-8").read()
        undocumented = sorted(k for k in f.attrs if f"`{k}`" not in text)
        check(not undocumented and len(f.attrs) > 40, f"root attributes not in docs/runfile.md: {undocumented}")
        step_ms = f["train/step_ms"][:]
        total = sum(f["train/" + k][:] for k in PHASES + ["data_wait_ms", "comm_ms"])
        check(np.all(np.isfinite(total)) and np.all(total <= step_ms * 1.0001 + 1e-3),
              f"phases add up to at most step_ms: {total} vs {step_ms}")
        check(np.all(f["train/gemm_ms"][:] > 0) and np.all(f["train/quant_ms"][:] > 0),
              "a CPU fp8 run spends time in GEMMs and in quantization")


def unpack_fixture(dst):
    with gzip.open(FIXTURE, "rb") as fi, open(dst, "wb") as fo:
        shutil.copyfileobj(fi, fo)


def sweep_dir(d, run_path):
    runs = os.path.join(d, "runs")
    os.makedirs(runs)
    shutil.copy(run_path, os.path.join(runs, "recipe=fp8_seed=5.h5"))
    with open(os.path.join(d, "qsweep.ini"), "w") as f:
        f.write("[base]\ndata = corpus.txt\nlayers = 2\nheads = 2\ndim = 32\nseq = 16\nbatch = 4\nsteps = 12\n"
                "[grid]\nrecipe = fp8\nseed = 5\n[sweep]\nbaseline = fp8\n")
    return d


def part_fixture():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    old = os.path.join(WORK, "old.h5")
    unpack_fixture(old)
    with h5py.File(old, "r") as f:
        check("runfile_schema" not in f.attrs and "gemm_ms" not in f["train"], "the fixture is a version-1 file")
        step_ms, tok, wait = f["train/step_ms"][:], f["train/tokens_per_s"][:], f["train/data_wait_ms"][:]
        val = f["eval/val_loss"][-1]
    for kind in ("loss", "qerr", "events", "throughput"):  # gap needs two recipes
        fig = os.path.join(WORK, f"{kind}.png")
        p = run([QPLOT, kind, old, "-o", fig, "--keep-data"])
        check(p.returncode == 0 and os.path.getsize(fig) > 5000, f"qplot {kind} of the fixture: {p.stderr}")
    # the throughput breakdown of a run before the profile: data wait (an
    # older column) and the rest as "other"
    blocks = open(os.path.join(WORK, "throughput.dat")).read().strip().split("\n\n\n")
    rec = [l.split() for l in blocks[1].splitlines() if not l.startswith("#")]
    w = wait[1:].mean()
    check(len(rec) == 1 and all(float(x) == 0 for x in rec[0][2:7]) and abs(float(rec[0][7]) - w) < 1e-6 * w and
          float(rec[0][8]) == 0 and abs(float(rec[0][9]) - (step_ms[1:].mean() - w)) < 1e-6 * step_ms.mean(),
          f"throughput: a run before the profile is data wait and 'other': {rec}")
    d = sweep_dir(os.path.join(WORK, "sweep"), old)
    p = run([QSWEEP, "--summarize", d])
    check(p.returncode == 0, f"qsweep --summarize of the fixture: exit {p.returncode}: {p.stderr}")
    rows = read_csv(os.path.join(d, "summary.csv"))
    if check(len(rows) == 1, f"summary rows: {rows}"):
        r = rows[0]
        check(r["status"] == "done" and int(r["steps"]) == 12, f"status/steps: {r['status']} {r['steps']}")
        check(abs(float(r["final_val_loss"]) - val) < 1e-9 * abs(val), "final_val_loss")
        check(abs(float(r["tokens_per_s_median"]) - np.median(tok)) < 1e-6 * np.median(tok), "tokens/s median")
        check(abs(float(r["data_wait_share"]) - wait.sum() / step_ms.sum()) < 1e-9, "data_wait_share")
        check(abs(float(r["step_ms_median"]) - np.median(step_ms)) < 1e-6 * np.median(step_ms), "step_ms_median")
        check(r["threads_median"] == "nan", f"threads_median of a version-1 file: {r['threads_median']}")
        check(all(r[k] == "nan" for k in ("gemm_share", "quant_share", "attn_share", "rowops_share", "optim_share")),
              f"no phase shares for a version-1 file: {r}")
        check(float(r["comm_share"]) == 0, "comm_share of one process (comm_ms is a version-1 column)")


def part_newer():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    f99 = os.path.join(WORK, "v99.h5")
    unpack_fixture(f99)
    with h5py.File(f99, "r+") as f:
        f.attrs.create("runfile_schema", "99", dtype=h5py.string_dtype())
    one_line(run([QPLOT, "loss", f99, "-o", os.path.join(WORK, "x.png")]), "qplot", "schema version 99 is newer",
             "qplot of a newer file")
    check(not os.path.exists(os.path.join(WORK, "x.png")), "qplot drew nothing")
    d = sweep_dir(os.path.join(WORK, "sweep"), f99)
    p = run([QSWEEP, "--summarize", d])
    rows = read_csv(os.path.join(d, "summary.csv")) if p.returncode in (0, 1) else []
    check(len(rows) == 1 and rows[0]["status"] == "unreadable" and "schema version 99 is newer" in rows[0]["message"],
          f"qsweep: a newer file is unreadable, with the reason: {p.returncode} {p.stderr} {rows}")
    # qtrain --resume of it (with a checkpoint of its own run, so only the version stops it)
    data = os.path.join(WORK, "corpus.txt")
    corpus(data)
    out = os.path.join(WORK, "r.h5")
    p = run(tiny(data, out, 8, ["--ckpt-every", "4", "--stop-after", "6"]))
    check(p.returncode == 0, f"qtrain to step 6: {p.stderr}")
    with h5py.File(out, "r+", libver="latest") as f:
        f.attrs.modify("runfile_schema", "99")
    p = run(tiny(data, out, 8, ["--resume"]))
    check(p.returncode != 0 and "schema version 99 is newer" in p.stderr, f"qtrain --resume of a newer file: {p.stderr}")
    with h5py.File(out, "r", libver="latest", swmr=True) as f:
        check(len(f["train/step"]) == 6, "the newer file was left as it was")


def part_upgrade():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    data = os.path.join(WORK, "corpus.txt")
    corpus(data)
    whole, cut = os.path.join(WORK, "whole.h5"), os.path.join(WORK, "cut.h5")
    p = run(tiny(data, whole, 8, ["--ckpt-every", "4"]))
    check(p.returncode == 0, f"unbroken run: {p.stderr}")
    p = run(tiny(data, cut, 8, ["--ckpt-every", "4", "--stop-after", "6"]))
    check(p.returncode == 0, f"run stopped at step 6: {p.stderr}")
    with h5py.File(cut, "r+", libver="latest") as f:  # what qtrain of schema version 1 wrote
        for k in PHASES:
            del f["train/" + k]
        del f["quant/outliers"]  # version 3's table
        del f["train/threads"]  # version 4's column
        del f["quant/block_scales"], f["quant/block_scale_hist"]  # version 5's tables
        del f.attrs["runfile_schema"]
    p = run(tiny(data, cut, 8, ["--resume"]))
    check(p.returncode == 0, f"--resume of a version-1 file: {p.stderr}")
    with h5py.File(cut, "r") as f, h5py.File(whole, "r") as w:
        check(f.attrs.get("runfile_schema") == "5", "upgraded to the current version")
        o, wo = f["quant/outliers"][:], w["quant/outliers"][:]
        check(len(o) > 0 and np.all(o["step"] >= 4) and np.array_equal(o, wo[wo["step"] >= 4]),
              f"/quant/outliers added: the resumed steps' rows, as the unbroken run's: {sorted(set(o['step']))}")
        check(np.array_equal(f["train/step"][:], np.arange(8)), f"steps {f['train/step'][:]}")
        check(np.array_equal(f["train/threads"][:], [0] * 4 + [1] * 4),
              f"/train/threads added: 0 for the rows before the checkpoint resumed (step 4), then the resumed "
              f"steps' count: {f['train/threads'][:]}")
        check(np.array_equal(f["train/loss"][:], w["train/loss"][:]), "losses bit-identical to the unbroken run")
        for k in PHASES:
            v = f["train/" + k][:]
            check(v.shape == (8,) and np.all(np.isnan(v[:4])) and np.all(np.isfinite(v[4:])),
                  f"{k}: NaN before the resume (checkpoint of step 4), measured after: {v}")
    p = run([QPLOT, "throughput", cut, "-o", os.path.join(WORK, "t.png")])
    check(p.returncode == 0, f"qplot of the upgraded file: {p.stderr}")
    # qsweep's thread count: the resumed steps' (the upgraded rows' 0 is no count; with it the median were 0.5)
    d = sweep_dir(os.path.join(WORK, "sweep"), cut)
    p = run([QSWEEP, "--summarize", d])
    rows = read_csv(os.path.join(d, "summary.csv")) if p.returncode == 0 else []
    check(len(rows) == 1 and rows[0]["threads_median"] == "1",
          f"qsweep threads_median of the upgraded file: {p.returncode} {p.stderr} {rows[:1]}")


{"docs": part_docs, "fixture": part_fixture, "newer": part_newer, "upgrade": part_upgrade}[PART]()
sys.exit(check.summary(f"test_runfile_compat {PART}"))
