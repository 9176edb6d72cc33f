#!/usr/bin/env python3
"""test_stats.py — the interval math of experiments/qs_stats.c and the sizing
arithmetic of train/run/qp_size.c against independent references (scipy, numpy,
the model's own parameter shapes through a qtrain run file).

    test_stats.py CASE STATS_TOOL [QTRAIN WORKDIR]

Cases:
  tquant     Student t quantiles and CDF against scipy.stats.t (CDF 1e-10, quantile 1e-8 and
             inverting scipy's CDF to 1e-12)
  ci         t-intervals (n = 2..20: t at every n, no bootstrap) against
             scipy's t-interval of the mean (1e-8), the resolved flag,
             NaN/one-value/non-finite inputs
  ratio      the paired ratio interval (Fieller) against the set it defines, found here
             by inverting scipy's one-sample t-test of a_k - rho b_k with brentq
             (1e-7), unbounded exactly when scipy's t-interval of mean(b)
             includes 0, resolved exactly when mean(a)'s excludes 0, and the
             edge cases (one pair, exact ratios, non-finite pairs skipped)
  paired     the contrast's paired t intervals (qs_paired_ci): a hand-computed case, then
             each side's and the difference's interval against scipy's t-interval and
             ttest_rel (n = 2..8: t for every n, no bootstrap), non-finite pairs skipped
             as pairs, one pair, no pairs
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
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks  # noqa: E402

check = Checks()


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
    # n = 5, 8, 20: the same t rule (no bootstrap at any n)
    for n in [5, 8, 20]:
        x = rng.normal(rng.uniform(-1, 3), rng.uniform(0.05, 2), size=n)
        out = tool("ci", 0.95, *[repr(v) for v in x])
        lo, hi, method = float(out[3]), float(out[4]), out[6]
        wlo, whi = stats.t.interval(0.95, n - 1, loc=np.mean(x), scale=stats.sem(x))
        check(method == "t", f"n={n}: method {method}")
        check(close(lo, wlo, 1e-8) and close(hi, whi, 1e-8), f"n={n}: [{lo}, {hi}] vs scipy [{wlo}, {whi}]")
        check(int(out[5]) == int(lo > 0 or hi < 0), f"n={n}: resolved flag")
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

elif CASE == "ratio":
    from scipy.optimize import brentq

    rng = np.random.default_rng(23)

    def tstat(a, b, rho):
        d = np.asarray(a) - rho * np.asarray(b)
        return abs(np.mean(d)) / stats.sem(d)

    def ratio(a, b, level=0.95):
        out = tool("ratio", level, len(a), *[repr(v) for v in a], *[repr(v) for v in b])
        return int(out[0]), float(out[1]), float(out[2]), float(out[3]), int(out[4]), out[5]

    n_bounded = n_unbounded = 0
    for n in [2, 3, 4, 5, 8]:
        for trial in range(8):
            b = rng.normal(rng.uniform(-1, 4), rng.uniform(0.05, 2.5), size=n)
            a = rng.uniform(-0.2, 0.8) * b + rng.normal(0, rng.uniform(0.02, 0.8), size=n)
            k, r, lo, hi, res, method = ratio(a, b)
            t = stats.t.ppf(0.975, n - 1)
            check(k == n and close(r, np.mean(a) / np.mean(b), 1e-12), f"n={n}: ratio {r}")
            blo, bhi = stats.t.interval(0.95, n - 1, loc=np.mean(b), scale=stats.sem(b))
            if blo > 0 or bhi < 0:
                n_bounded += 1
                check(method == "fieller" and lo <= r <= hi, f"n={n}: bounded [{lo}, {hi}] around {r} ({method})")
                # the interval's ends are where the t statistic of a - rho b crosses the quantile
                f = lambda rho: tstat(a, b, rho) - t  # noqa: E731
                check(tstat(a, b, r) <= t, f"n={n}: the estimate is accepted")
                span = 10 * (abs(r) + 1)
                wlo = brentq(f, r - span * 100, r) if f(r - span * 100) > 0 else -math.inf
                whi = brentq(f, r, r + span * 100) if f(r + span * 100) > 0 else math.inf
                check(close(lo, wlo, 1e-7) and close(hi, whi, 1e-7), f"n={n}: [{lo}, {hi}] vs inverted t-test "
                      f"[{wlo}, {whi}]")
                alo, ahi = stats.t.interval(0.95, n - 1, loc=np.mean(a), scale=stats.sem(a))
                check(res == int(alo > 0 or ahi < 0), f"n={n}: resolved {res} follows mean(a)'s interval "
                      f"[{alo}, {ahi}]")
            else:
                n_unbounded += 1
                check(method == "unbounded" and lo == -math.inf and hi == math.inf and res == 0,
                      f"n={n}: mean(b) not resolved [{blo}, {bhi}]: {method} [{lo}, {hi}]")
                # every rho far out is accepted: the set really is unbounded
                check(tstat(a, b, 1e6) <= t * (1 + 1e-6) or tstat(a, b, -1e6) <= t * (1 + 1e-6),
                      f"n={n}: far ratios accepted")
    check(n_bounded >= 10 and n_unbounded >= 3, f"both kinds exercised: {n_bounded} bounded, {n_unbounded} unbounded")
    # one pair: a ratio, no interval
    k, r, lo, hi, res, method = ratio([1.0], [4.0])
    check(k == 1 and r == 0.25 and math.isnan(lo) and method == "none" and res == 0, "one pair")
    # an exact ratio: a zero-width interval at it
    k, r, lo, hi, res, method = ratio([1.45, 1.5, 1.55], [2.9, 3.0, 3.1])
    check(method == "fieller" and close(lo, 0.5, 1e-12) and close(hi, 0.5, 1e-12) and res == 1, f"exact: {lo} {hi}")
    # non-finite pairs are skipped as pairs
    k, r, lo, hi, res, method = ratio([1.0, float("nan"), 2.0, 1.5], [2.0, 3.0, float("inf"), 3.1])
    k2, r2, lo2, hi2, _, _ = ratio([1.0, 1.5], [2.0, 3.1])
    check(k == 2 and r == r2 and lo == lo2 and hi == hi2, f"non-finite pairs skipped: {k} {r} vs {r2}")
    # a worked case: block gaps 1.0, 1.2, 0.8 of full gaps 3.1, 2.9, 3.0 -> about a third, resolved
    k, r, lo, hi, res, method = ratio([1.0, 1.2, 0.8], [3.1, 2.9, 3.0])
    check(close(r, 1 / 3, 1e-12) and 0 < lo < 1 / 3 < hi < 1 and res == 1, f"a third: [{lo}, {hi}]")

elif CASE == "paired":
    def paired(a, b, level=0.95):
        out = tool("paired", level, len(a), *[repr(v) for v in a], *[repr(v) for v in b])
        sides = []
        for k in range(3):
            f = out[1 + 7 * k: 8 + 7 * k]
            sides.append({"n": int(f[0]), "mean": float(f[1]), "sd": float(f[2]), "lo": float(f[3]),
                          "hi": float(f[4]), "resolved": int(f[5]), "method": f[6]})
        return int(out[0]), sides[0], sides[1], sides[2]

    # by hand: gaps 1, 2, 3 at a and 2, 4, 5 at b: d = 1, 2, 2, mean 5/3, sd sqrt(1/3), se 1/3;
    # t(0.975, 2) in closed form (df 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so t^2 / (2 + t^2) = 0.95^2):
    # sqrt(2 x 0.9025 / 0.0975) = 4.3026527299 (tables: 4.303); the interval 5/3 -+ t/3
    t2 = math.sqrt(2 * 0.9025 / 0.0975)
    check(abs(t2 - 4.30265272974946385) < 1e-13 and abs(t2 - stats.t.ppf(0.975, 2)) < 1e-9, f"closed form {t2}")
    n, A, B, D = paired([1.0, 2.0, 3.0], [2.0, 4.0, 5.0])
    half = t2 / 3
    check(n == 3 and D["n"] == 3 and D["method"] == "t", f"hand case: n {n}, method {D['method']}")
    check(close(D["mean"], 5 / 3, 1e-15) and close(D["sd"], math.sqrt(1 / 3), 1e-15),
          f"hand case: mean {D['mean']} sd {D['sd']}")
    check(close(D["lo"], 5 / 3 - half, 1e-12) and close(D["hi"], 5 / 3 + half, 1e-12) and D["resolved"] == 1,
          f"hand case: [{D['lo']}, {D['hi']}] want [{5 / 3 - half}, {5 / 3 + half}], resolved")
    check(close(D["lo"], 0.23244909008, 1e-10) and close(D["hi"], 3.10088424325, 1e-10), "hand case: digits")
    # the sides: a = 1, 2, 3 (2 -+ 2.484) and b = 2, 4, 5 (11/3 -+ 3.795) both hold 0; their paired d does not
    check(close(A["mean"], 2.0, 1e-15) and close(A["lo"], 2 - t2 / math.sqrt(3), 1e-12) and
          A["resolved"] == 0, f"hand case side a: {A}")
    check(close(B["mean"], 11 / 3, 1e-15) and close(B["hi"], 11 / 3 + t2 * math.sqrt(7 / 3) / math.sqrt(3), 1e-12)
          and B["resolved"] == 0, f"hand case side b: {B}")
    # pairing matters: the same values unpaired (Welch) would not resolve this difference
    w = stats.ttest_ind([2.0, 4.0, 5.0], [1.0, 2.0, 3.0], equal_var=False)
    check(w.pvalue > 0.05, f"hand case: unpaired Welch p {w.pvalue} does not resolve (pairing does)")

    rng = np.random.default_rng(31)
    n_res = n_unres = 0
    for n in [2, 3, 4, 5, 6, 8]:
        for trial in range(6):
            a = rng.normal(rng.uniform(-1, 3), rng.uniform(0.05, 2), size=n)
            b = a + rng.normal(rng.uniform(-1.5, 1.5), rng.uniform(0.02, 1.2), size=n)
            k, A, B, D = paired(a, b)
            check(k == n, f"n={n}: pairs {k}")
            for name, x, got in (("a", a, A), ("b", b, B), ("b - a", b - a, D)):
                lo, hi = stats.t.interval(0.95, n - 1, loc=np.mean(x), scale=stats.sem(x))
                check(got["method"] == "t" and close(got["mean"], np.mean(x), 1e-12) and
                      close(got["sd"], np.std(x, ddof=1), 1e-10) and close(got["lo"], lo, 1e-8) and
                      close(got["hi"], hi, 1e-8) and got["resolved"] == int(lo > 0 or hi < 0),
                      f"n={n} {name}: {got} vs scipy [{lo}, {hi}]")
            # the difference resolves exactly when the paired t-test rejects at 5%
            p = stats.ttest_rel(b, a).pvalue
            check(D["resolved"] == int(p < 0.05), f"n={n}: resolved {D['resolved']}, ttest_rel p {p}")
            n_res += D["resolved"]
            n_unres += 1 - D["resolved"]
    check(n_res >= 5 and n_unres >= 5, f"both verdicts exercised: {n_res} resolved, {n_unres} not")
    # non-finite pairs are left out as pairs: a NaN at a drops b's value of that seed too
    k, A, B, D = paired([1.0, float("nan"), 2.0, 1.5], [2.0, 3.0, float("inf"), 3.1])
    k2, A2, B2, D2 = paired([1.0, 1.5], [2.0, 3.1])
    check(k == 2 and A == A2 and B == B2 and D == D2, f"non-finite pairs skipped: {k}, {D} vs {D2}")
    # one pair: means, no interval; no pairs: nothing
    k, A, B, D = paired([1.0], [4.0])
    check(k == 1 and D["mean"] == 3.0 and math.isnan(D["lo"]) and D["method"] == "none" and D["resolved"] == 0,
          f"one pair: {D}")
    k, A, B, D = paired([], [])
    check(k == 0 and math.isnan(D["mean"]) and D["method"] == "none", f"no pairs: {D}")
    # a constant difference: a zero-width interval at it, resolved when not 0
    k, A, B, D = paired([1.0, 2.0, 3.0], [1.5, 2.5, 3.5])
    check(D["lo"] == D["hi"] == 0.5 and D["resolved"] == 1, f"constant difference: {D}")
    k, A, B, D = paired([1.0, 2.0], [1.0, 2.0])
    check(D["mean"] == 0 and D["resolved"] == 0, f"no difference: {D}")

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

sys.exit(check.summary(f"test_stats {CASE}"))
