#!/usr/bin/env python3
"""verdict.py — a sweep's result in plain language, computed from its summary.

    scripts/verdict.py SWEEPDIR

Reads SWEEPDIR/summary.h5 (written by qsweep: the baseline recipe as the
attribute "baseline", the group table /recipes with each recipe's gap to the
baseline and its 95% interval, the run table /runs with every run's gap) and
prints one line per comparison, each with its interval and whether the
interval excludes 0 ("resolved") or not ("unresolved"):

  - every recipe against the baseline, from /recipes as qsweep computed it
    (gap: the final validation loss's paired gap, in % of the baseline's);
  - each recipe against the one before it in the table (fp8 -> nvfp4 ->
    mxfp4), every other axis equal: the difference of their gaps in
    percentage points, paired by seed (both runs of a seed share initial
    weights and batches), with its Student t 95% interval — the paired
    t-test's, the same rule qsweep's contrast table uses.

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


def interval(lo, hi):
    return f"[{lo:+.2f}, {hi:+.2f}]"


def against_baseline(recipe, base, mean, lo, hi, resolved, nseeds, where):
    if math.isnan(mean):
        return f"{shout(recipe)} vs {shout(base)}{where}: no finished pair of runs, no verdict."
    if math.isnan(lo):
        return f"{shout(recipe)} vs {shout(base)}{where}: {mean:+.2f}% with {nseeds} seed(s): no interval, no verdict."
    if not resolved:
        return (f"{shout(recipe)} vs {shout(base)}{where}: {mean:+.2f}% {interval(lo, hi)}: unresolved — "
                f"{nseeds} seeds cannot tell them apart.")
    more = "more" if mean > 0 else "less"
    return (f"{shout(recipe)} costs {abs(mean):.2f}% {more} loss than {shout(base)}{where} {interval(lo, hi)}: "
            "resolved.")


def paired(a, b, diffs, where):
    """b against a: the mean of the per-seed differences with its t interval."""
    from scipy import stats
    n = len(diffs)
    mean = sum(diffs) / n
    if n < 2:
        return f"{shout(b)} vs {shout(a)}{where}: {mean:+.2f} points with {n} paired seed: no interval, no verdict."
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    h = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    lo, hi = mean - h, mean + h
    if lo <= 0 <= hi:
        return (f"{shout(b)} vs {shout(a)}{where}: {mean:+.2f} points {interval(lo, hi)}: unresolved — "
                f"{n} seeds cannot tell them apart.")
    more = "more" if mean > 0 else "less"
    return f"{shout(b)} costs {abs(mean):.2f} points {more} than {shout(a)}{where} {interval(lo, hi)}: resolved."


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr if len(sys.argv) != 2 else sys.stdout)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    path = os.path.join(sys.argv[1], "summary.h5")
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
    # with several cells (other axes), each line names its cell
    several = len({others(g) for g in groups}) > 1
    prev = {}
    for g in groups:
        rec, key = g["recipe"], others(g)
        if rec == base:
            continue
        where = f" at {' '.join(f'{k}={v}' for k, v in zip(axes, key))}" if several else ""
        print(against_baseline(rec, base, g["gap_pct_mean"], g["gap_ci_lo"], g["gap_ci_hi"], g["resolved"],
                               g["n_seeds"], where))
        if key in prev:
            a = prev[key]
            ga, gb = gaps.get((key, a), {}), gaps.get((key, rec), {})
            seeds = sorted(set(ga) & set(gb))
            if seeds:
                print(paired(a, rec, [gb[s] - ga[s] for s in seeds], where))
        prev[key] = rec


if __name__ == "__main__":
    main()
