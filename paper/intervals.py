"""intervals.py — the interval rule of experiments/qs_stats.h for numbers the
paper computes itself (differences of two recipes' paired gaps, fitted
efficiencies per seed): the same definition, checked against the C one by
tests/paper/test_paper.py.

  n < 2       no interval (NaN), not resolved
  2 <= n < 5  Student t: mean +- t(0.975, n-1) * sd / sqrt(n)
  n >= 5      percentile bootstrap of the mean (numpy's default quantile)
  resolved    the interval excludes 0"""
import math

import numpy as np
from scipy import stats

BOOT_MIN_N = 5
BOOT_RESAMPLES = 20000


def mean_ci(values, level=0.95, seed=0x5151C0FFEE):
    """(mean, lo, hi, resolved, n) of the finite values."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    n = len(x)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), False, 0
    m = float(np.mean(x))
    if n < 2:
        return m, float("nan"), float("nan"), False, n
    if n < BOOT_MIN_N:
        h = stats.t.ppf(1 - (1 - level) / 2, n - 1) * np.std(x, ddof=1) / math.sqrt(n)
        lo, hi = m - h, m + h
    else:
        rng = np.random.default_rng(seed)
        means = x[rng.integers(0, n, size=(BOOT_RESAMPLES, n))].mean(axis=1)
        lo, hi = (float(q) for q in np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2]))
    return m, float(lo), float(hi), bool(lo > 0 or hi < 0), n
