#!/usr/bin/env python3
"""test_plan.py — qsweep --plan. One case per ctest entry:

    test_plan.py CASE QSWEEP QTRAIN TEST_PLAN WORKDIR

Cases: parse (good files expand with --dry-run; a table of bad [plan]
sections: one `FILE:LINE: message` line, exit 2, nothing created), spearman
(qpl_spearman_boot through test_plan's spearman mode against
scipy.stats.spearmanr, with ties, and its bootstrap over seeds redrawn here
with the same generator, splitmix64), run (a tiny plan end to end: the plan
line's format, plan.md/csv and the figure, every gap of plan.csv recomputed
with h5py from the run files, a rerun that starts no run, the recipe expanded
by qtrain --explain)."""
import math
import os
import re
import shutil
import signal
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import TINY_BASE, Checks, case_folder, read_csv, write_text  # noqa: E402

CASE, QSWEEP, QTRAIN, TOOL, WORK = sys.argv[1:6]
check = Checks()

BASE = TINY_BASE + """batch = 4
steps = {steps}
warmup = 5
lr = 5e-3
eval_every = {steps}
eval_batches = 2
qerr_every = 10
"""

PLAN = """[plan]
base = nvfp4|bf16-last=0
fallback = bf16
granularity = block.gemm
budget = {budget}
seeds = {seeds}
verify_seeds = 4, 5
max_runs = {max_runs}
"""


def qsweep(*args, cwd=None):
    return subprocess.run([QSWEEP, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def case_parse():
    d = case_folder(WORK, "parse")
    good = write_text(os.path.join(d, "good.ini"), BASE.format(steps=20) + PLAN.format(budget=1, max_runs=60, seeds="1, 2, 3"))
    p = qsweep("--plan", good, "--out", os.path.join(d, "out"), "--dry-run")
    check(p.returncode == 0, f"good file: exit {p.returncode}: {p.stderr}")
    check("8 parts (block.gemm)" in p.stdout, f"good file: 8 parts: {p.stdout}")
    check("at most 43 runs" in p.stdout, f"good file: run bound 2x3 + 8x3 + 3x3 + 2x2: {p.stdout}")
    check(not os.path.exists(os.path.join(d, "out")), "dry run created its folder")
    # the other granularities: blocks (2 parts) and block x GEMM x pass (24); the
    # fallback-everywhere recipe of each expands with qtrain --explain to BF16 everywhere
    for gran, n in (("block", 2), ("block.gemm.pass", 24)):
        g = write_text(os.path.join(d, f"gran-{gran}.ini"), BASE.format(steps=20) + PLAN.format(
            budget=1, max_runs=200, seeds="1, 2, 3").replace("granularity = block.gemm", f"granularity = {gran}"))
        p = qsweep("--plan", g, "--out", os.path.join(d, f"o-{gran}"), "--dry-run")
        check(p.returncode == 0 and f"{n} parts ({gran})" in p.stdout, f"{gran}: {n} parts: {p.stdout} {p.stderr}")
        allr = re.search(r"fallback everywhere: --recipe (\S+)", p.stdout)
        if check(allr is not None, f"{gran}: the fallback-everywhere recipe printed"):
            e = subprocess.run([QTRAIN, "--recipe", allr.group(1), "--layers", "2", "--heads", "2", "--dim", "32",
                                "--explain"], capture_output=True, text=True, timeout=60)
            rules = [ln.split("=", 1)[1] for ln in e.stdout.splitlines() if "=" in ln and not ln.startswith("#")]
            check(e.returncode == 0 and rules and all(r == "bf16" for r in rules),
                  f"{gran}: {allr.group(1)} is BF16 everywhere: {e.returncode} {e.stdout[:400]} {e.stderr}")
    # a grid axis and two base recipes: a plan per combination
    multi = write_text(os.path.join(d, "multi.ini"),
                  BASE.format(steps=20).replace("dim = 32\n", "") + "[grid]\ndim = 32, 64\n" +
                  PLAN.format(budget=1, max_runs=60, seeds="1, 2, 3").replace("nvfp4|bf16-last=0", "nvfp4|bf16-last=0, mxfp4"))
    p = qsweep("--plan", multi, "--out", os.path.join(d, "m"), "--dry-run")
    check(p.returncode == 0 and p.stdout.count("8 parts") == 4, f"grid x 2 bases: 4 plans: {p.returncode} {p.stdout} {p.stderr}")
    check("dim=64_base=mxfp4" in p.stdout, f"grid: the cell's folder named: {p.stdout}")
    plan_line = PLAN.format(budget=1, max_runs=60, seeds="1, 2, 3").splitlines()
    bad = [
        ("granularity = layer", "granularity expects block, block.gemm or block.gemm.pass, not 'layer'"),
        ("budget = 0", "budget expects a number in (0, 100], not '0' (a percentage)"),
        ("budget = -1", "budget expects a number in (0, 100], not '-1'"),
        ("budget = 1%", "budget expects a number in (0, 100], not '1%'"),
        ("budget = nan", "budget expects a number in (0, 100], not 'nan'"),
        ("seeds = 1", "seeds: at least 2 seeds"),
        ("seeds = 1, 1", "seeds: seed 1 twice"),
        ("seeds = 1, x", "seeds: 'x' is not a seed"),
        ("seeds = 1,, 2", "seeds: an empty value"),
        ("base = nvfp4,", "base: an empty value"),
        ("verify_seeds = 3, 9", "verify_seeds: seed 3 is also a search seed"),
        ("max_runs = 0", "max_runs expects an integer in 1..100000, not '0'"),
        ("fallback = bf17", "fallback: 'bf17' is not a format name"),
        ("base = nvfp5", "base:"),
        ("predictor = magic", "predictor: 'magic' is not one of auto, wgrad_error"),
        ("attribution = maybe", "attribution expects on or off, not 'maybe'"),
        ("colour = red", "unknown key 'colour' in [plan] (valid: base, fallback, "),
        ("budget = 2", "'budget' set twice in [plan] (first at line"),
    ]
    for i, (line, want) in enumerate(bad):
        key = line.split("=")[0].strip()
        lines = [ln for ln in plan_line if not ln.startswith(key + " ") or key == "budget" and "twice" in want]
        lines.append(line)
        path = write_text(os.path.join(d, f"bad{i}.ini"), BASE.format(steps=20) + "\n".join(lines) + "\n")
        out = os.path.join(d, f"bad{i}")
        p = qsweep("--plan", path, "--out", out, "-j", "2")
        lineno = BASE.format(steps=20).count("\n") + len(lines)
        msg = p.stderr.strip()
        check(p.returncode == 2, f"{line}: exit {p.returncode}")
        check(msg.count("\n") == 0, f"{line}: one line: {msg!r}")
        check(msg.startswith(f"qsweep: {path}:{lineno}: ") and want in msg, f"{line}: {msg!r} lacks line {lineno} / {want!r}")
        check(not os.path.exists(out), f"{line}: folder created")
    # missing keys and misplaced ones
    missing = [
        (BASE.format(steps=20), "no [plan] section"),
        (BASE.format(steps=20) + "[plan]\nbase = nvfp4\n", "[plan] needs granularity"),
        (BASE.format(steps=20) + "recipe = fp8\n" + PLAN.format(budget=1, max_runs=9, seeds="1, 2, 3"), "[base] recipe: a plan sets"),
        (BASE.format(steps=20) + "[grid]\nseed = 1, 2\n" + PLAN.format(budget=1, max_runs=9, seeds="1, 2, 3"), "[grid] seed: a plan sets it"),
        (BASE.format(steps=20) + "[grid]\nweight_decay = 0,, 0.1\n" + PLAN.format(budget=1, max_runs=9, seeds="1, 2, 3"),
         "[grid] weight_decay: an empty value"),
        (BASE.format(steps=20) + "[grid] weight_decay = 0\n" + PLAN.format(budget=1, max_runs=9, seeds="1, 2, 3"),
         "a section header is '[name]' alone on its line"),
        (BASE.format(steps=20) + "[sweep]\nattribute = blocks\n" + PLAN.format(budget=1, max_runs=9, seeds="1, 2, 3"),
         "[sweep] attribute has no place in a plan file"),
        (BASE.format(steps=20) + PLAN.format(budget=1, max_runs=9, seeds="1, 2, 3").replace("seeds = 1, 2, 3\n", ""), "[plan] needs seeds"),
        (BASE.format(steps=20) + PLAN.format(budget=1, max_runs=9, seeds="1, 2, 3") + "predictor = auto\nattribution = off\n",
         "attribution = off needs a predictor"),
        (BASE.format(steps=20).replace("layers = 2", "layers = 2\nheads = 3"), "heads"),
    ]
    for i, (text, want) in enumerate(missing):
        if "[plan]" not in text:
            text += ""
        path = write_text(os.path.join(d, f"miss{i}.ini"), text if "[plan]" in text or "no [plan]" in want
                     else text + PLAN.format(budget=1, max_runs=9, seeds="1, 2, 3"))
        p = qsweep("--plan", path, "--out", os.path.join(d, f"miss{i}"))
        msg = p.stderr.strip()
        check(p.returncode == 2 and msg.count("\n") == 0 and want in msg, f"{want}: exit {p.returncode}: {msg!r}")
    # the shipped plans: valid, with the run bounds their comments give
    exp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "experiments")
    corpus = os.path.join(d, "corpus.txt")
    p = qsweep("--plan", os.path.join(exp, "plan_quick.ini"), "--out", os.path.join(d, "pq"), "--dry-run", "--data", corpus)
    check(p.returncode == 0 and "8 parts (block.gemm), at most 45 runs" in p.stdout, f"plan_quick.ini: {p.returncode} {p.stdout} {p.stderr}")
    p = qsweep("--plan", os.path.join(exp, "plan.ini"), "--out", os.path.join(d, "pp"), "--dry-run", "--data", corpus)
    bounds = [int(x) for x in re.findall(r"at most (\d+) runs", p.stdout)]
    check(p.returncode == 0 and bounds == [94, 94, 114, 114] and sum(bounds) == 416,
          f"plan.ini: 4 plans of 94/94/114/114 runs: {p.returncode} {bounds} {p.stderr}")
    # the command line
    p = qsweep("--plan", good, "--slurm")
    check(p.returncode == 2 and "--plan FILE takes no" in p.stderr, f"--plan --slurm: {p.returncode} {p.stderr}")
    p = qsweep("--plan", os.path.join(d, "nope.ini"))
    check(p.returncode == 2 and "nope.ini" in p.stderr, f"missing file: {p.returncode} {p.stderr}")


def splitmix(state):
    mask = (1 << 64) - 1
    while True:
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        yield z ^ (z >> 31)


def case_spearman():
    from scipy.stats import spearmanr
    rng = np.random.default_rng(11)
    B = 300
    for trial in range(12):
        nparts, nseeds = int(rng.integers(4, 20)), int(rng.integers(2, 7))
        score = rng.normal(size=nparts)
        if trial % 3 == 0:  # ties, as position predictors have
            score = np.round(score)
        ben = rng.normal(size=(nseeds, nparts)) + 0.7 * score
        if trial % 4 == 1:
            ben = np.round(ben, 1)
        text = f"{nparts} {nseeds}\n" + " ".join(repr(float(x)) for x in score) + "\n" + \
            "\n".join(" ".join(repr(float(x)) for x in row) for row in ben) + "\n"
        p = subprocess.run([TOOL, "spearman", str(B)], input=text, capture_output=True, text=True, timeout=60)
        if not check(p.returncode == 0, f"trial {trial}: tool exit {p.returncode} {p.stderr}"):
            continue
        lines = p.stdout.split("\n")
        rho, lo, hi = (float(x) for x in lines[0].split())
        order = [int(x) for x in lines[1].split()]
        want = spearmanr(score, ben.mean(axis=0)).statistic
        check(abs(rho - want) < 1e-12, f"trial {trial}: rho {rho} vs scipy {want}")
        # the bootstrap: resample seeds with the same generator, scipy's rho each
        gen = splitmix(0x5EED)
        rs = []
        for _ in range(B):
            pick = [next(gen) % nseeds for _ in range(nseeds)]
            r = spearmanr(score, ben[pick].mean(axis=0)).statistic
            if np.isfinite(r):
                rs.append(r)
        wlo, whi = np.percentile(rs, [2.5, 97.5])
        check(abs(lo - wlo) < 1e-12 and abs(hi - whi) < 1e-12, f"trial {trial}: [{lo}, {hi}] vs [{wlo}, {whi}]")
        want_order = sorted(range(nparts), key=lambda i: (-score[i], i))
        check(order == want_order, f"trial {trial}: order {order} vs {want_order}")


def gaps_from_runs(folder, rid, seeds, fb="all"):
    out = []
    for s in seeds:
        with h5py.File(os.path.join(folder, "r", rid, "runs", f"seed={s}.h5"), "r") as f:
            v = float(f["eval/val_loss"][-1])
        with h5py.File(os.path.join(folder, "r", fb, "runs", f"seed={s}.h5"), "r") as f:
            b = float(f["eval/val_loss"][-1])
        out.append(100 * (v - b) / b)
    return np.array(out)


USES = [("fprop", "x"), ("fprop", "w"), ("dgrad", "dy"), ("dgrad", "w"), ("wgrad", "dy"), ("wgrad", "x")]
GEMMS = ("qkv", "attproj", "fc", "fcproj")


def explain_formats(text, layers):
    """(block, gemm, pass, operand) -> format, from qtrain --explain's rules
    (BLOCKS[.GEMMS].PASS.OPERAND=FORMAT[:OPT...]; BLOCKS: Ln, Ln-m joined by +)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or "=" not in line:
            continue
        target, fmt = line.split("=", 1)
        sel = target.split(".")
        blocks = set()
        for item in sel[0].split("+"):
            a, _, b = item[1:].partition("-")
            blocks.update(range(int(a), int(b or a) + 1))
        gemms = sel[1].split("+") if len(sel) == 4 else GEMMS
        for blk in blocks:
            for g in gemms:
                out[(blk, g, sel[-2], sel[-1])] = fmt
    return out


def case_run():
    from scipy import stats
    d = case_folder(WORK, "run")
    ini = write_text(os.path.join(d, "plan.ini"), BASE.format(steps=20) + PLAN.format(budget=2, max_runs=80, seeds="1, 2"))
    out = os.path.join(d, "out")
    p = qsweep("--plan", ini, "--out", out, "-j", "2")
    check(p.returncode == 0, f"plan (budget 2% over gaps of about 0.5%): exit {p.returncode}: {p.stderr[-2000:]}")
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("plan")]
    check(len(lines) == 1, f"one plan line: {p.stdout}")
    line = lines[0] if lines else ""
    m = re.fullmatch(r"plan: (\S+)  gap ([+-]\d+\.\d\d)% \[([+-]\d+\.\d\d), ([+-]\d+\.\d\d)\]  budget \+2%  "
                     r"fallback (\d+)/(\d+) parts  \((\d+) runs, (\d+\.\d) CPU-minutes\)", line)
    if p.returncode == 0:
        check(m is not None, f"plan line format: {line!r}")
    else:
        check(line.startswith("plan: no recipe with fewer than all 8 parts") and "best found" in line,
              f"unmet line: {line!r}")
    for name in ("plan.md", "plan.csv", "plan_parts.csv", "plan_predictors.csv", "plan.gp", "plan_fig.dat"):
        check(os.path.exists(os.path.join(out, name)), f"{name} written")
    if shutil.which("gnuplot"):
        check(os.path.exists(os.path.join(out, "plan.png")), "plan.png drawn")
    md = open(os.path.join(out, "plan.md")).read()
    check("| wgrad_error" in md and "| position" not in md and "Spearman" in md, "plan.md: the predictor table")
    check(line in md, "plan.md holds the plan line")
    # each part's predictors recomputed from the base run of the first seed (h5py): the error ones from
    # /quant/error, the block-scale ones from /quant/block_scales (every pass and operand of the part's GEMM)
    import h5py
    with h5py.File(os.path.join(out, "r", "base", "runs", "seed=1.h5"), "r") as f:
        qe, bs = f["quant/error"][:], f["quant/block_scales"][:]
    def mean_of(tab, part, col, where=lambda r: True):
        blk, gemm = part.split(".")
        v = [float(r[col]) for r in tab if int(r["layer"]) == int(blk[1:]) and r["gemm"].decode() == gemm and where(r)
             and math.isfinite(float(r[col]))]
        return sum(v) / len(v) if v else float("nan")
    want_cols = {"wgrad_error": (qe, "rel_l2", lambda r: r["pass"] == b"wgrad"),
                 "block_scale_spread": (bs, "block_scale_log2_std", lambda r: True),
                 "block_dynamic_range": (bs, "block_dynamic_range_max_log2", lambda r: True),
                 "elems_flushed": (bs, "elems_flushed_frac", lambda r: True)}
    prow = read_csv(os.path.join(out, "plan_parts.csv"))
    check(len(prow) == 8 and all(k in prow[0] for k in want_cols), f"plan_parts.csv columns: {list(prow[0]) if prow else []}")
    for r in prow:
        for k, (tab, col, where) in want_cols.items():
            want = mean_of(tab, r["part"], col, where)
            check(math.isfinite(want) and abs(float(r.get(k, "nan")) - want) <= 1e-8 * max(1.0, abs(want)),
                  f"{r['part']} {k}: {r.get(k)} vs {want} recomputed from the run file")
    check("| block_scale_spread" in md and "| block_dynamic_range" in md and "not in the run file" not in md,
          "plan.md: the block-scale predictors")
    rows = read_csv(os.path.join(out, "plan.csv"))
    # every gap and interval recomputed from the run files (h5py, scipy's t)
    for r in rows:
        seeds = [int(s) for s in r["seeds"].split()]
        g = gaps_from_runs(out, r["id"], seeds)
        check(int(r["n_seeds"]) == len(seeds), f"{r['id']}: n_seeds")
        close = lambda a, b: abs(a - b) <= 1e-8 * max(1.0, abs(b))  # noqa: E731 (the CSV's 10 digits)
        check(close(float(r["gap_pct_mean"]), g.mean()), f"{r['id']} {r['stage']}: mean {r['gap_pct_mean']} vs {g.mean()}")
        if r["id"] != "all":
            lo, hi = stats.t.interval(0.95, len(g) - 1, loc=g.mean(), scale=g.std(ddof=1) / math.sqrt(len(g)))
            check(close(float(r["gap_ci_hi"]), hi) and close(float(r["gap_ci_lo"]), lo),
                  f"{r['id']}: interval [{r['gap_ci_lo']}, {r['gap_ci_hi']}] vs [{lo}, {hi}]")
            check(int(r["meets_budget"]) == (hi <= 2.0), f"{r['id']}: meets_budget")
    attr = [r for r in rows if r["stage"] == "attribution"]
    check(len(attr) == 8, f"8 attribution recipes: {len(attr)}")
    chosen = [r for r in rows if r["chosen"] == "1"]
    if p.returncode == 0 and m:
        check(len(chosen) == 1 and chosen[0]["stage"] == "verify", f"one chosen row, verified: {chosen}")
        c = chosen[0]
        check(c["recipe"] == m.group(1), "the plan line's recipe is the chosen row's")
        check(float(m.group(4)) <= 2.0 and abs(float(c["gap_ci_hi"]) - float(m.group(4))) < 0.006,
              "the printed upper bound is the verification's and within the budget")
        check(int(m.group(5)) == int(c["k"]) and m.group(6) == "8", "K/M")
        # every fewer-part search probe missed the budget at the search seeds (the bisection's premise)
        for r in rows:
            if r["stage"] == "search" and int(r["k"]) < int(c["k"]) and r["seeds"] == "1 2":
                check(r["meets_budget"] == "0", f"{r['id']}: a smaller set met the budget but was not chosen")
        # the recipe expands at the plan's model
        e = subprocess.run([QTRAIN, "--recipe", m.group(1), "--layers", "2", "--heads", "2", "--dim", "32", "--explain"],
                           capture_output=True, text=True, timeout=60)
        check(e.returncode == 0 and "L0" in e.stdout, f"--explain: {e.returncode} {e.stdout[:300]} {e.stderr}")
        fmt = explain_formats(e.stdout, 2)
        parts = c["parts"].split("+")
        for b in range(2):
            for g in ("qkv", "attproj", "fc", "fcproj"):
                want = "bf16" if f"L{b}.{g}" in parts else "nvfp4"
                got = {fmt.get((b, g, ps, o), "?").split(":")[0].replace("-2d", "") for ps, o in USES}
                check(got == {want}, f"--explain: L{b}.{g} is {got}, the plan says {want}")
    # the paper's section from this plan: verdicts from intervals, the wording rule of paper/verdicts.py
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    gen = subprocess.run([sys.executable, os.path.join(repo, "paper", "gen_plan.py"), "--plan", out, "--out",
                          os.path.join(d, "gen")], capture_output=True, text=True, timeout=60)
    check(gen.returncode == 0, f"gen_plan.py: {gen.returncode} {gen.stderr}")
    sys.path.insert(0, os.path.join(repo, "paper"))
    import verdicts  # noqa: E402
    body = open(os.path.join(d, "gen", "plan.tex")).read() if gen.returncode == 0 else ""
    check(verdicts.unqualified(body) == [], f"plan.tex wording: {verdicts.unqualified(body)}")
    check("is unresolved here (2 search seeds: a verdict needs 3)" in body, "plan.tex: no verdict from 2 seeds")
    if chosen:
        c = chosen[0]
        g = f"{float(c['gap_pct_mean']):+.2f}% [{float(c['gap_ci_lo']):+.2f}, {float(c['gap_ci_hi']):+.2f}]"
        check(g.replace("%", r"\%") in body and f"{c['k']}/8" in body, f"plan.tex gives the verified gap {g}")
    runs = int(m.group(7)) if m else None
    # stopped (SIGINT) while its first runs are in flight: exit 130, one line that says so and how to
    # resume, no plan files; the same command then resumes it (the main plan's resume is checked below)
    stop_out = os.path.join(d, "stopped")
    sp = subprocess.Popen([QSWEEP, "--plan", ini, "--out", stop_out, "-j", "2"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    seen = []
    for ln in sp.stderr:
        seen.append(ln)
        if "2 running" in ln:
            sp.send_signal(signal.SIGINT)
            break
    rest_out, rest_err = sp.communicate(timeout=120)
    err = "".join(seen) + rest_err
    check(sp.returncode == 130, f"stopped plan: exit {sp.returncode}: {err[-600:]}")
    check(f"plan stopped after" in err and f"the same command resumes it from {stop_out}" in err
          and "plan finished" not in err and "plan:" not in rest_out, f"stopped plan's message: {err[-600:]}")
    check(err.count("resume") == 1, f"one line says how to resume: {err[-600:]}")
    check(not os.path.exists(os.path.join(stop_out, "plan.md")), "a stopped plan writes no plan.md")
    # resume: the same command starts no run and prints the same line
    nfiles = sum(len(fs) for _, _, fs in os.walk(os.path.join(out, "r")))
    p2 = qsweep("--plan", ini, "--out", out, "-j", "2")
    check(p2.returncode == p.returncode, f"rerun exit {p2.returncode}")
    line2 = [ln for ln in p2.stdout.splitlines() if ln.startswith("plan")]
    check(line2 and line2[0] == line, f"rerun prints the same line: {line2} vs {line!r}")
    check("running" not in p2.stderr and "1 running" not in p2.stderr, f"rerun started runs: {p2.stderr[-500:]}")
    check(sum(len(fs) for _, _, fs in os.walk(os.path.join(out, "r"))) == nfiles, "rerun made no new files")
    if runs is not None:
        check(runs == len({(r["id"], s) for r in rows for s in r["seeds"].split()}), f"N runs = distinct runs: {runs}")
    # a budget nothing but the fallback everywhere meets: exit 3, the best found, files still written
    tight = write_text(os.path.join(d, "tight.ini"), BASE.format(steps=20) + PLAN.format(budget=0.0001, max_runs=80, seeds="1, 2"))
    p3 = qsweep("--plan", tight, "--out", out, "-j", "2")
    check(p3.returncode == 3, f"unmet budget: exit {p3.returncode}: {p3.stderr[-800:]}")
    check("no recipe with fewer than all 8 parts in the fallback was verified within the budget +0.0001%" in p3.stdout
          and "best found" in p3.stdout, f"unmet: the message and the best found: {p3.stdout}")
    check("warning" not in p3.stderr and os.path.getsize(os.path.join(out, "plan.png")) > 0 and
          "verification seeds" not in open(os.path.join(out, "plan.gp")).read(),
          f"unmet: the figure leaves out the series it has no points for, and gnuplot says nothing: {p3.stderr[-400:]}")
    # the run cap: exit 3 with the cap named
    capped = write_text(os.path.join(d, "cap.ini"), BASE.format(steps=20) + PLAN.format(budget=0.0001, max_runs=21, seeds="1, 2"))
    p4 = qsweep("--plan", capped, "--out", out, "-j", "2")
    check(p4.returncode == 3 and "the run cap (max_runs = 21) is reached" in p4.stderr, f"cap: {p4.returncode} {p4.stderr[-600:]}")
    # DIR/plan_base.ini is the canonical [base] and grid, text alone (no byte of anything else), and a
    # plan file that differs only in its comments and [plan] (the budget above) resumes into the folder
    with open(os.path.join(out, "plan_base.ini"), "rb") as f:
        ident = f.read()
    tail = ident.decode("utf-8", "replace").split("\n[grid]\n", 1)[-1]
    check(b"\0" not in ident and ident.startswith(b"# written by qsweep") and
          all(ln.startswith("# plan axis ") for ln in tail.splitlines()), f"plan_base.ini: {ident!r}")
    commented = write_text(os.path.join(d, "commented.ini"), "# " + "a longer header than before " * 40 + "\n" +
                           BASE.format(steps=20) + PLAN.format(budget=0.0001, max_runs=80, seeds="1, 2"))
    p6 = qsweep("--plan", commented, "--out", out, "-j", "2")
    check(p6.returncode == 3 and "another plan file" not in p6.stderr, f"comments changed: {p6.returncode} {p6.stderr[-400:]}")
    # another [base] into the same folder: refused, nothing run (its runs would be someone else's)
    other = write_text(os.path.join(d, "other.ini"), BASE.format(steps=21) + PLAN.format(budget=2, max_runs=80, seeds="1, 2"))
    p5 = qsweep("--plan", other, "--out", out, "-j", "2")
    check(p5.returncode == 2 and "holds the runs of another plan file's [base]" in p5.stderr and p5.stderr.count("\n") == 1,
          f"another [base]: {p5.returncode} {p5.stderr}")


CASES = {"parse": case_parse, "spearman": case_spearman, "run": case_run}
os.makedirs(WORK, exist_ok=True)
CASES[CASE]()
sys.exit(check.summary(f"plan_{CASE}"))
