#!/usr/bin/env python3
"""test_stats.py — the interval math of experiments/qs_stats.c and the sizing
arithmetic of train/qp_size.c against independent references (scipy, numpy,
the model's own parameter shapes through a qtrain run file).

    test_stats.py CASE STATS_TOOL [QTRAIN WORKDIR]

Cases:
  tquant     Student t quantiles and CDF against scipy.stats.t (CDF 1e-10, quantile 1e-8 and
             inverting scipy's CDF to 1e-12)
  ci         t-intervals (n = 2..4) against scipy's t-interval of the mean
             (1e-8), bootstrap intervals (n >= 5) against
             scipy.stats.bootstrap(method='percentile') within Monte Carlo
             error, the resolved flag, NaN/one-value/non-finite inputs
  size       non-embedding parameters and steps from tokens per parameter
             against the formulas written out here and against the run file
             qtrain writes (num_params minus the embeddings it reports),
             preset and target model sizes"""
import math
import os
import subprocess
import sys

import numpy as np
from scipy import stats

CASE, TOOL = sys.argv[1], sys.argv[2]
failures = checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what, flush=True)
    return cond


def tool(*args):
    r = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"stats_tool {args}: {r.stderr.strip()}")
    return r.stdout.split()


def close(a, b, rel):
    return abs(a - b) <= rel * max(1.0, abs(b))


if CASE == "tquant":
    for df in [1, 2, 3, 4, 5, 7, 10, 19, 30, 60, 100, 1000, 2.5, 0.7]:
        for p in [0.5, 0.6, 0.9, 0.95, 0.975, 0.99, 0.995, 0.9995, 0.025, 0.1]:
            got = float(tool("tq", p, df)[0])
            want = stats.t.ppf(p, df)
            # scipy's ppf is itself good to ~1e-9 (its cdf at its own ppf misses p by up to 3e-10): the
            # quantile must sit within 1e-8 of it and invert scipy's cdf to 1e-13
            check(close(got, want, 1e-8), f"t quantile p={p} df={df}: {got!r} vs scipy {want!r}")
            check(abs(stats.t.cdf(got, df) - p) < 1e-12, f"t quantile p={p} df={df}: scipy cdf {stats.t.cdf(got, df)!r}")
        for t in [-30.0, -3.2, -1.0, 0.0, 0.4, 2.0, 12.7, 1e4]:
            got = float(tool("tcdf", t, df)[0])
            want = stats.t.cdf(t, df)
            check(abs(got - want) <= 1e-12 + 1e-10 * want, f"t cdf t={t} df={df}: {got!r} vs scipy {want!r}")

elif CASE == "ci":
    rng = np.random.default_rng(11)
    # t-intervals: n = 2, 3, 4 (scipy: the interval of the mean from the t distribution)
    for n in [2, 3, 4]:
        for trial in range(6):
            x = rng.normal(rng.uniform(-2, 4), rng.uniform(0.01, 3), size=n)
            out = tool("ci", 0.95, *[repr(v) for v in x])
            m, mean, sd, lo, hi, res, method = int(out[0]), *map(float, out[1:5]), int(out[5]), out[6]
            wlo, whi = stats.t.interval(0.95, n - 1, loc=np.mean(x), scale=stats.sem(x))
            check(m == n and method == "t", f"n={n}: method {method}")
            check(close(float(out[1]), np.mean(x), 1e-12) and close(sd, np.std(x, ddof=1), 1e-12),
                  f"n={n}: mean/sd {out[1:3]} vs numpy")
            check(close(lo, wlo, 1e-8) and close(hi, whi, 1e-8), f"n={n}: [{lo}, {hi}] vs scipy [{wlo}, {whi}]")
            check(res == int(wlo > 0 or whi < 0), f"n={n}: resolved {res} for [{wlo}, {whi}]")
    # the published worked case: gaps 4.79 +- 0.14 on two seeds resolve, 0.72 +- 0.78 do not
    out = tool("ci", 0.95, 4.69, 4.89)
    check(int(out[5]) == 1, f"two seeds 4.69, 4.89: resolved ({out})")
    out = tool("ci", 0.95, 0.17, 1.27)
    check(int(out[5]) == 0, f"two seeds 0.17, 1.27: not resolved ({out})")
    # percentile bootstrap: n = 5, 8, 20 against scipy (different random streams: Monte Carlo tolerance)
    for n in [5, 8, 20]:
        for trial in range(3):
            x = rng.normal(rng.uniform(-1, 3), rng.uniform(0.05, 2), size=n)
            out = tool("ci", 0.95, *[repr(v) for v in x])
            lo, hi, method = float(out[3]), float(out[4]), out[6]
            b = stats.bootstrap((x,), np.mean, confidence_level=0.95, n_resamples=40000, method="percentile",
                                random_state=np.random.default_rng(trial))
            se = np.std(x, ddof=0) / math.sqrt(n)
            tol = 0.06 * se  # two 20k/40k-resample Monte Carlo estimates of a 2.5% quantile
            check(method == "bootstrap", f"n={n}: method {method}")
            check(abs(lo - b.confidence_interval.low) < tol and abs(hi - b.confidence_interval.high) < tol,
                  f"n={n}: [{lo}, {hi}] vs scipy [{b.confidence_interval.low}, {b.confidence_interval.high}] "
                  f"(tolerance {tol})")
            check(int(out[5]) == int(lo > 0 or hi < 0), f"n={n}: resolved flag")
    # the same numbers give the same bootstrap interval every time (fixed stream)
    x = [1.0, 2.0, 3.5, 0.5, 2.2, 1.9]
    check(tool("ci", 0.95, *x) == tool("ci", 0.95, *x), "bootstrap is deterministic")
    # edge cases: none, one value, non-finite values skipped, zero spread
    out = tool("ci", 0.95)
    check(out[0] == "0" and out[1] == "nan" and out[5] == "0" and out[6] == "none", f"no values: {out}")
    out = tool("ci", 0.95, 3.0)
    check(out[0] == "1" and float(out[1]) == 3.0 and out[3] == "nan" and out[5] == "0", f"one value: {out}")
    out = tool("ci", 0.95, 1.0, "nan", 2.0, "inf")
    wlo, whi = stats.t.interval(0.95, 1, loc=1.5, scale=stats.sem([1.0, 2.0]))
    check(out[0] == "2" and close(float(out[3]), wlo, 1e-8), f"non-finite skipped: {out}")
    out = tool("ci", 0.95, 0.5, 0.5, 0.5)
    check(float(out[3]) == 0.5 and float(out[4]) == 0.5 and out[5] == "1", f"zero spread, positive: {out}")
    out = tool("ci", 0.95, 0.0, 0.0)
    check(out[5] == "0", f"all zero: not resolved ({out})")

elif CASE == "size":
    QTRAIN, WORK = sys.argv[3], sys.argv[4]
    os.makedirs(WORK, exist_ok=True)
    import h5py

    def nonemb(L, C):
        # written out per tensor: ln1 2C, qkv 3C*C+3C, attproj C*C+C, ln2 2C, fc 4C*C+4C, fcproj 4C*C+C; lnf 2C
        return L * (2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C + 4 * C + 4 * C * C + C) + 2 * C

    for L, C in [(1, 8), (2, 64), (2, 96), (4, 128), (6, 384), (12, 768)]:
        for R, B, T, A in [(20, 12, 64, 1), (100, 8, 128, 2), (0.5, 4, 32, 1), (400, 12, 64, 1)]:
            n, steps = map(int, tool("size", L, C, R, B, T, A))
            check(n == nonemb(L, C), f"L{L} C{C}: {n} non-embedding parameters, want {nonemb(L, C)}")
            want = max(1, int(np.rint(R * nonemb(L, C) / (B * T * A))))
            check(steps == want, f"L{L} C{C} R{R} B{B} T{T} A{A}: {steps} steps, want {want}")
    # presets and targets
    out = tool("model", "nano", 0, 0)
    check(out[:3] == ["2", "4", "64"], f"preset nano: {out}")
    for target, L, H in [("100k", 2, 4), ("0.4M", 2, 4), ("2e6", 4, 8), ("1.6M", 3, 6)]:
        l, h, c, n = map(int, tool("model", target, L, H))
        t = float(target[:-1]) * (1e3 if target[-1] == "k" else 1e6) if target[-1] in "kM" else float(target)
        check(l == L and h == H and c % 32 == 0 and c % H == 0, f"target {target}: shape {l} {h} {c}")
        # nearest in log ratio among the allowed widths
        step = 32 * H // math.gcd(32, H)
        best = min(range(step, 65537, step), key=lambda w: abs(math.log(nonemb(L, w) / t)))
        check(c == best and n == nonemb(L, c), f"target {target}: width {c}, want {best}")
    r = subprocess.run([TOOL, "model", "huge", "2", "4"], capture_output=True, text=True)
    check(r.returncode == 2 and "preset" in r.stderr, f"bad model name: {r.stderr}")
    # qtrain: --tokens-per-param sizes the run and records it; the model's own parameter count agrees
    corpus = os.path.join(WORK, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("".join(f"line {i} of a small corpus for sizing runs\n" for i in range(4000)))
    out = os.path.join(WORK, "size.h5")
    p = subprocess.run([QTRAIN, "--data", corpus, "--layers", "2", "--heads", "2", "--dim", "32", "--seq", "32",
                        "--batch", "4", "--tokens-per-param", "0.8", "--eval-every", "0", "--qerr-every", "0",
                        "--threads", "1", "--out", out], capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"qtrain --tokens-per-param: {p.stderr}")
    with h5py.File(out, "r", libver="latest", swmr=True) as f:
        a = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f.attrs.items()}
        nsteps = len(f["train/step"])
    N = nonemb(2, 32)
    V, T = int(a["vocab"]), int(a["seq"])
    check(int(a["params_nonembedding"]) == N == int(a["num_params"]) - V * 32 - T * 32,
          f"params_nonembedding {a['params_nonembedding']}, num_params {a['num_params']}, want {N}")
    want_steps = int(np.rint(0.8 * N / (4 * 32)))
    check(int(a["steps"]) == want_steps == nsteps, f"steps {a['steps']} ({nsteps} rows), want {want_steps}")
    check(int(a["tokens_total"]) == want_steps * 4 * 32, f"tokens_total {a['tokens_total']}")
    check(close(float(a["tokens_per_param"]), want_steps * 128 / N, 1e-5), f"tokens_per_param {a['tokens_per_param']}")
    n_train = os.path.getsize(corpus) - int(0.1 * os.path.getsize(corpus))
    check(close(float(a["epochs"]), want_steps * 128 / n_train, 1e-5), f"epochs {a['epochs']} (train {n_train})")
    check("epochs of the training split" not in p.stderr, "no warning under 4 epochs")
    # past 4 epochs: one warning line, the run still done
    p = subprocess.run([QTRAIN, "--data", corpus, "--layers", "1", "--heads", "2", "--dim", "32", "--seq", "32",
                        "--batch", "8", "--steps", "3000", "--eval-every", "0", "--qerr-every", "0", "--quiet",
                        "--threads", "1", "--stop-after", "2", "--out", os.path.join(WORK, "many.h5")],
                       capture_output=True, text=True, timeout=300)
    warn = [ln for ln in p.stderr.splitlines() if "epochs of the training split" in ln]
    check(len(warn) == 1, f"one warning past 4 epochs, got: {p.stderr!r}")
    p = subprocess.run([QTRAIN, "--data", corpus, "--steps", "5", "--tokens-per-param", "3", "--out",
                        os.path.join(WORK, "both.h5")], capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "not both" in p.stderr and not os.path.exists(os.path.join(WORK, "both.h5")),
          f"--steps with --tokens-per-param: exit {p.returncode} {p.stderr}")
else:
    sys.exit(f"test_stats.py: unknown case {CASE}")

print(f"{checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
