#!/usr/bin/env python3
"""test_qplot.py — qplot end to end on real (tiny) qtrain run files.

    test_qplot.py PART QTRAIN QPLOT WORKDIR [PLOTS_DIR]

PART is one of
  runs      make the run files every other part uses (the ctest fixture):
            2 recipes (bf16, fp8) x 2 seeds, plus an empty run and one that
            logged no quantization error, on a generated corpus
  kinds     every figure kind in every format: valid files, nothing on
            stderr, the right runs and recipe colours in them, and the
            extracted numbers (--keep-data) against h5py's reading
  all       qplot all SWEEPDIR: every figure, checkpoints and an empty run
            skipped
  errors    bad input: exit 2, one line naming the problem, no figure
  gnuplot   a gnuplot warning or error, or no gnuplot, fails the figure
  follow    --follow on a file a running qtrain is writing: redraws, exit 0
            on SIGTERM and on SIGINT, no temporary left behind
Exit status 1 if any check failed."""
import csv
import os
import queue
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks  # noqa: E402

PART, QTRAIN, QPLOT, WORK = sys.argv[1], *map(os.path.abspath, sys.argv[2:5])
PLOTS_DIR = os.path.abspath(sys.argv[5]) if len(sys.argv) > 5 else ""
RUNS = os.path.join(WORK, "runs")  # the fixture's run files
check = Checks()

# Okabe-Ito colours qplot assigns to these recipes (plots/qp_style.c), as the
# SVG terminal writes them
RGB = {"bf16": "rgb(  0, 114, 178)", "fp8": "rgb(230, 159,   0)"}
KINDS = ["loss", "gap", "qerr", "events", "throughput", "recalib", "outliers"]
EXTS = ("png", "svg", "pdf")  # every figure is drawn in all three, with its data as FIG.csv
FOUR = [os.path.join(RUNS, f"{r}_s{s}.h5") for r in ("bf16", "fp8") for s in (1, 2)]


def qplot(args, env=None, timeout=120):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([QPLOT] + args, capture_output=True, text=True, env=e, timeout=timeout)


def tiny(out, recipe, seed, steps, extra=()):
    return [QTRAIN, "--data", os.path.join(WORK, "corpus.txt"), "--layers", "2", "--heads", "2", "--dim", "32",
            "--seq", "16", "--batch", "4", "--steps", str(steps), "--warmup", "5", "--eval-every", "10",
            "--eval-batches", "2", "--qerr-every", "10", "--threads", "1", "--recipe", recipe, "--seed", str(seed),
            "--quiet", "--out", out] + list(extra)


# ---- file formats --------------------------------------------------------------

def png_ok(path, min_w=700, min_h=500):
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != b"\x89PNG\r\n\x1a\n" or b[12:16] != b"IHDR" or len(b) < 5000:
        return False
    w, h = int.from_bytes(b[16:20], "big"), int.from_bytes(b[20:24], "big")
    return min_w <= w <= 4000 and min_h <= h <= 4000 and b.rstrip(b"\0")[-8:-4] == b"IEND"


def svg_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def dat_records(path):
    """(index, series, {column: value}) for every data row of a gnuplot data file, read by the
    convention plots/qp_fig.h documents (an independent reading of what qp_figcsv.c converts):
    blocks two blank lines apart, the first comment "# SERIES: col col" (parentheses group a
    name), fields split like a shell splits them (double quotes: one field)."""
    recs, block, blanks, header, names = [], -1, 2, None, None
    for line in open(path).read().splitlines():
        t = line.strip()
        if not t:
            blanks += 1
            continue
        if blanks >= 2:
            block, header, names = block + 1, None, None
        blanks = 0
        if t.startswith("#"):
            if header is None and names is None:
                header = t[1:].strip()
            continue
        fields = shlex.split(t)
        if names is None:
            series, _, cols = header.partition(": ") if header and ": " in header else ("", "", header or "")
            words, depth, cur = [], 0, ""
            for ch in cols + " ":
                if ch in " \t" and not depth:
                    if cur:
                        words.append(cur)
                    cur = ""
                    continue
                depth += (ch == "(") - (ch == ")" and depth > 0)
                cur += ch
            names = (series, words if len(words) == len(fields) else [f"col{k + 1}" for k in range(len(fields))])
        recs.append((block, names[0], dict(zip(names[1], fields))))
    return recs


def csv_records(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [(int(r["index"]), r["series"], {k: v for k, v in r.items() if k not in ("index", "series") and v != ""})
            for r in rows]


def svg_ok(path):
    s = svg_text(path)
    return (s.startswith("<?xml") or s.startswith("<svg")) and "</svg>" in s and len(s) > 2000


def pdf_ok(path):
    with open(path, "rb") as f:
        b = f.read()
    return b.startswith(b"%PDF-") and b"%%EOF" in b[-64:] and len(b) > 2000


VALID = {"png": png_ok, "svg": svg_ok, "pdf": pdf_ok}


def one_line_error(p, fragment, what):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == 2, f"{what}: exit {p.returncode}, want 2 (stderr {p.stderr!r})")
    check(len(lines) == 1 and lines[0].startswith("qplot: ") and fragment in lines[0],
          f"{what}: want one line with {fragment!r}, got {p.stderr!r}")
    check(p.stdout == "", f"{what}: printed on stdout: {p.stdout!r}")


# ---- parts -----------------------------------------------------------------------

def part_runs():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(RUNS)
    # a corpus that needs nothing from outside: words with sentence structure
    rng = random.Random(7)
    words = "the king and queen of a small town said that we shall go to see her father now".split()
    lines = []
    for _ in range(4000):
        n = rng.randint(4, 12)
        lines.append(" ".join(rng.choice(words) for _ in range(n)).capitalize() + rng.choice(".,;!?"))
    with open(os.path.join(WORK, "corpus.txt"), "w") as f:
        f.write("\n".join(lines))
    jobs = [tiny(p, r, s, 40) for p, (r, s) in zip(FOUR, [("bf16", 1), ("bf16", 2), ("fp8", 1), ("fp8", 2)])]
    jobs.append(tiny(os.path.join(WORK, "empty.h5"), "fp8", 1, 0))
    jobs.append(tiny(os.path.join(WORK, "noqerr.h5"), "fp8", 1, 5, ["--qerr-every", "0"]))
    for cmd in jobs:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr}")


def part_kinds():
    import h5py
    import numpy as np
    out = os.path.join(WORK, "kinds")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for kind in KINDS:
        for ext in EXTS:
            for e in EXTS + ("csv", "dat"):
                if os.path.exists(os.path.join(out, f"{kind}.{e}")):
                    os.remove(os.path.join(out, f"{kind}.{e}"))
            fig = os.path.join(out, f"{kind}.{ext}")
            p = qplot([kind] + FOUR + ["-o", fig, "--keep-data"])
            check(p.returncode == 0, f"{kind}.{ext}: exit {p.returncode}: {p.stderr}")
            # gnuplot's stderr is qplot's failure; on success nothing at all is said
            check(p.stderr == "" and p.stdout == "", f"{kind}.{ext}: said {p.stderr!r} {p.stdout!r}")
            for twin in EXTS:  # -o names one; the other two are drawn beside it
                t = os.path.join(out, f"{kind}.{twin}")
                check(os.path.exists(t) and VALID[twin](t), f"-o {kind}.{ext}: {kind}.{twin} is not a valid {twin} file")
            check(os.path.exists(os.path.join(out, f"{kind}.dat")), f"{kind}.{ext}: --keep-data kept no data")
            # the CSV twin holds exactly the numbers drawn: every row of the data file, named
            csvp = os.path.join(out, f"{kind}.csv")
            if check(os.path.exists(csvp), f"-o {kind}.{ext}: no {kind}.csv beside it"):
                a, b = csv_records(csvp), dat_records(os.path.join(out, f"{kind}.dat"))
                check(a == b and len(a) > 0, f"{kind}.csv: {len(a)} rows, the data file {len(b)}; equal: {a == b}")
                with open(csvp) as f:  # every column named by its data block's comment, none left generic
                    head = f.readline().strip().split(",")
                check(not [c for c in head if re.fullmatch(r"col\d+", c)], f"{kind}.csv: unnamed columns in {head}")
        check(not [f for f in os.listdir(out) if ".qplot-" in f], f"{kind}: a temporary figure was left behind")
    with open(os.path.join(out, "loss.csv")) as f:
        check(f.readline().strip() == "index,series,step,loss_mean,smoothed(EMA 0.9),ci95_lo,ci95_hi,val_loss_mean",
              "loss.csv: the header names the columns from the data file's comments")

    # what the figures show: the runs, their recipes' colours, labelled rows
    s = svg_text(os.path.join(out, "loss.svg"))
    check(RGB["bf16"] in s and RGB["fp8"] in s, "loss.svg: both recipes drawn in their fixed colours")
    check("bf16 (2 seeds)" in s and "fp8 (2 seeds)" in s and "validation" in s, "loss.svg: legend")
    check("nats/token" in s and "optimizer step" in s, "loss.svg: axis labels with units")
    s = svg_text(os.path.join(out, "gap.svg"))
    check(RGB["fp8"] in s and "fp8 (2 seeds)" in s and "loss gap to bf16 (%)" in s, "gap.svg: fp8 vs bf16")
    s = svg_text(os.path.join(out, "qerr.svg"))
    check("block 0" in s and "block 1" in s and ">qkv<" in s and "fprop x" in s and "wgrad dy" in s,
          "qerr.svg: labelled rows")
    s = svg_text(os.path.join(out, "events.svg"))
    check("fp8 s1:" in s and "scale change" in s, "events.svg: a panel per run, kinds in the key")
    s = svg_text(os.path.join(out, "throughput.svg"))
    check(RGB["fp8"] in s, "throughput.svg: bars in recipe colours")
    # a bar per run, a recipe's runs side by side under one label: x one apart within a recipe, more between
    xs = {}
    for r in csv_records(os.path.join(out, "throughput.csv")):
        if r[1] == "runs":
            xs.setdefault(r[2]["label"].split()[0], []).append(float(r[2]["x"]))
    check(sorted(xs) == ["bf16", "fp8"] and all(sorted(v) == [v[0], v[0] + 1] for v in xs.values()) and
          abs(min(xs["fp8"]) - max(xs["bf16"])) > 1.2, f"throughput.csv: runs grouped by recipe: {xs}")
    check(s.count(">bf16<") >= 2 and s.count(">fp8<") >= 2, "throughput.svg: each recipe labels its group of runs "
          "(top) and its stacked bar (bottom)")
    # the threads each run's steps ran on, from its /train/threads, printed above its bar
    runs_rows = [r[2] for r in csv_records(os.path.join(out, "throughput.csv")) if r[1] == "runs"]
    want_thr = []
    for path in FOUR:
        with h5py.File(path, "r", libver="latest", swmr=True) as f:
            t = f["train/threads"][:]
            want_thr.append((int(t.min()), int(t.max())))
    check(len(runs_rows) == len(FOUR) and
          sorted((int(r["threads_min"]), int(r["threads_max"])) for r in runs_rows) == sorted(want_thr) and
          all(lo >= 1 for lo, _ in want_thr), f"throughput.csv: threads per run as the run files say ({want_thr})")
    check("1 thread each" in s, "throughput.svg: the threads every run used, said once")
    s = svg_text(os.path.join(out, "recalib.svg"))
    check("bf16 (2 runs)" in s and "fp8 (2 runs)" in s and "block 0 qkv w" in s and "scale change" in s,
          "recalib.svg: recipes compared, sites named, a panel per kind")
    # recalib: the events per run of each recipe at each site, against h5py
    counts, nrun = {}, {}
    for path in FOUR:
        with h5py.File(path, "r", libver="latest", swmr=True) as f:
            rec = f.attrs["recipe"]
            nrun[rec] = nrun.get(rec, 0) + 1
            for e in f["events/recalib"][:]:
                key = (e["kind"].decode(), rec, f"block {e['layer']} {e['gemm'].decode()} {e['operand'].decode()}")
                counts[key] = counts.get(key, 0) + 1
    rows = csv_records(os.path.join(out, "recalib.csv"))
    got = {(r[1], r[2]["recipe"], r[2]["site"]): float(r[2]["per_run"]) for r in rows}
    check(all(abs(got.get(k, -1) - c / nrun[k[1]]) < 1e-9 for k, c in counts.items()) and counts,
          "recalib.csv: events per run = the run files' /events/recalib rows / the recipe's runs")
    check(all(v == 0 for k, v in got.items() if k not in counts), "recalib.csv: zero where no run has an event")
    check(any(k[1] == "bf16" for k in got), "recalib.csv: bf16 keeps its column without events")

    s = svg_text(os.path.join(out, "outliers.svg"))
    check(all(f"{r} s{k}" in s for r in ("bf16", "fp8") for k in (1, 2)) and "kurtosis" in s and "amax" in s and
          "top-k energy share" in s and "fcproj" in s and "block 1" in s, "outliers.svg: a column per run, rows, key")
    # outliers: per (run, block, GEMM) and step, the largest amax and the mean kurtosis and share of the step's rows
    rows = csv_records(os.path.join(out, "outliers.csv"))
    want = {}
    for i, path in enumerate(FOUR):
        with h5py.File(path, "r", libver="latest", swmr=True) as f:
            o = f["quant/outliers"][:]
        for (layer, gemm) in sorted({(int(r["layer"]), r["gemm"].decode()) for r in o}):
            for st in sorted(set(o["step"])):
                sel = o[(o["layer"] == layer) & (o["gemm"] == gemm.encode()) & (o["step"] == st)]
                want[(i, layer, gemm, int(st))] = (sel["amax"].max(), sel["kurtosis"].mean(), sel["topk_frac"].mean())
    got = {}
    for idx, series, vals in rows:
        _, layer, gemm = series.split(" (")[0].split(" ")
        ns = len(rows) and max(r[0] for r in rows) // len(FOUR) + 1
        got[(idx // ns, int(layer), gemm, int(vals["step"]))] = (float(vals["amax"]), float(vals["kurtosis"]),
                                                                 float(vals["topk_frac"]))
    check(len(want) > 0 and set(got) == set(want) and
          all(np.allclose(got[k], want[k], rtol=1e-8) for k in want),
          f"outliers.csv: per step the max amax and mean kurtosis/share of /quant/outliers ({len(got)} vs {len(want)})")

    # bscales: two recipes with block scales (the fixture's bf16 and fp8 have none: one line, exit 2)
    p = qplot(["bscales"] + FOUR + ["-o", os.path.join(out, "none.png")])
    check(p.returncode == 2 and "no block-scale histogram rows" in p.stderr and len(p.stderr.splitlines()) == 1,
          f"bscales without block scales: exit {p.returncode}: {p.stderr!r}")
    bsruns = [os.path.join(out, f"bs_{r}.h5") for r in ("te-nvfp4", "mxfp8")]
    for path, recipe in zip(bsruns, ("te-nvfp4", "mxfp8")):
        p = subprocess.run(tiny(path, recipe, 1, 20), capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"{recipe} run: {p.stderr}")
    fig = os.path.join(out, "bscales.svg")
    p = qplot(["bscales"] + bsruns + ["-o", fig, "--keep-data"])
    check(p.returncode == 0 and p.stderr == "", f"bscales: exit {p.returncode}: {p.stderr}")
    check(all(VALID[e](os.path.join(out, f"bscales.{e}")) for e in EXTS), "bscales: valid png, svg, pdf")
    s = svg_text(fig)
    check("te-nvfp4" in s and "mxfp8" in s and "fc wgrad" in s and "qkv fprop" in s and "share of blocks" in s,
          "bscales.svg: a column per recipe, a row per GEMM and pass, the colour box")
    a, b = csv_records(os.path.join(out, "bscales.csv")), dat_records(os.path.join(out, "bscales.dat"))
    check(a == b and len(a) > 0, f"bscales.csv: {len(a)} rows, the data file {len(b)}")
    # per (run, GEMM, pass, step): the counts are the run file's blocks of those uses, the shares sum to 1
    got = {}
    for idx, series, vals in a:
        gemm, pas = series.split(" (")[0].split(" ")
        run = series.split(" (")[1].rstrip(")")
        k = (run, gemm, pas, int(float(vals["step"])))
        c, sh = got.get(k, (0, 0.0))
        got[k] = (c + int(vals["count"]), sh + float(vals["share"]))
    want = {}
    for path, recipe in zip(bsruns, ("te-nvfp4", "mxfp8")):
        with h5py.File(path, "r", libver="latest", swmr=True) as f:
            for r in f["quant/block_scales"][:]:
                k = (recipe, r["gemm"].decode(), r["pass"].decode(), int(r["step"]))
                want[k] = want.get(k, 0) + int(r["n_blocks"])
    check(len(want) > 0 and {k: v[0] for k, v in got.items()} == want,
          f"bscales.csv: per run, GEMM, pass and step the counts sum to the run file's n_blocks ({len(got)} vs {len(want)})")
    check(all(abs(v[1] - 1) < 1e-6 for v in got.values()), "bscales.csv: each step's shares sum to 1")

    # the numbers: extracted data against an independent reading (h5py)
    def blocks(path):
        text = open(path).read().strip("\n")
        return [[list(map(float, l.split())) for l in b.splitlines() if l and not l.startswith("#")]
                for b in re.split(r"\n\n\n", text)]

    def ema(x, a):
        m, out_ = 0.0, []
        for k, v in enumerate(x):
            m = a * m + (1 - a) * v
            out_.append(m / (1 - a ** (k + 1)))
        return np.array(out_)

    # loss.dat: a group per recipe (2 seeds each): the seeds' mean and its 95% t-band
    loss = blocks(os.path.join(out, "loss.dat"))
    check(len(loss) == 4, f"loss.dat: {len(loss)} blocks, want 4 (train + eval per recipe)")
    raws, evs = [], []
    for s_ in (1, 2):
        with h5py.File(os.path.join(RUNS, f"fp8_s{s_}.h5"), "r", libver="latest", swmr=True) as f:
            step, raws_ = f["train/step"][:], f["train/loss"][:]
            est, val = f["eval/step"][:], f["eval/val_loss"][:]
        raws.append(raws_)
        evs.append(val)
    raws = np.array(raws)
    sm = np.array([ema(r, 0.9) for r in raws])
    b = np.array(loss[2])
    tq = 12.706204736174698  # scipy.stats.t.ppf(0.975, 1)
    half = tq * sm.std(0, ddof=1) / np.sqrt(2)
    check(b.shape == (40, 5) and np.array_equal(b[:, 0], step), "loss.dat: fp8 steps")
    check(np.allclose(b[:, 1], raws.mean(0), rtol=1e-8), "loss.dat: raw mean = mean of /train/loss")
    check(np.allclose(b[:, 2], sm.mean(0), rtol=1e-8), "loss.dat: smoothed mean of bias-corrected EMA 0.9")
    check(np.allclose(b[:, 3], sm.mean(0) - half, rtol=1e-7, atol=1e-9) and
          np.allclose(b[:, 4], sm.mean(0) + half, rtol=1e-7, atol=1e-9), "loss.dat: 95% t-band over the 2 seeds")
    e = np.array(loss[3])
    check(len(est) > 0 and np.array_equal(e[:, 0], est) and np.allclose(e[:, 1], np.mean(evs, 0), rtol=1e-8),
          "loss.dat: validation points = mean of /eval")

    gap = blocks(os.path.join(out, "gap.dat"))
    check(len(gap) == 1, f"gap.dat: {len(gap)} blocks, want 1 (fp8)")
    g = []
    for s_ in (1, 2):
        with h5py.File(os.path.join(RUNS, f"fp8_s{s_}.h5"), "r") as fr, \
                h5py.File(os.path.join(RUNS, f"bf16_s{s_}.h5"), "r") as fb:
            lr, lb = ema(fr["train/loss"][:], 0.9), ema(fb["train/loss"][:], 0.9)
            g.append(100 * (lr - lb) / lb)
    g = np.array(g)
    d = np.array(gap[0])
    check(d.shape == (40, 5), f"gap.dat: shape {d.shape}")
    half = 12.706204736174698 * g.std(0, ddof=1) / np.sqrt(2)  # scipy.stats.t.ppf(0.975, 1)
    check(np.allclose(d[:, 1], g.mean(0), rtol=1e-6, atol=1e-9) and
          np.allclose(d[:, 2], g.mean(0) - half, rtol=1e-6, atol=1e-8) and
          np.allclose(d[:, 3], g.mean(0) + half, rtol=1e-6, atol=1e-8), "gap.dat: mean and 95% t-band of the % gap")

    # a run file caught mid-write: /train and /eval series one row apart
    ragged = os.path.join(out, "ragged.h5")
    shutil.copy(FOUR[0], ragged)
    with h5py.File(ragged, "r+") as f:
        f["train/loss"].resize((39,))
        f["eval/val_loss"].resize((len(f["eval/step"]) - 1,))
        neval = len(f["eval/val_loss"])
    p = qplot(["loss", ragged, "-o", os.path.join(out, "ragged.png"), "--keep-data"])
    check(p.returncode == 0 and p.stderr == "", f"ragged run file: {p.stderr}")
    rb = blocks(os.path.join(out, "ragged.dat"))
    check(len(rb[0]) == 39 and len(rb[1]) == neval, "ragged run file: the shortest series wins")

    # options: --smooth 0 plots the raw loss, --logx/--logy draw
    p = qplot(["loss", FOUR[0], "-o", os.path.join(out, "raw.png"), "--smooth", "0", "--keep-data", "--logx",
               "--logy"])
    check(p.returncode == 0 and p.stderr == "", f"--smooth 0 --logx --logy: {p.stderr}")
    r0 = np.array(blocks(os.path.join(out, "raw.dat"))[0])
    check(np.array_equal(r0[:, 1], r0[:, 2]), "--smooth 0: the smoothed column is the raw loss")


def part_all():
    sweep = os.path.join(WORK, "sweep")
    shutil.rmtree(sweep, ignore_errors=True)
    os.makedirs(os.path.join(sweep, "runs"))
    for f in os.listdir(RUNS):  # the four runs and their checkpoints
        shutil.copy(os.path.join(RUNS, f), os.path.join(sweep, "runs", f))
    shutil.copy(os.path.join(WORK, "empty.h5"), os.path.join(sweep, "runs", "started.h5"))
    p = qplot(["all", sweep])
    check(p.returncode == 0, f"all: exit {p.returncode}: {p.stderr}")
    lines = p.stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith("qplot: note:") and "started.h5" in lines[0],
          f"all: one note about the run without rows, got {p.stderr!r}")
    for kind in KINDS:
        for ext in EXTS:
            fig = os.path.join(sweep, "fig", f"{kind}.{ext}")
            check(os.path.exists(fig) and VALID[ext](fig), f"all: {kind}.{ext}")
    check(sorted(os.listdir(os.path.join(sweep, "fig"))) ==
          sorted(f"{k}.{e}" for k in KINDS for e in EXTS + ("csv",)),
          f"all: fig/ holds exactly every figure, its twins and CSVs: {os.listdir(os.path.join(sweep, 'fig'))}")
    # the qerr map shows a quantized run, not the baseline
    p = qplot(["all", sweep, "--keep-data"])
    check(p.returncode == 0, f"all --keep-data: {p.stderr}")
    with open(os.path.join(sweep, "fig", "qerr.dat")) as f:
        check("fp8_s1.h5" in f.readline(), "all: the qerr figure is of the first fp8 run")
    # a file in runs/ that is not a run: reported by name, the figures still drawn
    shutil.rmtree(os.path.join(sweep, "fig"))
    shutil.copy(os.path.join(WORK, "corpus.txt"), os.path.join(sweep, "runs", "junk.h5"))
    p = qplot(["all", sweep])
    errs = [l for l in p.stderr.splitlines() if not l.startswith("qplot: note:")]
    check(p.returncode == 2 and len(errs) == 1 and "junk.h5: not an HDF5 file" in errs[0],
          f"all with a bad run file: exit {p.returncode}, stderr {p.stderr!r}")
    check(all(VALID[e](os.path.join(sweep, "fig", f"{k}.{e}")) for k in KINDS for e in EXTS),
          "all with a bad run file: the other runs' figures are drawn")
    one_line_error(qplot(["all", os.path.join(WORK, "no-such-sweep")]), "no-such-sweep/runs", "all: no sweep")
    os.makedirs(os.path.join(WORK, "bare", "runs"), exist_ok=True)
    one_line_error(qplot(["all", os.path.join(WORK, "bare")]), "no run files", "all: no runs")


def part_errors():
    import h5py
    out = os.path.join(WORK, "errors")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    fig = os.path.join(out, "fig.png")
    plain = os.path.join(out, "plain.h5")
    with h5py.File(plain, "w") as f:
        f["x"] = [1.0, 2.0]
    notrain_group = os.path.join(out, "half.h5")  # /train without its series
    with h5py.File(notrain_group, "w") as f:
        f.create_group("train")
        f.attrs["recipe"] = "bf16"
    cases = [
        (["loss", os.path.join(out, "missing.h5"), "-o", fig], "missing.h5: No such file"),
        (["loss", os.path.join(WORK, "corpus.txt"), "-o", fig], "corpus.txt: not an HDF5 file"),
        (["loss", plain, "-o", fig], "plain.h5: not a qprec run file (no /train)"),
        (["loss", notrain_group, "-o", fig], "half.h5: not a qprec run file (no /train/step)"),
        (["loss", os.path.join(RUNS, "bf16_s1.ckpt.h5"), "-o", fig], "bf16_s1.ckpt.h5 is a qtrain checkpoint"),
        (["loss", os.path.join(WORK, "empty.h5"), "-o", fig], "empty.h5: empty run file (no /train rows)"),
        (["loss", FOUR[0], os.path.join(WORK, "empty.h5"), "-o", fig], "empty.h5: empty run file"),
        (["qerr", os.path.join(WORK, "noqerr.h5"), "-o", fig], "noqerr.h5: no /quant/error rows"),
        (["gap", FOUR[2], FOUR[3], "-o", fig], "no run with the baseline recipe 'bf16'"),
        (["gap", FOUR[0], FOUR[1], "-o", fig], "nothing to compare"),
        (["bogus", FOUR[0], "-o", fig], "unknown figure kind 'bogus'"),
        (["loss", FOUR[0], "-o", os.path.join(out, "fig.jpg")], "fig.jpg: unknown figure format '.jpg'"),
        (["loss", FOUR[0], "-o", os.path.join(out, "fig")], "no figure format extension"),
        (["loss", FOUR[0]], "no output file"),
        (["loss", "-o", fig], "no run files given"),
        (["loss", FOUR[0], "-o", fig, "--smooth", "1.5"], "--smooth"),
        (["loss", FOUR[0], "-o", fig, "--interval", "0"], "--interval"),
        (["loss", FOUR[0], "-o", fig, "--bogus"], "unknown option '--bogus'"),
        (["loss", FOUR[0], "-o", os.path.join(out, "nodir", "fig.png")], "cannot write there"),
        ([], "no figure kind given"),
    ]
    for args, fragment in cases:
        one_line_error(qplot(args), fragment, " ".join(a.replace(WORK, "W") for a in args) or "(no args)")
        check(not [f for f in os.listdir(out) if f.startswith("fig.")], f"{args}: a figure was written anyway")
    # a failed redraw leaves the last good figure as it was
    check(qplot(["loss", FOUR[0], "-o", fig]).returncode == 0, "good figure")
    before = open(fig, "rb").read()
    one_line_error(qplot(["loss", os.path.join(WORK, "empty.h5"), "-o", fig]), "empty run file", "redraw")
    check(open(fig, "rb").read() == before, "a failed redraw changed the existing figure")
    p = qplot(["--help"])
    check(p.returncode == 0 and "usage: qplot" in p.stdout, "--help")


def part_gnuplot():
    out = os.path.join(WORK, "gnuplot")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    fig = os.path.join(out, "loss.png")
    # the real scripts run clean
    p = qplot(["loss"] + FOUR + ["-o", fig])
    check(p.returncode == 0 and p.stderr == "", f"clean scripts: {p.stderr}")
    os.remove(fig)

    def with_script(edit, what, fragment):
        d = os.path.join(out, what)
        shutil.copytree(PLOTS_DIR, d)
        path = os.path.join(d, "loss.gp")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(edit(text))
        p = qplot(["loss"] + FOUR + ["-o", fig], env={"QP_PLOTS_DIR": d})
        one_line_error(p, fragment, what)
        check("gnuplot (loss.gp)" in p.stderr, f"{what}: the message names the script: {p.stderr!r}")
        check(not os.path.exists(fig) and not [f for f in os.listdir(out) if ".qplot-" in f],
              f"{what}: a figure or temporary was left")

    # gnuplot exits 0 after a warning: qplot must still fail
    with_script(lambda t: t.replace("plot for", "plot datafile index 999 using 1:2 notitle, for", 1),
                "warning", "warning: Skipping data file with no valid points")
    with_script(lambda t: t.replace("plot for", "plot fro", 1), "error", "loss.gp\" line")
    with_script(lambda t: t + '\nprint "chatter"\n', "print", "chatter")
    p = qplot(["loss", FOUR[0], "-o", fig], env={"QP_GNUPLOT": os.path.join(out, "no-gnuplot")})
    one_line_error(p, "cannot run", "no gnuplot")
    one_line_error(qplot(["loss", FOUR[0], "-o", fig], env={"QP_PLOTS_DIR": out}), "loss.gp", "no scripts")


def part_follow():
    out = os.path.join(WORK, "follow")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    scratch = os.path.join(out, "tmp")
    os.makedirs(scratch)
    live = os.path.join(out, "live.h5")
    # long enough to be still running when the test is done with it
    trainer = subprocess.Popen(tiny(live, "fp8", 3, 1000000, ["--qerr-every", "5", "--eval-every", "5"]),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    env = dict(os.environ, TMPDIR=scratch)
    # a sweep that is still running: the live run next to a finished one
    sweep = os.path.join(out, "sweep")
    os.makedirs(os.path.join(sweep, "runs"))
    os.symlink(live, os.path.join(sweep, "runs", "live.h5"))
    shutil.copy(FOUR[0], os.path.join(sweep, "runs"))
    followers = {}
    for kind, stop in (("loss", signal.SIGTERM), ("qerr", signal.SIGINT), ("events", signal.SIGTERM),
                       ("all", signal.SIGTERM)):
        fig = os.path.join(out, f"{kind}.png")
        args = ["all", sweep] if kind == "all" else [kind, live, "-o", fig]
        if kind == "all":
            fig = os.path.join(sweep, "fig", "loss.png")
        p = subprocess.Popen([QPLOT] + args + ["--follow", "--interval", "0.2"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        q = queue.Queue()
        threading.Thread(target=lambda s=p.stdout, q=q: [q.put(l) for l in s] and None, daemon=True).start()
        followers[kind] = (p, q, stop, fig)
    deadline = time.monotonic() + 150  # for all of them: ctest's TIMEOUT is 300
    try:
        for kind, (p, q, stop, fig) in followers.items():
            steps, seen = [], []
            # two redraws that saw different rows: the file grew between them
            while time.monotonic() < deadline and (len(steps) < 2 or steps[-1] == steps[0]):
                try:
                    line = q.get(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    break
                m = re.match(r"qplot: drew .*up to step (\d+), (\d+) still running", line)
                check(m is not None, f"follow {kind}: unexpected line {line!r}")
                seen.append(line)
                if m and m.group(2) == "1":  # (all: the live run may not have had a row at first)
                    steps.append(int(m.group(1)))
            check(len(steps) >= 2 and steps[-1] > steps[0],
                  f"follow {kind}: want two redraws of a growing run, got steps {steps} from {seen}")
            check(trainer.poll() is None, "qtrain was still writing during the redraws")
            p.send_signal(stop)
            try:
                rc = p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = "hung"
            check(rc == 0, f"follow {kind}: exit {rc} after {stop.name}, want 0")
            err = p.stderr.read()
            # the file may not have existed or held no row yet at the first look
            # (all: also that the gap figure has no bf16 partner for the live run)
            check(all(l.startswith("qplot: ") and ("live.h5" in l or kind == "all") for l in err.splitlines()),
                  f"follow {kind}: stderr {err!r}")
            check(png_ok(fig), f"follow {kind}: the figure is a valid PNG")
    finally:
        for p, *_ in followers.values():
            if p.poll() is None:
                p.kill()
        trainer.send_signal(signal.SIGTERM)
        try:
            trainer.wait(timeout=60)
        except subprocess.TimeoutExpired:
            trainer.kill()
    check(not os.listdir(scratch), f"follow: scratch directories left in TMPDIR: {os.listdir(scratch)}")
    check(not [f for f in os.listdir(out) if ".qplot-" in f], "follow: a temporary figure was left")


PARTS = {"runs": part_runs, "kinds": part_kinds, "all": part_all, "errors": part_errors,
         "gnuplot": part_gnuplot, "follow": part_follow}
if PART not in PARTS:
    sys.exit(f"unknown part {PART!r}")
PARTS[PART]()
sys.exit(check.summary(f"test_qplot {PART}"))
