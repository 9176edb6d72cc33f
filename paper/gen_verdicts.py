"""gen_verdicts.py — the verdict sentences of one sweep's summary.h5, by
recipe, from the /recipes intervals and, for comparisons between two
recipes, from the per-seed paired gaps in /runs (paper/verdicts.py words
them). Columns are read by name.

study_verdicts(summary_h5, where=None) -> {key: sentence}
  keys: every recipe but the baseline (its gap), "fp8within1" (whether FP8
  is shown within 1%), "nvfp4vsnaive", "mxfp4vsnvfp4" (paired differences),
  where: {axis: value} selecting one cell of a larger grid; the gap
  sentences follow the Holm-adjusted decision when given one per recipe."""
import math

import h5py
import numpy as np

import verdicts as v
from intervals import mean_ci

LABELS = {"fp8": "FP8 (delayed scaling)", "fp8-current": "FP8 (current scaling)", "mxfp8": "MXFP8",
          "nvfp4": "NVFP4 with NVIDIA's recipe", "nvfp4-naive": "naive NVFP4", "mxfp4": "MXFP4"}


def s(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def label(r):
    return LABELS.get(r, r)


def _match(row, names, where):
    return all(k in names and s(row[k]) == str(val) for k, val in (where or {}).items())


def paired(runs, a, b, where=None):
    """Per seed: gap_pct of a minus gap_pct of b (the same seeds)."""
    names = runs.dtype.names
    def by_seed(r):
        out = {}
        for row in runs:
            if s(row["recipe"]) == r and s(row["status"]) == "done" and _match(row, names, where) and \
                    not ("noise_twin" in names and int(row["noise_twin"])):
                g = float(row["gap_pct"])
                if math.isfinite(g):
                    out[s(row["seed"]) if "seed" in names else "1"] = g
        return out
    ga, gb = by_seed(a), by_seed(b)
    return [ga[k] - gb[k] for k in sorted(ga) if k in gb]


def study_verdicts(summary_h5, where=None, noise_rms=None, holm_by_recipe=None):
    """holm_by_recipe: {recipe: (Holm-adjusted p, family size)} of the cell's
    gaps within their table's family (gen_tables.py), or None."""
    with h5py.File(summary_h5, "r") as f:
        groups, runs = f["recipes"][:], f["runs"][:]
        base = s(f.attrs.get("baseline", "bf16"))
    names = groups.dtype.names
    out = {}
    for g in groups:
        if not _match(g, names, where):
            continue
        r = s(g["recipe"])
        if r == base:
            continue
        p_adj, fam = (holm_by_recipe or {}).get(r, (None, None))
        out[r] = v.gap(label(r), float(g["gap_pct_mean"]), float(g["gap_ci_lo"]), float(g["gap_ci_hi"]),
                       int(g["n_seeds"]), base=base.upper(), noise=noise_rms, p_adj=p_adj, family=fam)
        if r == "fp8":
            out["fp8within1"] = v.within(label(r), float(g["gap_pct_mean"]), float(g["gap_ci_lo"]),
                                         float(g["gap_ci_hi"]), int(g["n_seeds"]), 1.0, base=base.upper())
    for key, a, b in [("nvfp4vsnaive", "nvfp4", "nvfp4-naive"), ("mxfp4vsnvfp4", "mxfp4", "nvfp4")]:
        d = paired(runs, a, b, where)
        if d:
            m, lo, hi, _, n = mean_ci(d)
            out[key] = v.compare(label(a), label(b), m, lo, hi, n, what=f"gap to {base.upper()}")
        else:
            out[key] = f"{label(a)} and {label(b)} were not both run here."
    return out
