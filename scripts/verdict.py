#!/usr/bin/env python3
"""verdict.py — a sweep's result in plain language, computed from its summary.

    scripts/verdict.py SWEEPDIR

Reads SWEEPDIR/summary.h5 (written by qsweep: the baseline recipe as the
attribute "baseline", the group table /recipes with each recipe's gap to the
baseline and its 95% interval, the run table /runs with every run's gap) and
prints one sentence per comparison, each with its interval, in the words of
paper/verdicts.py (the paper's sentences: a gap whose interval excludes 0 is
a cost, or a gain, "resolved"; one whose interval includes 0 is
"unresolved"):

  - every recipe against the baseline, from /recipes as qsweep computed it
    (gap: the final validation loss's paired gap, in % of the baseline's);
  - each recipe against the one before it in the table (fp8 -> nvfp4 ->
    mxfp4), every other axis equal: the difference of their gaps in
    percentage points, paired by seed (both runs of a seed share initial
    weights and batches), with its Student t 95% interval — the paired
    t-test's, the rule qsweep's contrast table uses.

Nothing is hard-coded: the recipes, numbers and verdicts all come from the
summary. Exit 0, or 2 with one line when the summary cannot be read.
Needs h5py and scipy (Debian: python3-h5py, python3-scipy)."""
import math
import os
import sys


def fail(msg):
    print(f"verdict.py: {msg}", file=sys.stderr)
    sys.exit(2)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def shout(recipe):
    """The name as people write it: fp8 -> FP8, nvfp4 -> NVFP4."""
    return recipe.upper()


def sentences():
    """paper/verdicts.py: the sentences the paper judges its numbers with, so the demo and the
    paper say a result the same way."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "paper"))
    import verdicts
    return verdicts


def paired(v, a, b, diffs, where):
    """b against a: the mean of the per-seed differences of their gaps with its Student t interval."""
    n = len(diffs)
    mean = sum(diffs) / n
    lo = hi = math.nan
    if n > 1:
        from scipy import stats
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
        h = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
        lo, hi = mean - h, mean + h
    return where + v.compare(shout(b), shout(a), mean, lo, hi, n)


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr if len(sys.argv) != 2 else sys.stdout)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    path = os.path.join(sys.argv[1], "summary.h5")
    if not os.path.exists(path):
        fail(f"{path}: no such file (qsweep writes it when a sweep is done, or with --summarize)")
    try:
        import h5py
    except ImportError:
        fail("needs h5py (Debian: python3-h5py)")
    try:
        with h5py.File(path, "r") as f:
            base = text(f.attrs["baseline"])
            groups = [{k: (text(r[k]) if r.dtype[k].kind in "SO" else r[k].item()) for k in r.dtype.names}
                      for r in f["recipes"][:]]
            runs = [{k: (text(r[k]) if r.dtype[k].kind in "SO" else r[k].item()) for k in r.dtype.names}
                    for r in f["runs"][:]]
    except (OSError, KeyError) as e:
        fail(f"{path}: not a qsweep summary ({e})")
    if not groups or "recipe" not in groups[0]:
        fail(f"{path}: no recipe axis: nothing to compare")
    # the other axes: /recipes' text columns but the group's name and its interval's method (qs_report.c)
    axes = [k for k, v in groups[0].items() if isinstance(v, str) and k not in ("group", "recipe", "ci_method")]

    def others(row):
        return tuple(row[k] for k in axes)

    # per (other axes, recipe): the gap of every done run by seed
    gaps = {}
    for r in runs:
        if r.get("noise_twin", 0) or r.get("block", -1) >= 0 or r["status"] != "done":
            continue
        if isinstance(r["gap_pct"], float) and not math.isnan(r["gap_pct"]):
            gaps.setdefault((others(r), r["recipe"]), {})[r["seed"]] = r["gap_pct"]
    v = sentences()
    # with several cells (other axes), each line starts with its cell
    several = len({others(g) for g in groups}) > 1
    prev = {}
    for g in groups:
        rec, key = g["recipe"], others(g)
        if rec == base:
            continue
        where = " ".join(f"{k}={x}" for k, x in zip(axes, key)) + ": " if several else ""
        print(where + v.gap(shout(rec), g["gap_pct_mean"], g["gap_ci_lo"], g["gap_ci_hi"], g["n_seeds"],
                    base=shout(base)))
        if key in prev:
            a = prev[key]
            ga, gb = gaps.get((key, a), {}), gaps.get((key, rec), {})
            seeds = sorted(set(ga) & set(gb))
            if seeds:
                print(paired(v, a, rec, [gb[s] - ga[s] for s in seeds], where))
        prev[key] = rec


if __name__ == "__main__":
    main()
