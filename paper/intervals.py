"""intervals.py — the paper's intervals: qsweep's interval rule
(experiments/qs_stats.h), called in its C (libqpstats.so, built beside
qsweep) for numbers the paper computes itself (differences of two recipes'
paired gaps, per-seed slopes, fitted quantities per seed), and the
multiplicity control of a family of verdicts.

  n < 2       no interval (NaN), not resolved
  n >= 2      Student t: mean +- t(0.975, n-1) * sd / sqrt(n) at every n (a
              percentile bootstrap covers about 85% for a nominal 95% at 5
              seeds; the t interval's coverage is checked by simulation in
              tests/sweep/test_coverage.c)
  resolved    the interval excludes 0; the same as the two-sided one-sample
              t-test's p-value (t_pvalue) below 1 - level

The library is $QP_STATS_LIBRARY, else build/lib/libqpstats.so of this
checkout (paper/build.sh builds it). tests/paper/test_paper.py (intervals)
checks the intervals against scipy's.

A table of verdicts is a family: each verdict's p-value is adjusted by Holm's
step-down method (family-wise error rate at 5%), or by Benjamini-Hochberg
(false discovery rate at 5%) where a caller asks for it; a verdict is
resolved only when its adjusted p-value is at most 0.05 (as statsmodels decides). holm() and bh() are
checked against statsmodels' multipletests by tests/paper/test_paper.py
(multiplicity)."""
import ctypes
import math
import os

import numpy as np
from scipy import stats


class _QsCi(ctypes.Structure):  # qs_ci of experiments/qs_stats.h
    _fields_ = [("n", ctypes.c_int), ("mean", ctypes.c_double), ("sd", ctypes.c_double),
                ("lo", ctypes.c_double), ("hi", ctypes.c_double), ("resolved", ctypes.c_int),
                ("method", ctypes.c_char_p)]


_LIB = None


def _stats():
    """libqpstats.so, loaded once; one line naming it when it is not there."""
    global _LIB
    if _LIB is None:
        path = os.environ.get("QP_STATS_LIBRARY") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "build", "lib", "libqpstats.so")
        if not os.path.isfile(path):
            raise RuntimeError(f"paper/intervals.py: no {os.path.normpath(path)} (build the project: "
                               "cmake --build build, or set QP_STATS_LIBRARY to a built libqpstats.so)")
        lib = ctypes.CDLL(path)
        lib.qs_mean_ci.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.c_int, ctypes.c_double,
                                   ctypes.POINTER(_QsCi)]
        lib.qs_mean_ci.restype = None
        _LIB = lib
    return _LIB


def _finite(values):
    return np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)


def mean_ci(values, level=0.95):
    """(mean, lo, hi, resolved, n) of the finite values: qs_mean_ci's."""
    x = np.ascontiguousarray(_finite(values), dtype=np.float64)
    out = _QsCi()
    _stats().qs_mean_ci(x.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), len(x), float(level), ctypes.byref(out))
    return float(out.mean), float(out.lo), float(out.hi), bool(out.resolved), int(out.n)


def t_pvalue_from(mean, sd, n):
    """Two-sided p-value of the one-sample t-test of a mean against 0 from its
    summary (mean, sample sd, n); NaN below 2 values. Zero spread: 0 for a
    nonzero mean, 1 for a zero one."""
    if n is None or n < 2 or not (math.isfinite(mean) and math.isfinite(sd)):
        return float("nan")
    if sd == 0:
        return 0.0 if mean != 0 else 1.0
    t = mean / (sd / math.sqrt(n))
    return float(2 * stats.t.sf(abs(t), n - 1))


def t_pvalue(values):
    """Two-sided one-sample t-test p-value of the finite values against 0."""
    x = _finite(values)
    if len(x) < 2:
        return float("nan")
    return t_pvalue_from(float(np.mean(x)), float(np.std(x, ddof=1)), len(x))


def holm(pvalues, alpha=0.05):
    """Holm's step-down adjustment: (reject, adjusted) lists in the input's
    order. NaN p-values (no interval) are left out of the family and come
    back NaN, not rejected. adjusted_(i) = max over j <= i of
    min(1, (m - j + 1) p_(j)) in ascending order."""
    p = [float(x) for x in pvalues]
    idx = sorted((i for i, x in enumerate(p) if math.isfinite(x)), key=lambda i: p[i])
    m = len(idx)
    adj = [float("nan")] * len(p)
    run = 0.0
    for rank, i in enumerate(idx):
        run = max(run, min(1.0, (m - rank) * p[i]))
        adj[i] = run
    return [math.isfinite(a) and a <= alpha for a in adj], adj


def bh(pvalues, alpha=0.05):
    """Benjamini-Hochberg: (reject, adjusted) in the input's order; NaN left
    out as in holm(). adjusted_(i) = min over j >= i of min(1, m p_(j) / j)."""
    p = [float(x) for x in pvalues]
    idx = sorted((i for i, x in enumerate(p) if math.isfinite(x)), key=lambda i: p[i])
    m = len(idx)
    adj = [float("nan")] * len(p)
    run = 1.0
    for rank in range(m - 1, -1, -1):
        i = idx[rank]
        run = min(run, min(1.0, m * p[i] / (rank + 1)))
        adj[i] = run
    return [math.isfinite(a) and a <= alpha for a in adj], adj


def paired_slope(points_by_seed, transform=math.log2):
    """A trend along an axis as a paired contrast: per seed, the least-squares
    slope of y on transform(x) over that seed's points (at least two distinct
    x), then mean_ci over the seeds' slopes, and its t-test p-value.
    points_by_seed: {seed: [(x, y), ...]}. Returns (mean, lo, hi, resolved, n,
    p): with log2, the change of y per doubling of x."""
    slopes = []
    for pts in points_by_seed.values():
        pts = [(transform(x), y) for x, y in pts if math.isfinite(y)]
        xs = np.asarray([x for x, _ in pts])
        if len(set(xs.tolist())) < 2:
            continue
        ys = np.asarray([y for _, y in pts])
        xc = xs - xs.mean()
        slopes.append(float(np.sum(xc * (ys - ys.mean())) / np.sum(xc * xc)))
    return (*mean_ci(slopes), t_pvalue(slopes))
