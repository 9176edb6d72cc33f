#!/usr/bin/env python3
"""test_sweep.py — qsweep end to end. One case per ctest entry:

    test_sweep.py CASE QSWEEP QTRAIN WORKDIR

Cases: parse (good files, a table of bad files: `file:line: message`, exit 2,
nothing runs), grid (count, names, product order), dryrun (exact qtrain
command lines), run (a real 2 recipes x 2 seeds sweep, -j 2: the summary
against numbers computed here with h5py from the run files; matched runs),
resume (SIGTERM to a running sweep, rerun), fail (a run qtrain refuses and a
diverging run inside a sweep), lock, summarize, slurm.

Run files are read with h5py (an independent reader); every summary number is
recomputed here with numpy from its definition in docs/qsweep.md."""
import csv
import fcntl
import math
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

CASE, QSWEEP, QTRAIN, WORK = sys.argv[1:5]
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what, flush=True)
    return cond


def qsweep(*args, **kw):
    return subprocess.run([QSWEEP, *args], capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)


def make_corpus(path):
    """A generated text corpus: byte tokens, enough for --seq 32 batches."""
    r = random.Random(7)
    words = ["the", "king", "queen", "of", "and", "to", "my", "lord", "thou", "art", "what", "is", "love",
             "night", "day", "sweet", "death", "crown"]
    lines = []
    n = 0
    while n < 120000:
        line = " ".join(r.choice(words) for _ in range(r.randint(4, 12))) + "\n"
        lines.append(line)
        n += len(line)
    with open(path, "w") as f:
        f.write("".join(lines))


# The tiny model every case trains: about 3 ms a step on one thread.
BASE = """[base]
data = corpus.txt
layers = 2
heads = 2
dim = 32
seq = 32
batch = 4
steps = {steps}
warmup = 5
lr = 5e-3
eval_every = 20
eval_batches = 2
qerr_every = 10
ckpt_every = {ckpt}
prefetch = 2
"""


def setup(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    make_corpus(os.path.join(d, "corpus.txt"))
    return d


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def dry_lines(stdout):
    """name -> argv from --dry-run output (the '#' line is a header)."""
    runs = []
    for line in stdout.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, cmd = line.split(": ", 1)
        runs.append((name, shlex.split(cmd)))
    return runs


def cores():
    return len(os.sched_getaffinity(0))


def open_run(path):
    # without HDF5's flock, as qsweep and qplot read: a reader holding it while qtrain creates or
    # resumes the file would fail that run (EAGAIN)
    return h5py.File(path, "r", libver="latest", swmr=True, locking=False)


TRAIN = ["step", "loss", "lr", "grad_norm", "step_ms", "data_wait_ms", "tokens_per_s", "batch_hash"]
KINDS = ["scale_change", "overflow", "underflow", "nonfinite"]


def expected(path, target):
    """The summary row of one run file, from the definitions in docs/qsweep.md."""
    with open_run(path) as f:
        n = min(len(f["train"][k]) for k in TRAIN)
        step = f["train/step"][:n]
        loss = f["train/loss"][:n]
        e = {"status": f["status"][-1]["state"].decode(), "steps": n,
             "final_train_loss": float(np.mean(loss[-10:])),
             "final_val_loss": float(f["eval/val_loss"][-1]) if len(f["eval/val_loss"]) else math.nan}
        run_mean = np.convolve(loss, np.ones(10) / 10.0, mode="valid")   # entry i: steps i..i+9
        hit = np.nonzero(run_mean <= target)[0]
        e["steps_to_target"] = int(step[hit[0] + 9]) if len(hit) else -1
        ev = f["events/recalib"][:]
        for k in KINDS:
            e["ev_" + k] = int(np.sum(ev["kind"] == k.encode()))
        q = f["quant/error"][:]
        for layer in range(int(f.attrs["layers"])):
            v = q["rel_l2"][(q["layer"] == layer) & np.isfinite(q["rel_l2"])]
            e[f"qerr_layer{layer}"] = float(np.mean(v)) if len(v) else math.nan
        e["tokens_per_s_median"] = float(np.median(f["train/tokens_per_s"][:n]))
        e["data_wait_share"] = float(np.sum(f["train/data_wait_ms"][:n]) / np.sum(f["train/step_ms"][:n]))
        e["diverged"] = "yes" if len(f["events/divergence"]) or e["status"] == "diverged" else "no"
    return e


def close(a, b, rel):
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= rel * max(1.0, abs(b))


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_h5_table(path, name):
    with h5py.File(path, "r") as f:
        t = f[name][:]
    rows = []
    for r in t:
        rows.append({k: (r[k].decode() if isinstance(r[k], bytes) else r[k].item()) for k in t.dtype.names})
    return rows


# ---------------------------------------------------------------------------------------------
def case_parse():
    d = setup("parse")
    os.makedirs(os.path.join(d, "exp"))
    corpus = os.path.join(d, "corpus.txt")
    out = os.path.join(d, "out")

    # -- good files ----------------------------------------------------------------------------
    good = write(os.path.join(d, "exp", "good.ini"), """# comment
; another comment
[base]
data = ../corpus.txt
layers=2
eval-every = 7
   grad-accum   =   1
recipe = nvfp4|bf16-last=0
seed = 5

[sweep]
target_loss = 2.5
threads_per_run = 3
""")
    p = qsweep(good, "--out", out, "--dry-run")
    check(p.returncode == 0, f"good file: exit {p.returncode}: {p.stderr}")
    runs = dry_lines(p.stdout)
    check([n for n, _ in runs] == ["base"], f"no grid: one run named 'base', got {[n for n, _ in runs]}")
    if runs:
        argv = runs[0][1]
        want = [QTRAIN, "--data", os.path.realpath(corpus), "--layers", "2", "--eval-every", "7",
                "--grad-accum", "1", "--recipe", "nvfp4,bf16-last=0", "--seed", "5",
                "--out", os.path.join(out, "runs", "base.h5"), "--resume", "--quiet", "--threads", "3"]
        check(argv == want, f"good file command\n got  {argv}\n want {want}")

    # --data overrides [base] data (even a missing one), relative to the working directory
    g2 = write(os.path.join(d, "exp", "override.ini"), "[base]\ndata = nowhere.txt\nsteps = 3\n")
    p = qsweep(g2, "--out", out, "--dry-run", "--data", "corpus.txt", cwd=d)
    check(p.returncode == 0 and f"--data {os.path.realpath(corpus)} " in p.stdout,
          f"--data override: exit {p.returncode} {p.stdout!r} {p.stderr!r}")
    g3 = write(os.path.join(d, "exp", "nodata.ini"), "[base]\nsteps = 3\n")
    p = qsweep(g3, "--out", out, "--dry-run", "--data", corpus)
    check(p.returncode == 0, f"data only on the command line: exit {p.returncode}: {p.stderr}")
    # recipes with '|' in the grid; baseline among them
    g4 = write(os.path.join(d, "exp", "ablation.ini"),
               "[base]\ndata = ../corpus.txt\n[grid]\nrecipe = nvfp4, nvfp4|nvfp4-rht , nvfp4-sr\n"
               "[sweep]\nbaseline = nvfp4\n")
    p = qsweep(g4, "--out", out, "--dry-run")
    runs = dry_lines(p.stdout)
    check(p.returncode == 0 and [n for n, _ in runs] == ["recipe=nvfp4", "recipe=nvfp4+nvfp4-rht", "recipe=nvfp4-sr"],
          f"'|' recipes: {p.returncode} {[n for n, _ in runs]} {p.stderr}")
    check(any(a[a.index("--recipe") + 1] == "nvfp4,nvfp4-rht" for _, a in runs), "'|' becomes ',' for qtrain")
    check(not os.path.exists(out), "--dry-run created the output folder")

    # -- bad files: (text, line, message fragment) ---------------------------------------------
    ok = "[base]\ndata = corpus.txt\n"
    bad = [
        ("[base]\ndata = corpus.txt\n[foo]\n", 3, "unknown section [foo]"),
        ("layers = 2\n[base]\ndata = corpus.txt\n", 1, "before any [section]"),
        (ok + "layerz = 2\n", 3, "unknown qtrain option 'layerz'"),
        (ok + "layers = 2\n# x\nlayers = 3\n", 5, "'layers' set twice in [base] (first at line 3)"),
        (ok + "layers = two\n", 3, "layers expects an integer"),
        (ok + "layers = 0\n", 3, "layers expects an integer in [1, 1024]"),
        (ok + "lr = fast\n", 3, "lr expects a number"),
        (ok + "steps =\n", 3, "'steps' has no value"),
        (ok + "[grid]\nseed =\n", 4, "grid axis 'seed' has no values"),
        (ok + "[grid]\nseed = 1,,2\n", 4, "grid axis 'seed': value 2 is empty"),
        (ok + "[grid]\nseed = 1, 2, 1\n", 4, "grid axis 'seed': value '1' given twice"),
        (ok + "[grid]\nrecipe = bf16, fp9\n", 4, "unknown recipe or modifier 'fp9'"),
        (ok + "[grid]\nrecipe = bf16, nvfp4|x=nvfp5\n", 4, "unknown format 'nvfp5'"),
        (ok + "[grid]\nrecipe = bf16, nvfp4|wgrad.x=bf16\n", 4, "rht=16 on dy but rht=0 on x"),
        (ok + "recipe = bf16|fprp=fp8-e4m3\n", 3, "unknown target 'fprp'"),
        (ok + "[grid]\nseed = 1\nseed = 2\n", 5, "grid axis 'seed' given twice (first at line 4)"),
        (ok + "[grid]\ndata = a.txt, b.txt\n", 4, "'data' cannot be a grid axis"),
        (ok + "lr = 1e-3\n[grid]\nlr = 1e-3, 2e-3\n", 5, "'lr' is already set in [base] (line 3)"),
        ("[base]\nlayers = 2\n", 1, "no data = FILE in [base]"),
        ("# x\n[base]\nlayers = 2\n", 2, "no data = FILE in [base]"),
        ("[base]\ndata = missing.txt\n", 2, "data: cannot read"),
        (ok + "threads = 4\n", 3, "use threads_per_run in [sweep]"),
        (ok + "out = x.h5\n", 3, "'out' cannot be set in [base]"),
        (ok + "[sweep]\nbogus = 1\n", 4, "unknown key 'bogus' in [sweep]"),
        (ok + "[sweep]\ntarget_loss = -1\n", 4, "target_loss expects a positive number"),
        (ok + "[sweep]\nthreads_per_run = 0\n", 4, "threads_per_run expects an integer in 1..1024"),
        (ok + "[sweep]\nbaseline = bf16\nbaseline = fp8\n", 5, "'baseline' set twice"),
        (ok + "[grid]\nrecipe = bf16, nvfp4\n[sweep]\nbaseline = fp8\n", 6,
         "baseline 'fp8' is not a value of the recipe axis (line 4)"),
        (ok + "[grid]\nrecipe = fp8, nvfp4\n", 4, "lacks the default baseline 'bf16'"),
        (ok + "just words\n", 3, "expected 'key = value'"),
        (ok + "[base]\n", 3, "section [base] appears twice (first at line 1)"),
        (ok + "[grid\n", 3, "section header"),
        (ok + " = 3\n", 3, "missing key before '='"),
        (ok + "[grid]\nheads = 2, x\n", 4, "grid axis 'heads': heads expects an integer"),
    ]
    for i, (text, line, frag) in enumerate(bad):
        path = write(os.path.join(d, f"bad{i}.ini"), text)
        dest = os.path.join(d, f"out_bad{i}")
        p = qsweep(path, "--out", dest, "-j", "2")
        lines = p.stderr.splitlines()
        check(p.returncode == 2, f"bad{i}: exit {p.returncode}, want 2 ({p.stderr.strip()})")
        check(len(lines) == 1 and lines[0].startswith(f"qsweep: {path}:{line}: ") and frag in lines[0],
              f"bad{i}: stderr {p.stderr!r}, want 'qsweep: {path}:{line}: ...{frag}...'")
        check(p.stdout == "", f"bad{i}: printed on stdout")
        check(not os.path.exists(dest), f"bad{i}: created {dest} (something ran)")

    # -- command-line errors --------------------------------------------------------------------
    for args, frag in [([good, "--out", out, "-j", "0"], "-j expects"),
                       ([good], "--out DIR is required"),
                       ([good, "--out", out, "--bogus"], "--bogus"),
                       ([os.path.join(d, "none.ini"), "--out", out], "cannot read"),
                       ([good, "--out", out, "--dry-run", "--slurm"], "exclude"),
                       (["--summarize", d], "not a qsweep folder")]:
        p = qsweep(*args)
        check(p.returncode == 2 and frag in p.stderr, f"{args}: exit {p.returncode}, stderr {p.stderr!r} lacks {frag!r}")


def case_grid():
    d = setup("grid")
    ini = write(os.path.join(d, "g.ini"), "[base]\ndata = corpus.txt\n[grid]\nrecipe = bf16, fp8\n"
                "seed = 1, 2, 3\nlr = 1e-3, 3e-3\n")
    p = qsweep(ini, "--out", os.path.join(d, "out"), "--dry-run")
    check(p.returncode == 0, f"grid: exit {p.returncode}: {p.stderr}")
    names = [n for n, _ in dry_lines(p.stdout)]
    want = [f"recipe={r}_seed={s}_lr={lr}" for r in ["bf16", "fp8"] for s in [1, 2, 3] for lr in ["1e-3", "3e-3"]]
    check(names == want, f"grid order (first axis slowest)\n got  {names}\n want {want}")
    check("12 runs: recipe(2) x seed(3) x lr(2)" in p.stdout, f"header: {p.stdout.splitlines()[:1]}")
    for name, argv in dry_lines(p.stdout):
        r, s, lr = (kv.split("=", 1)[1] for kv in name.split("_"))
        got = (argv[argv.index("--recipe") + 1], argv[argv.index("--seed") + 1], argv[argv.index("--lr") + 1])
        check(got == (r, s, lr), f"{name}: command has {got}")
    # a single-valued axis is still an axis; modifiers are sanitized into the name
    ini2 = write(os.path.join(d, "g2.ini"), "[base]\ndata = corpus.txt\n[grid]\n"
                 "recipe = bf16, nvfp4|bf16-last=0|bf16-first=1\nlayers = 3\n")
    p = qsweep(ini2, "--out", os.path.join(d, "out"), "--dry-run")
    names = [n for n, _ in dry_lines(p.stdout)]
    check(names == ["recipe=bf16_layers=3", "recipe=nvfp4+bf16-last=0+bf16-first=1_layers=3"], f"names {names}")
    for n in names:
        check(all(c.isalnum() or c in ".+=-_" for c in n), f"unsafe name {n}")
    # recipes of the rule language in a grid: '|' for ',', every other character plain text
    rules = ["bf16", "nvfp4|bf16-last=0|~L0=bf16", "fp8-current|w=nvfp4", "bf16|fprop.x+w=nvfp4:sr",
             "fp8|dy=fp8-e4m3:delayed:hist=16"]
    ini4 = write(os.path.join(d, "g4.ini"), "[base]\ndata = corpus.txt\nlayers = 2\n[grid]\nrecipe = " +
                 " , ".join(rules) + "\n")
    p = qsweep(ini4, "--out", os.path.join(d, "out"), "--dry-run")
    runs = dry_lines(p.stdout)
    check(p.returncode == 0 and len(runs) == len(rules), f"rule recipes in a grid: {p.returncode} {p.stderr}")
    check([n for n, _ in runs] == ["recipe=bf16", "recipe=nvfp4+bf16-last=0+-L0=bf16", "recipe=fp8-current+w=nvfp4",
                                   "recipe=bf16+fprop.x+w=nvfp4-sr", "recipe=fp8+dy=fp8-e4m3-delayed-hist=16"],
          f"rule recipe names {[n for n, _ in runs]}")
    for (name, argv), r in zip(runs, rules):
        rec = argv[argv.index("--recipe") + 1]
        check(rec == r.replace("|", ","), f"{name}: --recipe {rec}")
        e = subprocess.run([QTRAIN, "--recipe", rec, "--layers", "2", "--explain"], capture_output=True, text=True)
        check(e.returncode == 0 and "L0" in e.stdout, f"{name}: qtrain --explain {e.returncode} {e.stderr}")
    # a long explicit recipe as the baseline (beyond the old 160-byte limit)
    e = subprocess.run([QTRAIN, "--recipe", "nvfp4", "--layers", "2", "--explain"], capture_output=True, text=True)
    spelled = "|".join(l for l in e.stdout.splitlines() if not l.startswith("#"))
    check(len(spelled) > 160, f"nvfp4 spelled out is only {len(spelled)} bytes")
    ini5 = write(os.path.join(d, "g5.ini"), f"[base]\ndata = corpus.txt\nlayers = 2\nrecipe = {spelled}\n"
                 f"[sweep]\nbaseline = {spelled}\n")
    p = qsweep(ini5, "--out", os.path.join(d, "out"), "--dry-run")
    runs = dry_lines(p.stdout)
    check(p.returncode == 0 and len(runs) == 1 and runs[0][1][runs[0][1].index("--recipe") + 1] ==
          spelled.replace("|", ","), f"long baseline: {p.returncode} {p.stderr}")
    # the product grows as it should
    ini3 = write(os.path.join(d, "g3.ini"), "[base]\ndata = corpus.txt\n[grid]\nseed = 1,2,3,4,5\n"
                 "dim = 32, 64\nheads = 1, 2, 4\nbatch = 2, 4\n")
    p = qsweep(ini3, "--out", os.path.join(d, "out"), "--dry-run")
    check(len(dry_lines(p.stdout)) == 60, f"5x2x3x2 grid has {len(dry_lines(p.stdout))} runs")
    # the architecture as an axis; the Llama's options in [base]; Smooth-SwiGLU is a recipe modifier ('|' for ',')
    ini4 = write(os.path.join(d, "g4.ini"), "[base]\ndata = corpus.txt\nkv_heads = 1\n[grid]\narch = gpt, llama\n"
                 "recipe = bf16, bf16|smooth-swiglu\n")
    p = qsweep(ini4, "--out", os.path.join(d, "out"), "--dry-run")
    runs = dry_lines(p.stdout)
    check(p.returncode == 0 and len(runs) == 4 and [n.split("_")[0] for n, _ in runs] == ["arch=gpt"] * 2 + ["arch=llama"] * 2,
          f"arch axis: {p.returncode} {p.stderr} {[n for n, _ in runs]}")
    for name, argv in runs:
        check(argv[argv.index("--arch") + 1] == name.split("_")[0].split("=")[1] and
              argv[argv.index("--recipe") + 1] in ("bf16", "bf16,smooth-swiglu") and
              argv[argv.index("--kv-heads") + 1] == "1" and "--smooth-swiglu" not in argv, f"{name}: {argv}")
    for bad, frag in (("arch = gpt, mamba", "arch expects one of gpt,llama, not 'mamba'"),
                      ("smooth_swiglu = 1", "unknown qtrain option 'smooth_swiglu'"),
                      ("kv_heads = 0", "kv_heads expects an integer in [1, 1.04858e+06], not '0'")):
        p = qsweep(write(os.path.join(d, "g5.ini"), f"[base]\ndata = corpus.txt\n[grid]\n{bad}\n"), "--out",
                   os.path.join(d, "out"), "--dry-run")
        check(p.returncode == 2 and frag in p.stderr, f"{bad}: exit {p.returncode}: {p.stderr!r}")


def case_dryrun():
    d = setup("dryrun")
    ini = write(os.path.join(d, "d.ini"), BASE.format(steps=30, ckpt=10) + "[grid]\nrecipe = bf16, fp8\nseed = 1, 2\n")
    out_rel = "out/sweep"
    out = os.path.join(d, out_rel)
    base_argv = ["--data", os.path.realpath(os.path.join(d, "corpus.txt")), "--layers", "2", "--heads", "2",
                 "--dim", "32", "--seq", "32", "--batch", "4", "--steps", "30", "--warmup", "5", "--lr", "5e-3",
                 "--eval-every", "20", "--eval-batches", "2", "--qerr-every", "10", "--ckpt-every", "10",
                 "--prefetch", "2"]
    for j in (1, 2, 3):
        p = qsweep(ini, "--out", out_rel, "-j", str(j), "--dry-run", cwd=d)
        check(p.returncode == 0, f"-j {j}: exit {p.returncode}: {p.stderr}")
        threads = max(1, cores() // j)
        runs = dry_lines(p.stdout)
        check(len(runs) == 4, f"-j {j}: {len(runs)} runs")
        for name, argv in runs:
            rec, seed = (kv.split("=")[1] for kv in name.split("_"))
            want = [QTRAIN] + base_argv + ["--recipe", rec, "--seed", seed, "--out",
                                           os.path.join(out, "runs", name + ".h5"), "--resume", "--quiet",
                                           "--threads", str(threads)]
            check(argv == want, f"-j {j} {name}\n got  {argv}\n want {want}")
    p = qsweep(ini, "--out", out, "-j2", "--dry-run", "--qtrain", "/opt/x/qtrain")
    check(all(a[0] == "/opt/x/qtrain" for _, a in dry_lines(p.stdout)), "--qtrain PATH is used")
    check(not os.path.exists(os.path.join(d, "out")), "--dry-run created files")
    # the printed command is the real thing: run one as printed
    name, argv = dry_lines(qsweep(ini, "--out", out, "-j", str(cores()), "--dry-run").stdout)[3]
    os.makedirs(os.path.join(out, "runs"))
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"printed command failed: {r.stderr}")
    with open_run(os.path.join(out, "runs", name + ".h5")) as f:
        check(f.attrs["recipe"] == "fp8" and f.attrs["seed"] == "2" and len(f["train/step"]) == 30,
              f"run file of the printed command: {dict(f.attrs)}")


def check_summary(d, out, target, axes):
    """Every number of summary.csv / summary.h5 against the run files."""
    runs_csv = read_csv(os.path.join(out, "summary.csv"))
    runs_h5 = read_h5_table(os.path.join(out, "summary.h5"), "runs")
    groups_h5 = read_h5_table(os.path.join(out, "summary.h5"), "recipes")
    check(len(runs_csv) == len(runs_h5), "csv and h5 list the same runs")
    exp = {}
    for row in runs_csv:
        path = os.path.join(out, "runs", row["name"] + ".h5")
        exp[row["name"]] = expected(path, target) if os.path.exists(path) else None
    for row_csv, row_h5 in zip(runs_csv, runs_h5):
        e = exp[row_csv["name"]]
        check(row_csv["name"] == row_h5["name"], "same order in csv and h5")
        if e is None:
            continue
        for k, v in e.items():
            if isinstance(v, str):
                check(row_csv[k] == v and row_h5[k] == v, f"{row_csv['name']} {k}: csv {row_csv[k]} h5 {row_h5[k]} want {v}")
            else:
                check(close(row_csv[k], v, 1e-9), f"{row_csv['name']} {k}: csv {row_csv[k]} want {v}")
                check(close(row_h5[k], v, 1e-12), f"{row_csv['name']} {k}: h5 {row_h5[k]} want {v}")
    # gap to the baseline run of the same seed (and every other axis value)
    by_name = {r["name"]: r for r in runs_csv}
    for r in runs_csv:
        if r["status"] != "done":
            continue
        base = r["name"].replace("recipe=" + r["recipe"], "recipe=bf16")
        vb = exp[base]["final_val_loss"]
        v = exp[r["name"]]["final_val_loss"]
        check(close(r["gap_abs"], v - vb, 1e-9), f"{r['name']} gap_abs {r['gap_abs']} want {v - vb}")
        check(close(r["gap_pct"], 100 * (v - vb) / vb, 1e-9), f"{r['name']} gap_pct {r['gap_pct']}")
        check(by_name[base]["status"] == "done", "baseline done")
    # groups: every axis but seed; mean and sample std over the done runs
    groups = {}
    for r in runs_csv:
        key = tuple((a, r[a]) for a in axes if a != "seed")
        groups.setdefault(key, []).append(r)
    check(len(groups_h5) == len(groups), f"{len(groups_h5)} groups, want {len(groups)}")
    for g in groups_h5:
        key = tuple((a, g[a]) for a in axes if a != "seed")
        members = groups.get(key, [])
        done = [m for m in members if m["status"] == "done"]
        vals = np.array([exp[m["name"]]["final_val_loss"] for m in done])
        gaps = np.array([float(m["gap_pct"]) for m in done])
        check(g["n_runs"] == len(members) and g["n_seeds"] == len(done), f"group {key}: counts {g}")
        check(close(g["val_loss_mean"], vals.mean(), 1e-12), f"group {key} mean {g['val_loss_mean']} want {vals.mean()}")
        check(close(g["val_loss_std"], vals.std(ddof=1), 1e-9), f"group {key} std {g['val_loss_std']}")
        check(close(g["gap_pct_mean"], gaps.mean(), 1e-8), f"group {key} gap mean {g['gap_pct_mean']}")
        check(close(g["gap_pct_std"], gaps.std(ddof=1), 1e-6), f"group {key} gap std {g['gap_pct_std']}")
    return runs_csv, exp


def case_run():
    d = setup("run")
    target = 2.9
    ini = write(os.path.join(d, "r.ini"), BASE.format(steps=60, ckpt=20) +
                f"[grid]\nrecipe = bf16, fp8\nseed = 1, 2\n[sweep]\ntarget_loss = {target}\n")
    out = os.path.join(d, "out")
    p = qsweep(ini, "--out", out, "-j", "2", timeout=300)
    check(p.returncode == 0, f"sweep: exit {p.returncode}\n{p.stderr}")
    for f in ("summary.csv", "summary.h5", "summary.md", "qsweep.ini"):
        check(os.path.exists(os.path.join(out, f)), f"{f} written")
    names = ["recipe=bf16_seed=1", "recipe=bf16_seed=2", "recipe=fp8_seed=1", "recipe=fp8_seed=2"]
    for n in names:
        check(os.path.exists(os.path.join(out, "logs", n + ".log")), f"log of {n}")
    # -j 2: two runs at once, threads = cores / 2
    with open_run(os.path.join(out, "runs", names[0] + ".h5")) as f:
        check(f.attrs["threads"] == str(max(1, cores() // 2)), f"threads per run {f.attrs['threads']}")
    runs, exp = check_summary(d, out, target, ["recipe", "seed"])
    check([r["name"] for r in runs] == names, f"summary order {[r['name'] for r in runs]}")
    check(all(r["status"] == "done" for r in runs), "all done")
    check(any(exp[n]["steps_to_target"] >= 0 for n in names), "the target is reached (the test can tell)")
    check(any(exp[n]["ev_overflow"] + exp[n]["ev_scale_change"] > 0 for n in names), "fp8 logs recalibration events")
    check(all(exp[n]["ev_scale_change"] == 0 for n in names if "bf16" in n), "bf16 has no scaling events")
    # matched: same seed -> same initial weights and batches, whatever the recipe
    h = {}
    for n in names:
        with open_run(os.path.join(out, "runs", n + ".h5")) as f:
            h[n] = (f.attrs["init_param_hash"], f["train/batch_hash"][:])
    for s in ("1", "2"):
        a, b = h[f"recipe=bf16_seed={s}"], h[f"recipe=fp8_seed={s}"]
        check(a[0] == b[0], f"seed {s}: init_param_hash {a[0]} != {b[0]}")
        check(np.array_equal(a[1], b[1]) and len(a[1]) == 60, f"seed {s}: batch hashes differ")
    check(h["recipe=bf16_seed=1"][0] != h["recipe=bf16_seed=2"][0], "different seeds, different weights")
    check(not np.array_equal(h["recipe=bf16_seed=1"][1], h["recipe=bf16_seed=2"][1]), "different seeds, different batches")
    md = open(os.path.join(out, "summary.md")).read()
    check("## Runs" in md and "## Groups" in md and all(f"| {n} |" in md for n in names), "summary.md has both tables")
    check("| recipe=fp8 | fp8 | 2 | 2 | 0 | 0 |" in md, "summary.md group row")
    # rerun: nothing left to do, nothing started
    logs_before = {n: open(os.path.join(out, "logs", n + ".log")).read() for n in names}
    p = qsweep(ini, "--out", out, "-j", "2")
    check(p.returncode == 0 and "(4 finished before)" in p.stderr, f"rerun: {p.returncode} {p.stderr}")
    check(all(open(os.path.join(out, "logs", n + ".log")).read() == logs_before[n] for n in names),
          "rerun started finished runs")
    # a different experiment into the same folder is refused
    ini2 = write(os.path.join(d, "other.ini"), BASE.format(steps=61, ckpt=20) + "[grid]\nrecipe = bf16, fp8\nseed = 1, 2\n")
    p = qsweep(ini2, "--out", out)
    check(p.returncode == 2 and "different experiment" in p.stderr, f"other experiment, same folder: {p.returncode} {p.stderr}")


def train_rows(path):
    try:
        with open_run(path) as f:
            return min(len(f["train"][k]) for k in TRAIN)
    except (OSError, KeyError):
        return 0


def wait_for(cond, seconds, what):
    t = time.monotonic() + seconds
    while time.monotonic() < t:
        if cond():
            return True
        time.sleep(0.02)
    check(False, f"timed out after {seconds} s waiting for {what}")
    return False


def case_resume():
    d = setup("resume")
    # long enough that the first run is still going when the test sees step 150 and sends
    # SIGTERM, on a machine several times faster than this one (no timing is asserted)
    steps = 1600
    ini = write(os.path.join(d, "r.ini"), BASE.format(steps=steps, ckpt=100) + "[grid]\nrecipe = bf16, fp8\nseed = 1, 2\n")
    out = os.path.join(d, "out")
    first = os.path.join(out, "runs", "recipe=bf16_seed=1.h5")
    proc = subprocess.Popen([QSWEEP, ini, "--out", out, "-j", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    # past the first checkpoint (step 100) of the first run, but not finished
    wait_for(lambda: train_rows(first) >= 150, 120, "the first run to pass step 150")
    proc.send_signal(signal.SIGTERM)
    try:
        out_s, err_s = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out_s, err_s = proc.communicate()
        check(False, "qsweep did not exit within 60 s of SIGTERM")
    check(proc.returncode == 130, f"SIGTERM: exit {proc.returncode}, want 130\n{err_s}")
    check("stopping" in err_s and "run the same command again" in err_s, f"SIGTERM message: {err_s}")
    runs = read_csv(os.path.join(out, "summary.csv"))
    st = {r["name"]: r["status"] for r in runs}
    # qtrain stops at a step boundary on SIGTERM and records it ("stopped");
    # one killed harder would read "interrupted": both resume
    check(st["recipe=bf16_seed=1"] in ("stopped", "interrupted"), f"statuses after SIGTERM: {st}")
    check(all(s in ("stopped", "interrupted", "missing", "done") for s in st.values()),
          f"no run still running/failed: {st}")
    partial = {r["name"]: int(r["steps"]) for r in runs if r["status"] == "interrupted"}
    check(all(0 < n < steps for n in partial.values()), f"interrupted runs stopped partway: {partial}")
    # the interrupted files are valid: h5py reads them, the writer is gone (qtrain can take its lock)
    for n in partial:
        check(train_rows(os.path.join(out, "runs", n + ".h5")) > 0, f"{n}: readable after the kill")
    p = qsweep(ini, "--out", out, "-j", "2", timeout=600)
    check(p.returncode == 0, f"rerun: exit {p.returncode}\n{p.stderr}")
    runs = read_csv(os.path.join(out, "summary.csv"))
    check(all(r["status"] == "done" and r["steps"] == str(steps) for r in runs), f"after rerun: {[(r['name'], r['status'], r['steps']) for r in runs]}")
    for r in runs:
        with open_run(os.path.join(out, "runs", r["name"] + ".h5")) as f:
            s = f["train/step"][:]
            check(np.array_equal(s, np.arange(steps)), f"{r['name']}: /train/step is not 0..{steps - 1} exactly once")
    log = open(os.path.join(out, "logs", "recipe=bf16_seed=1.log")).read()
    check(log.count("== qsweep 2") == 2, f"interrupted run started twice: {log.count('== qsweep 2')} attempts")
    # resumed = the same numbers as an uninterrupted run (qtrain's bit-identical resume, through qsweep)
    argv = dry_lines(qsweep(ini, "--out", out, "-j", "2", "--dry-run").stdout)[0][1]  # the command the sweep ran
    ref = os.path.join(d, "ref.h5")
    argv[argv.index("--out") + 1] = ref
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"reference run: {r.stderr}")
    with open_run(first) as a, open_run(ref) as b:
        check(np.array_equal(a["train/loss"][:], b["train/loss"][:]), "resumed losses differ from an uninterrupted run")


def case_fail():
    d = setup("fail")
    ini = write(os.path.join(d, "f.ini"), BASE.format(steps=30, ckpt=10).replace("heads = 2\n", "").replace("lr = 5e-3\n", "")
                + "[grid]\nheads = 2, 3\nlr = 5e-3, 1000\n")
    out = os.path.join(d, "out")
    p = qsweep(ini, "--out", out, "-j", "2")
    check(p.returncode == 1, f"a failed run: exit {p.returncode}, want 1\n{p.stderr}")
    check("2 of 4 runs failed" in p.stderr and "heads=3_lr=5e-3: exit 2" in p.stderr and "does not divide" in p.stderr,
          f"failure report: {p.stderr}")
    check("1 run diverged" in p.stderr, f"divergence reported: {p.stderr}")
    rows = {r["name"]: r for r in read_csv(os.path.join(out, "summary.csv"))}
    check(rows["heads=2_lr=5e-3"]["status"] == "done", f"good run: {rows['heads=2_lr=5e-3']['status']}")
    check(rows["heads=2_lr=1000"]["status"] == "diverged" and rows["heads=2_lr=1000"]["diverged"] == "yes",
          f"diverged run: {rows['heads=2_lr=1000']['status']}")
    for n in ("heads=3_lr=5e-3", "heads=3_lr=1000"):
        check(rows[n]["status"] == "failed" and "does not divide" in rows[n]["message"], f"{n}: {rows[n]}")
    check(rows["heads=2_lr=5e-3"]["diverged"] == "no", "done run not diverged")
    md = open(os.path.join(out, "summary.md")).read()
    check("`heads=3_lr=1000`: failed: exit 2" in md, "summary.md lists the failure")
    # rerun: failed runs are tried again, finished ones (done, diverged) are not
    p = qsweep(ini, "--out", out, "-j", "2")
    check(p.returncode == 1 and "(2 finished before)" in p.stderr, f"rerun: {p.returncode} {p.stderr}")
    count = lambda n: open(os.path.join(out, "logs", n + ".log")).read().count("== qsweep 2")
    check(count("heads=3_lr=5e-3") == 2 and count("heads=2_lr=1000") == 1 and count("heads=2_lr=5e-3") == 1,
          "retried only the failed runs")
    # only divergence: exit 0
    ini2 = write(os.path.join(d, "g.ini"), BASE.format(steps=30, ckpt=10).replace("lr = 5e-3\n", "") + "[grid]\nlr = 5e-3, 1000\n")
    p = qsweep(ini2, "--out", os.path.join(d, "out2"))
    check(p.returncode == 0, f"a diverged run is a result: exit {p.returncode}\n{p.stderr}")


def case_lock():
    d = setup("lock")
    ini = write(os.path.join(d, "l.ini"), BASE.format(steps=30, ckpt=10) + "[grid]\nseed = 1, 2\n")
    out = os.path.join(d, "out")
    os.makedirs(out)
    # a lock held by someone else (here: this script, claiming pid 4242)
    with open(os.path.join(out, ".qsweep.lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        lk.write("4242\n")
        lk.flush()
        p = qsweep(ini, "--out", out)
        check(p.returncode == 2 and "pid 4242" in p.stderr, f"held lock: exit {p.returncode}: {p.stderr}")
        check(not os.listdir(os.path.join(out, "runs")), "a run started while the folder was locked")
        p = qsweep(ini, "--out", out, "--dry-run")
        check(p.returncode == 0, "--dry-run needs no lock")
    # two real qsweeps
    ini2 = write(os.path.join(d, "long.ini"), BASE.format(steps=3000, ckpt=1000) + "[grid]\nseed = 1, 2\n")
    out2 = os.path.join(d, "out2")
    proc = subprocess.Popen([QSWEEP, ini2, "--out", out2], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lockfile = os.path.join(out2, ".qsweep.lock")

    def holds():
        try:
            return open(lockfile).read().strip() == str(proc.pid)
        except OSError:
            return False
    wait_for(holds, 60, "the first qsweep to take its lock")
    p = qsweep(ini2, "--out", out2)
    check(p.returncode == 2 and f"pid {proc.pid}" in p.stderr, f"second qsweep: exit {p.returncode}: {p.stderr}")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    check(proc.returncode == 130, f"first qsweep after SIGTERM: {proc.returncode}")
    # the kernel dropped the lock with its holder: a new qsweep may go on (--summarize needs no lock at all)
    p = qsweep("--summarize", out2)
    check(p.returncode == 0, f"--summarize after: {p.stderr}")


def case_summarize():
    d = setup("summarize")
    target = 2.9
    ini = write(os.path.join(d, "s.ini"), BASE.format(steps=40, ckpt=20) +
                f"[grid]\nrecipe = bf16, fp8\nseed = 1, 2\n[sweep]\ntarget_loss = {target}\n")
    out = os.path.join(d, "out")
    p = qsweep(ini, "--out", out, "-j", "2")
    check(p.returncode == 0, f"sweep: {p.stderr}")
    before = open(os.path.join(out, "summary.csv")).read()
    for f in ("summary.csv", "summary.h5", "summary.md"):
        os.remove(os.path.join(out, f))
    p = qsweep("--summarize", out)
    check(p.returncode == 0, f"--summarize: exit {p.returncode}: {p.stderr}")
    check(open(os.path.join(out, "summary.csv")).read() == before, "--summarize rebuilt a different summary.csv")
    check(os.path.exists(os.path.join(out, "summary.h5")) and os.path.exists(os.path.join(out, "summary.md")), "h5/md rebuilt")
    check("recipe=fp8" in p.stdout and "final val loss" in p.stdout, f"--summarize prints the groups: {p.stdout}")
    check_summary(d, out, target, ["recipe", "seed"])
    # from whatever run files exist: one gone -> missing, and its partner has no baseline
    os.remove(os.path.join(out, "runs", "recipe=bf16_seed=2.h5"))
    p = qsweep("--summarize", out)
    rows = {r["name"]: r for r in read_csv(os.path.join(out, "summary.csv"))}
    check(p.returncode == 0 and rows["recipe=bf16_seed=2"]["status"] == "missing", f"missing run: {rows['recipe=bf16_seed=2']}")
    check(rows["recipe=fp8_seed=2"]["gap_pct"] == "nan" and rows["recipe=fp8_seed=1"]["gap_pct"] != "nan", "gap without a baseline")
    g = {r["group"]: r for r in read_h5_table(os.path.join(out, "summary.h5"), "recipes")}
    check(g["recipe=bf16"]["n_seeds"] == 1 and math.isnan(g["recipe=bf16"]["val_loss_std"]), f"one seed left: {g['recipe=bf16']}")


def case_slurm():
    d = setup("slurm")
    ini = write(os.path.join(d, "s.ini"), BASE.format(steps=30, ckpt=10) +
                "[grid]\nrecipe = bf16, fp8\nseed = 1, 2\n[sweep]\nthreads_per_run = 1\n")
    out = os.path.join(d, "out")
    p = qsweep(ini, "--out", out, "--slurm")
    script = os.path.join(out, "qsweep.sbatch")
    check(p.returncode == 0 and os.path.exists(script), f"--slurm: exit {p.returncode}: {p.stderr}")
    check(f"sbatch {script}" in p.stdout and f"--summarize {out}" in p.stdout, f"--slurm instructions: {p.stdout}")
    text = open(script).read()
    for line in ("#SBATCH --array=0-3", "#SBATCH --cpus-per-task=1", "#SBATCH --ntasks=1",
                 f"#SBATCH --output={out}/logs/slurm-%A_%a.log", "launch=()"):
        check(line + "\n" in text, f"script lacks {line!r}")
    check(not os.listdir(os.path.join(out, "runs")), "--slurm ran something")
    # the embedded commands are exactly the dry-run's
    dry = dry_lines(qsweep(ini, "--out", out, "--dry-run").stdout)
    run_line = '"${launch[@]}" "${cmd[@]}" >>"$log" 2>&1\n'
    check(run_line in text, "script runs the command through launch")
    probe = write(os.path.join(d, "probe.sh"), text.replace(run_line, 'printf "%s\\0" "${cmd[@]}"; exit 0\n'))
    for i, (name, argv) in enumerate(dry):
        r = subprocess.run(["bash", probe], capture_output=True, text=True, env=dict(os.environ, SLURM_ARRAY_TASK_ID=str(i)))
        got = r.stdout.split("\n", 1)[1].split("\0")[:-1] if "\n" in r.stdout else []
        check(r.returncode == 0 and got == argv, f"task {i}: {got} != {argv} ({r.stderr})")
    # one task for real, without Slurm
    r = subprocess.run(["bash", script], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, SLURM_ARRAY_TASK_ID="2"))
    check(r.returncode == 0 and "run recipe=fp8_seed=1" in r.stdout, f"task 2: {r.returncode} {r.stdout} {r.stderr}")
    run = os.path.join(out, "runs", "recipe=fp8_seed=1.h5")
    check(os.path.exists(run), "task 2's run file")
    if os.path.exists(run):
        with open_run(run) as f:
            check(f["status"][-1]["state"] == b"done" and f.attrs["recipe"] == "fp8" and f.attrs["seed"] == "1",
                  "task 2 ran recipe=fp8_seed=1 to the end")
    check(sorted(os.listdir(os.path.join(out, "runs"))) ==
          ["recipe=fp8_seed=1.ckpt.h5", "recipe=fp8_seed=1.ckpt.h5.prev", "recipe=fp8_seed=1.h5"], "only task 2 ran")
    r = subprocess.run(["bash", script], capture_output=True, text=True, env=dict(os.environ, SLURM_ARRAY_TASK_ID="4"))
    check(r.returncode == 2 and "not in 0..3" in r.stderr, f"task out of range: {r.returncode} {r.stderr}")
    env = {k: v for k, v in os.environ.items() if k != "SLURM_ARRAY_TASK_ID"}
    r = subprocess.run(["bash", script], capture_output=True, text=True, env=env)
    check(r.returncode != 0 and "not an array task" in r.stderr, f"no task id: {r.returncode} {r.stderr}")
    p = qsweep("--summarize", out)
    rows = {r["name"]: r["status"] for r in read_csv(os.path.join(out, "summary.csv"))}
    check(rows == {"recipe=bf16_seed=1": "missing", "recipe=bf16_seed=2": "missing", "recipe=fp8_seed=1": "done",
                   "recipe=fp8_seed=2": "missing"}, f"summary after one task: {rows}")
    # --status without a submission: the run files alone
    p = qsweep("--status", out)
    check(p.returncode == 0 and "nothing submitted to Slurm" in p.stdout and "total: 1 done, 3 not submitted" in p.stdout,
          f"--status of a folder never submitted: {p.returncode} {p.stdout} {p.stderr}")
    # a failing task records its failure as a local qsweep would (DIR/runs/NAME.exit)
    ini_bad = write(os.path.join(d, "bad.ini"), BASE.format(steps=30, ckpt=10).replace("heads = 2\n", "") +
                    "[grid]\nheads = 2, 3\n[sweep]\nthreads_per_run = 1\n")
    bad = os.path.join(d, "bad")
    check(qsweep(ini_bad, "--out", bad, "--slurm").returncode == 0, "--slurm for the failing grid")
    r = subprocess.run(["bash", os.path.join(bad, "qsweep.sbatch")], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, SLURM_ARRAY_TASK_ID="1"))
    marker = os.path.join(bad, "runs", "heads=3.exit")
    check(r.returncode == 2 and os.path.exists(marker), f"failing task: exit {r.returncode}, marker written")
    if os.path.exists(marker):
        text_m = open(marker).read().splitlines()
        check(text_m[0] == "exit 2" and "heads" in text_m[1], f"marker: {text_m}")
    log = open(os.path.join(bad, "logs", "heads=3.log")).read()
    check("== qsweep.sbatch: exit 2" in log, "the run's log has the task's footer")
    p = qsweep("--status", bad)
    check(re.search(r"heads=3\s+failed", p.stdout) is not None, f"--status shows the failure: {p.stdout}")

    # [slurm]: resources into #SBATCH lines, the section kept in DIR/qsweep.ini
    ini2 = write(os.path.join(d, "r.ini"), BASE.format(steps=30, ckpt=10).replace("[base]\n", "[base]\ndevice = cuda\n") +
                 "[grid]\nseed = 1, 2\n[slurm]\npartition = gpu,long\naccount = proj-1\ntime = 1-02:30:00\n"
                 "cpus-per-task = 4\nntasks = 2\nmpi = pmi2\n")
    out2 = os.path.join(d, "res")
    p = qsweep(ini2, "--out", out2, "--slurm")
    check(p.returncode == 0, f"--slurm with [slurm]: {p.stderr}")
    text2 = open(os.path.join(out2, "qsweep.sbatch")).read()
    for line in ("#SBATCH --partition=gpu,long", "#SBATCH --account=proj-1", "#SBATCH --time=1-02:30:00",
                 "#SBATCH --cpus-per-task=4", "#SBATCH --ntasks=2", "#SBATCH --gpus-per-task=1",
                 "launch=(srun --mpi=pmi2 --ntasks=2 --cpus-per-task=4)"):
        check(line + "\n" in text2, f"[slurm] script lacks {line!r}")
    cmds2 = text2.split("cmds=(\n", 1)[1].split("\n)\n", 1)[0].splitlines()
    check(len(cmds2) == 2 and all("--device cuda" in c and c.endswith("--threads 4'") for c in cmds2),
          f"cpus_per_task gives the threads per run on Slurm; device reaches qtrain: {cmds2}")
    rec = open(os.path.join(out2, "qsweep.ini")).read()
    check(rec.endswith("[slurm]\npartition = gpu,long\naccount = proj-1\ntime = 1-02:30:00\ncpus_per_task = 4\n"
                       "ntasks = 2\nmpi = pmi2\n"), f"qsweep.ini keeps [slurm]: {rec}")
    # [slurm] may change between submissions ([base] and [grid] may not)
    ini3 = write(os.path.join(d, "r3.ini"), open(ini2).read().replace("time = 1-02:30:00", "time = 45"))
    check(qsweep(ini3, "--out", out2, "--slurm").returncode == 0 and
          "#SBATCH --time=45\n" in open(os.path.join(out2, "qsweep.sbatch")).read(), "a new [slurm] into the same folder")
    # --status reads squeue's and sacct's output (the formats Slurm 22.05 prints; the real
    # thing is tests/slurm): fakes on PATH, for a folder with job 5 recorded
    fake = os.path.join(d, "fakebin")
    os.makedirs(fake, exist_ok=True)
    write(os.path.join(fake, "squeue"), "#!/bin/sh\nprintf '5|2|PENDING\\n5|3|RUNNING\\n'\n")
    write(os.path.join(fake, "sacct"), "#!/bin/sh\nprintf '5_0|COMPLETED\\n5_1|FAILED\\n5_[2-3]|PENDING\\n'\n")
    for n in ("squeue", "sacct"):
        os.chmod(os.path.join(fake, n), 0o755)
    write(os.path.join(out, "slurm.jobs"), "5 0-3\n")
    p = qsweep("--status", out, env=dict(os.environ, PATH=fake))
    rows = {l.split()[0]: l.split()[1:] for l in p.stdout.splitlines() if l.startswith("recipe=")}
    check(p.returncode == 0 and "note:" not in p.stdout, f"--status with squeue and sacct: {p.stdout} {p.stderr}")
    check(rows.get("recipe=bf16_seed=1", [""])[0] == "missing" and rows.get("recipe=bf16_seed=2", [""])[0] == "failed"
          and "Slurm says FAILED" in p.stdout and rows.get("recipe=fp8_seed=1", [""])[0] == "done"
          and rows.get("recipe=fp8_seed=2", [""])[0] == "running",
          f"--status: run file first (task 2 is done whatever squeue says), then squeue, then sacct: {rows}")
    p = qsweep("--status", out, env=dict(os.environ, PATH="/nonexistent"))
    check(p.returncode == 0 and "squeue did not answer" in p.stdout and "sacct did not answer" in p.stdout
          and "pending? squeue did not answer" in p.stdout, f"--status without Slurm's tools: {p.stdout}")
    os.remove(os.path.join(out, "slurm.jobs"))
    # --submit where there is no sbatch: bad input, nothing written
    out4 = os.path.join(d, "nosbatch")
    p = qsweep(ini, "--out", out4, "--submit", env=dict(os.environ, PATH="/nonexistent"))
    check(p.returncode == 2 and "sbatch is not on PATH" in p.stderr and not os.path.exists(out4),
          f"--submit without sbatch: {p.returncode} {p.stderr}")


def case_examples():
    """The documented examples parse, expand as their comments say, and point at the English corpus."""
    d = setup("examples")
    exp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "experiments")
    for name, n, first in [("study", 135, "model=pico_tokens_per_param=8_recipe=bf16_seed=1"),
                           ("ablation", 18, "recipe=nvfp4_seed=1"), ("quick", None, "recipe=bf16_seed=1"),
                           ("quick_study", 80, "model=pico_tokens_per_param=2_recipe=bf16_seed=1"),
                           ("quick_ablation", 12, "recipe=nvfp4_seed=1")]:
        ini = os.path.join(exp, name + ".ini")
        with open(ini) as f:
            check("data = ../data/english/english.txt\n" in f.read(), f"{name}.ini: data path")
        # --data: the corpus may not be built here; the file must still be valid
        p = qsweep(ini, "--out", os.path.join(d, name), "--dry-run", "--data", os.path.join(d, "corpus.txt"))
        runs = dry_lines(p.stdout)
        check(p.returncode == 0 and (n is None or len(runs) == n) and runs and runs[0][0] == first,
              f"{name}.ini: exit {p.returncode}, {len(runs)} runs ({p.stderr.strip()})")
    p = qsweep(os.path.join(exp, "ablation.ini"), "--out", os.path.join(d, "a"), "--dry-run", "--data",
               os.path.join(d, "corpus.txt"))
    recipes = [a[a.index("--recipe") + 1] for nm, a in dry_lines(p.stdout) if "data_seed" not in nm][::3]
    check(recipes == ["nvfp4", "nvfp4-rht", "nvfp4-sr", "nvfp4-2d", "nvfp4-naive", "nvfp4-naive,bf16-last=1"],
          f"ablation recipes {recipes}")
    # the study: every cell's steps follow its tokens per parameter; the grid is triangular
    p = qsweep(os.path.join(exp, "study.ini"), "--out", os.path.join(d, "s"), "--dry-run", "--data",
               os.path.join(d, "corpus.txt"))
    names = [nm for nm, _ in dry_lines(p.stdout)]
    check(not any(nm.startswith("model=micro_tokens_per_param=64") for nm in names) and
          any(nm.startswith("model=pico_tokens_per_param=64") for nm in names), "study.ini: triangular grid")
    check(sum("_data_seed=" in nm for nm in names) == 27, "study.ini: 27 noise twins (every bf16 run)")


def case_study():
    """Sizing by compute, the model axis, exclude, noise twins and the intervals of the summary: a tiny
    sweep run for real, every new summary column recomputed here from the run files (numpy, scipy)."""
    from scipy import stats
    d = setup("study")
    ini = write(os.path.join(d, "s.ini"), """[base]
data = corpus.txt
layers = 1
heads = 2
seq = 32
batch = 4
warmup = 5
lr = 5e-3
eval_every = 0
val_tokens = 2000
qerr_every = 0
ckpt_every = 0
prefetch = 2

[grid]
model = 12k, 40k
tokens_per_param = 0.5, 1
exclude = model=40k tokens_per_param=1
recipe = bf16, fp8
seed = 1, 2, 3

[sweep]
noise_floor = bf16
""")
    p = qsweep(ini, "--out", os.path.join(d, "dry"), "--dry-run")
    runs = dry_lines(p.stdout)
    check(p.returncode == 0 and len(runs) == 18 + 9, f"3 cells x 2 recipes x 3 seeds + 9 twins: {len(runs)} ({p.stderr})")
    argv = dict(runs)
    a = argv["model=12k_tokens_per_param=0.5_recipe=bf16_seed=1"]
    b = argv["model=40k_tokens_per_param=0.5_recipe=bf16_seed=1"]
    check(a[a.index("--dim") + 1] == "32" and b[b.index("--dim") + 1] == "64" and
          a[a.index("--tokens-per-param") + 1] == "0.5",
          f"model 12k -> --dim 32 (N 12,768), 40k -> --dim 64 (N 50,112) at 1 layer, 2 heads: {a} {b}")
    t = argv.get("model=12k_tokens_per_param=0.5_recipe=bf16_seed=1_data_seed=1001", [])
    check(t and t[t.index("--data-seed") + 1] == "1001" and t[t.index("--seed") + 1] == "1", f"twin argv {t}")
    check(not any(n.startswith("model=40k_tokens_per_param=1_") for n in argv), "excluded cell absent")
    out = os.path.join(d, "out")
    p = qsweep(ini, "--out", out, "-j", "2", timeout=600)
    check(p.returncode == 0, f"sweep: exit {p.returncode}: {p.stderr[-500:]}")
    check("noise floor" in p.stdout and "resolved" in p.stdout, f"stdout names intervals and the noise floor: {p.stdout}")
    rows = {r["name"]: r for r in read_csv(os.path.join(out, "summary.csv"))}
    val = {}
    for name, r in rows.items():
        with open_run(os.path.join(out, "runs", name + ".h5")) as f:
            at = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f.attrs.items()}
            val[name] = float(f["eval/val_loss"][-1])
            nsteps = len(f["train/step"])
            ih = at["init_param_hash"]
            bh = f["train/batch_hash"][:]
        N, L, C = int(at["params_nonembedding"]), int(at["layers"]), int(at["dim"])
        check(N == L * (12 * C * C + 13 * C) + 2 * C, f"{name}: N {N}")
        R = float(name.split("tokens_per_param=")[1].split("_")[0])
        check(nsteps == max(1, round(R * N / (4 * 32))), f"{name}: {nsteps} steps for R={R}, N={N}")
        check(close(float(r["epochs"]), float(at["epochs"]), 1e-6) and close(float(r["tokens_per_param_actual"]),
              float(at["tokens_per_param"]), 1e-6), f"{name}: epochs/tokens_per_param columns")
        check(r["noise_twin"] == ("1" if "data_seed=" in name else "0"), f"{name}: noise_twin column")
        if "data_seed=" in name:
            parent = name.split("_data_seed=")[0]
            with open_run(os.path.join(out, "runs", parent + ".h5")) as f:
                check(f.attrs["init_param_hash"] == ih, f"{name}: same initial weights as {parent}")
                check(not np.array_equal(f["train/batch_hash"][:], bh), f"{name}: other batches than {parent}")
            check(close(float(r["gap_pct"]), 100 * (val[name] - val[parent]) / val[parent], 1e-9) if parent in val
                  else True, f"{name}: gap to its run")
    groups = {g["group"]: g for g in read_h5_table(os.path.join(out, "summary.h5"), "recipes")}
    noise = {g["group"]: g for g in read_h5_table(os.path.join(out, "summary.h5"), "noise")}
    check(len(groups) == 6 and len(noise) == 3, f"{len(groups)} recipe groups, {len(noise)} noise groups")
    for gname, g in groups.items():
        cell = gname.split("_recipe=")[0]
        rec = gname.split("_recipe=")[1]
        gaps = []
        for sd in (1, 2, 3):
            r, b = f"{cell}_recipe={rec}_seed={sd}", f"{cell}_recipe=bf16_seed={sd}"
            gaps.append(100 * (val[r] - val[b]) / val[b])
        gaps = np.array(gaps)
        m = gaps.mean()
        if rec == "bf16":
            check(g["gap_ci_lo"] == 0 and g["gap_ci_hi"] == 0 and g["resolved"] == 0, f"{gname}: baseline interval")
            continue
        lo, hi = stats.t.interval(0.95, 2, loc=m, scale=stats.sem(gaps))
        check(close(g["gap_pct_mean"], m, 1e-9) and close(g["gap_ci_lo"], lo, 1e-7) and close(g["gap_ci_hi"], hi, 1e-7),
              f"{gname}: [{g['gap_ci_lo']}, {g['gap_ci_hi']}] vs scipy [{lo}, {hi}]")
        check(g["resolved"] == int(lo > 0 or hi < 0) and g["ci_method"] == "t", f"{gname}: resolved/method")
        for sd in (1, 2, 3):
            row = rows[f"{cell}_recipe={rec}_seed={sd}"]
            check(close(row["gap_ci_lo"], g["gap_ci_lo"], 1e-9) and close(row["gap_ci_hi"], g["gap_ci_hi"], 1e-9) and
                  int(row["resolved"]) == g["resolved"], f"{gname}: summary.csv carries the group's interval")
    for gname, g in noise.items():
        check(gname.endswith("_data_seed") and g["n_seeds"] == 3, f"noise group {gname}")
        cell = gname.split("_recipe=")[0]
        tw = [100 * (val[f"{cell}_recipe=bf16_seed={sd}_data_seed={1000 + sd}"] - val[f"{cell}_recipe=bf16_seed={sd}"])
              / val[f"{cell}_recipe=bf16_seed={sd}"] for sd in (1, 2, 3)]
        check(close(g["gap_pct_rms"], float(np.sqrt(np.mean(np.square(tw)))), 1e-9), f"{gname}: rms")
    md = open(os.path.join(out, "summary.md")).read()
    check("## Noise floor" in md and "epochs" in md and "[95% CI]" in md, "summary.md: intervals, epochs, noise floor")


CASES = {"parse": case_parse, "examples": case_examples, "study": case_study, "grid": case_grid, "dryrun": case_dryrun, "run": case_run, "resume": case_resume,
         "fail": case_fail, "lock": case_lock, "summarize": case_summarize, "slurm": case_slurm}
if CASE not in CASES:
    sys.exit(f"unknown case {CASE}; cases: {', '.join(CASES)}")
CASES[CASE]()
print(f"{CASE}: {checks - failures}/{checks} checks passed")
sys.exit(1 if failures else 0)
