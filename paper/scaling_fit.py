#!/usr/bin/env python3
"""scaling_fit.py — the loss law of a sizes x tokens-per-parameter sweep and
each format's effective parameter and data efficiency (as Quartet reports
them), with intervals from seeds, residuals and a held-out cell.

    scaling_fit.py SWEEP --out DIR [--baseline bf16] [--holdout MODEL:TPP] [--plotsdir plots]

The law, the baseline's with each recipe mapped onto it (as Quartet does):

    L_r(N, D) = E + A / (eff_N,r * N)^alpha + B / (eff_D,r * D)^beta

N non-embedding parameters, D training tokens (the run files' attributes),
eff = 1 for the baseline: a recipe with eff_N = 0.8 trains like a baseline
model with 80% of its parameters. Two stages: E, A, alpha, B, beta from the
baseline's runs, then eff_N, eff_D per recipe with the law held fixed (a
fully joint fit trades the two efficiencies against the law's exponents on
a small grid). Least squares on log L (scipy's trust region reflective,
bounds, a grid of starting points; the best of them). A parameter that ends
at a bound of its box is not identified by the grid: E at its bound is
dropped and the law refitted without it (E = 0, reported as such); any
other parameter or efficiency at a bound is listed (at_bound).

  law             the fit to every run (all seeds)
  efficiencies    the fit to each seed's runs alone, then the t rule of
                  paper/intervals.py (qs_stats.h) over the per-seed values'
                  logs: the geometric mean (the point estimate) and its
                  interval come from the same per-seed fits; resolved below
                  1 (hi < 1) or above 1 (lo > 1)
  residuals        per cell, log L_obs - log L_fit of the all-seed fit
  held-out cell    the fit (all seeds, and each seed) without one cell (by
                   default the largest model at its largest tokens per
                   parameter: an extrapolation), its prediction per recipe
                   with the per-seed interval (where the law is: the fit's
                   own uncertainty, centred on the per-seed predictions'
                   geometric mean, which is the point reported) and a
                   prediction interval (where a new cell's loss is
                   expected: that uncertainty and the law's scatter about
                   the cells it was fitted to, t(0.975, dof) times its
                   residual standard error with dof = runs - fitted
                   parameters, added in quadrature in log L), against the
                   cell's measured mean loss. The recipes share one law, so
                   the held-out cell is one check of it, not one per recipe

Why Python (numpy/scipy from Debian) and not qsweep's C: the fit is an
analysis of a finished sweep's ~100 numbers, not a property of runs; it
needs a bounded nonlinear least-squares solver with restarts, which scipy
has tested and qprec would otherwise have to write and validate; the paper
that reports it is generated in Python already.

Writes DIR/scaling.json (everything above) and DIR/scaling_gap.dat, and
draws DIR/scaling_gap.{pdf,png} with plots/scaling.gp: the gap to the
baseline against tokens per parameter, a panel per recipe, one line per
model size (mean and 95% interval over seeds), the fitted law's gap drawn."""
import argparse
import json
import math
import os
import subprocess
import sys

import h5py
import numpy as np
from scipy import stats
from scipy.optimize import least_squares

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from intervals import mean_ci  # noqa: E402

SHARED = ["E", "A", "alpha", "B", "beta"]


def s(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def load_cells(sweep):
    """Every finished grid run (not a noise twin): recipe, seed, cell key,
    N, D, final validation loss."""
    with h5py.File(os.path.join(sweep, "summary.h5"), "r") as f:
        runs = f["runs"][:]
        base = s(f.attrs.get("baseline", "bf16"))
    names = runs.dtype.names
    cells = []
    for r in runs:
        if s(r["status"]) != "done" or ("noise_twin" in names and int(r["noise_twin"])):
            continue
        N = float(r["params_nonembedding"])
        tpp = float(r["tokens_per_param_actual"])
        L = float(r["final_val_loss"])
        if not all(math.isfinite(v) for v in (N, tpp, L)):
            continue
        cells.append({"recipe": s(r["recipe"]), "seed": s(r["seed"]) if "seed" in names else "1",
                      "model": s(r["model"]) if "model" in names else f"{N:.0f}",
                      "tpp": s(r["tokens_per_param"]) if "tokens_per_param" in names else f"{tpp:g}",
                      "N": N, "D": tpp * N, "L": L})
    return cells, base


def predict(p, recipe, N, D):
    effN, effD = p["eff_N"].get(recipe, 1.0), p["eff_D"].get(recipe, 1.0)
    return p["E"] + p["A"] / (effN * N) ** p["alpha"] + p["B"] / (effD * D) ** p["beta"]


def _lsq(resid, x0s, lo, hi):
    best = None
    for x0 in x0s:
        x0 = np.clip(x0, np.array(lo) + 1e-9, np.array(hi) - 1e-9)
        try:
            r = least_squares(resid, x0, bounds=(lo, hi), method="trf", x_scale="jac", max_nfev=4000,
                              ftol=1e-14, xtol=1e-14, gtol=1e-14)
        except ValueError:
            continue
        if best is None or r.cost < best.cost:
            best = r
    return best


def fit(cells, base):
    """Two stages, as Quartet maps a format onto BF16's law: (1) the
    baseline's law (E, A, alpha, B, beta) from the baseline's runs; (2) per
    recipe, eff_N and eff_D with that law held fixed. None when the baseline
    has fewer than 5 distinct (N, D) cells."""
    bc = [c for c in cells if c["recipe"] == base]
    if len(bc) < 5 or len({(c["N"], c["D"]) for c in bc}) < 5:
        return None
    N = np.array([c["N"] for c in bc])
    D = np.array([c["D"] for c in bc])
    L = np.array([c["L"] for c in bc])

    def law(x, n, d):
        return math.exp(x[0]) + math.exp(x[1]) * n ** -x[2] + math.exp(x[3]) * d ** -x[4]

    def resid(x):
        return np.log(law(x, N, D)) - np.log(L)

    lmin = float(L.min())
    lo = [math.log(1e-3), -30, 0.02, -30, 0.02]
    hi = [math.log(lmin * 0.999), 60, 2.0, 60, 2.0]
    e_free = True
    starts = []
    for E0 in (0.3 * lmin, 0.7 * lmin):
        for al0 in (0.2, 0.5, 0.9):
            for be0 in (0.2, 0.5, 0.9):
                share = max(float(np.median(L)) - E0, 1e-3) / 2
                starts.append([math.log(E0), math.log(share) + al0 * math.log(float(np.median(N))), al0,
                               math.log(share) + be0 * math.log(float(np.median(D))), be0])
    best = _lsq(resid, starts, lo, hi)
    if best is None:
        return None
    x = best.x
    if _at_bound(x[0], lo[0], hi[0]):
        # E at a bound: this grid does not identify it. Refit the law without it (E = 0), four parameters
        e_free = False

        def resid(x4):
            return np.log(law([-np.inf, *x4], N, D)) - np.log(L)
        best = _lsq(resid, [x0[1:] for x0 in starts], lo[1:], hi[1:])
        if best is None:
            return None
        x = np.array([-np.inf, *best.x])
    names = ["E", "A", "alpha", "B", "beta"]
    at_bound = [nm for i, nm in enumerate(names) if (i > 0 or e_free) and _at_bound(x[i], lo[i], hi[i])]
    p = {"E": math.exp(x[0]), "A": math.exp(x[1]), "alpha": float(x[2]), "B": math.exp(x[3]), "beta": float(x[4]),
         "baseline": base, "eff_N": {base: 1.0}, "eff_D": {base: 1.0}, "E_identified": e_free,
         "at_bound": at_bound, "eff_at_bound": {}}
    res = list(best.fun)
    nparam = 5 if e_free else 4
    for r in sorted({c["recipe"] for c in cells} - {base}):
        rc = [c for c in cells if c["recipe"] == r]
        Nr = np.array([c["N"] for c in rc])
        Dr = np.array([c["D"] for c in rc])
        Lr = np.array([c["L"] for c in rc])

        def resid_r(e):
            return np.log(law(x, math.exp(e[0]) * Nr, math.exp(e[1]) * Dr)) - np.log(Lr)

        er = _lsq(resid_r, [[0.0, 0.0], [-1.0, 0.0], [0.0, -1.0], [-1.0, -1.0]], [math.log(1e-2)] * 2,
                  [math.log(1e2)] * 2)
        if er is None:
            continue
        p["eff_N"][r], p["eff_D"][r] = float(math.exp(er.x[0])), float(math.exp(er.x[1]))
        p["eff_at_bound"][r] = [k for k, v_ in zip(("eff_N", "eff_D"), er.x) if _at_bound(v_, math.log(1e-2),
                                                                                        math.log(1e2))]
        res += list(er.fun)
        nparam += 2
    p["rms_log_residual"] = float(math.sqrt(np.mean(np.square(res))))
    # the residual standard error with the fit's degrees of freedom (runs minus fitted parameters)
    p["dof"] = len(res) - nparam
    p["resid_se"] = float(math.sqrt(np.sum(np.square(res)) / p["dof"])) if p["dof"] > 0 else float("nan")
    p["n_params"] = nparam
    p["n_cells"] = len(cells)
    return p


def _at_bound(v, lo, hi):
    """Whether a fitted (transformed) parameter sits at a bound of its box."""
    return abs(v - lo) <= 1e-6 * max(1.0, abs(hi - lo)) or abs(hi - v) <= 1e-6 * max(1.0, abs(hi - lo))


def cell_means(cells):
    out = {}
    for c in cells:
        out.setdefault((c["recipe"], c["model"], c["tpp"]), []).append(c)
    return out


def analyse(cells, base, holdout=None):
    """Everything the paper reports (see the module's docstring)."""
    res = {"baseline": base}
    full = fit(cells, base)
    if full is None:
        res["error"] = "too few cells for the law: it needs at least 5 (N, D) cells of the baseline"
        return res
    res["fit"] = full
    seeds = sorted({c["seed"] for c in cells})
    per_seed = {sd: fit([c for c in cells if c["seed"] == sd], base) for sd in seeds}
    res["fit_per_seed"] = {sd: p for sd, p in per_seed.items() if p}
    eff = {}
    for r in sorted(full["eff_N"]):
        if r == base:
            continue
        row = {}
        for kind in ("eff_N", "eff_D"):
            # log scale: an efficiency is a ratio; its interval is the t interval of the per-seed fits' logs, and
            # the point estimate is their geometric mean (the centre of that same interval)
            vals = [math.log(p[kind][r]) for p in per_seed.values() if p and r in p[kind] and p[kind][r] > 0]
            m, lo, hi, _, n = mean_ci(vals)
            gm = math.exp(m) if math.isfinite(m) else float("nan")
            elo, ehi = (math.exp(lo), math.exp(hi)) if math.isfinite(lo) else (float("nan"), float("nan"))
            row[kind] = {"all_seeds": full[kind][r], "seed_mean": gm, "ci_lo": elo, "ci_hi": ehi, "n": n,
                         "below_1": bool(ehi < 1) if math.isfinite(ehi) else False,
                         "above_1": bool(elo > 1) if math.isfinite(elo) else False,
                         "at_bound": kind in full["eff_at_bound"].get(r, []) or
                         any(kind in p["eff_at_bound"].get(r, []) for p in per_seed.values() if p)}
        eff[r] = row
    res["efficiency"] = eff
    res["residuals"] = [{"recipe": r, "model": mo, "tpp": t, "N": cs[0]["N"], "D": cs[0]["D"],
                         "loss_mean": float(np.mean([c["L"] for c in cs])),
                         "fit": predict(full, r, cs[0]["N"], cs[0]["D"]),
                         "log_residual": float(np.mean([math.log(c["L"] / predict(full, r, c["N"], c["D"]))
                                                        for c in cs]))}
                        for (r, mo, t), cs in sorted(cell_means(cells).items())]
    # the held-out cell
    keys = sorted({(c["model"], c["tpp"], c["N"], c["D"]) for c in cells}, key=lambda k: (k[2], k[3]))
    if holdout:
        mo, t = holdout.split(":")
        pick = [k for k in keys if k[0] == mo and k[1] == t]
        if not pick:
            res["holdout"] = {"error": f"no cell model={mo} tokens_per_param={t}"}
            return res
        hk = pick[0]
    else:
        hk = max(keys, key=lambda k: (k[2], k[3]))
    rest = [c for c in cells if (c["model"], c["tpp"]) != hk[:2]]
    ho = {"model": hk[0], "tpp": hk[1], "N": hk[2], "D": hk[3], "recipes": {}}
    pf = fit(rest, base)
    pfs = [fit([c for c in rest if c["seed"] == sd], base) for sd in seeds]
    if pf is None:
        ho["error"] = "too few cells left to fit without it"
    else:
        for r in sorted({c["recipe"] for c in cells}):
            obs = [c["L"] for c in cells if c["recipe"] == r and (c["model"], c["tpp"]) == hk[:2]]
            preds = [math.log(predict(p, r, hk[2], hk[3])) for p in pfs if p and r in p["eff_N"]]
            m, lo, hi, _, n = mean_ci(preds)
            om = float(np.mean(obs)) if obs else float("nan")
            pa = predict(pf, r, hk[2], hk[3])
            # in log L: the per-seed fits' t interval, centred on their mean (the point estimate reported), and
            # the prediction interval that adds the law's scatter about its cells, t with the fit's residual
            # degrees of freedom times its residual standard error
            centre = math.exp(m) if math.isfinite(m) else pa
            hw = (hi - lo) / 2 if math.isfinite(lo) else 0.0
            tq = stats.t.ppf(0.975, pf["dof"]) if pf["dof"] > 0 else float("nan")
            pw = math.hypot(hw, tq * pf["resid_se"])
            clo, chi = (math.exp(lo), math.exp(hi)) if math.isfinite(lo) else (float("nan"), float("nan"))
            ho["recipes"][r] = {"predicted_all_seeds": pa, "predicted_seed_mean": centre,
                                "ci_lo": clo, "ci_hi": chi, "n": n, "observed_mean": om,
                                "inside": bool(clo <= om <= chi) if math.isfinite(clo) else False,
                                "pi_lo": centre * math.exp(-pw), "pi_hi": centre * math.exp(pw),
                                "inside_pi": bool(centre * math.exp(-pw) <= om <= centre * math.exp(pw)),
                                "pi_t": tq, "pi_dof": pf["dof"]}
        # one law predicts every recipe here (the recipes share E, A, alpha, B, beta): one check, not one per recipe
        ho["one_check"] = {"inside_pi_all": all(h["inside_pi"] for h in ho["recipes"].values()),
                           "n_recipes": len(ho["recipes"])}
    res["holdout"] = ho
    return res


def gap_table(sweep, base):
    """Per (recipe, model, tpp): the summary's paired gap and its interval."""
    with h5py.File(os.path.join(sweep, "summary.h5"), "r") as f:
        g = f["recipes"][:]
    out = []
    for row in g:
        r = s(row["recipe"])
        if r == base:
            continue
        if not (math.isfinite(float(row["params_nonembedding"])) and math.isfinite(float(row["tokens_per_param_actual"]))
                and math.isfinite(float(row["gap_pct_mean"]))):
            continue  # no finished pair in this cell yet
        out.append({"recipe": r, "model": s(row["model"]) if "model" in g.dtype.names else "",
                    "tpp": s(row["tokens_per_param"]) if "tokens_per_param" in g.dtype.names else "",
                    "N": float(row["params_nonembedding"]), "tpp_actual": float(row["tokens_per_param_actual"]),
                    "gap": float(row["gap_pct_mean"]), "lo": float(row["gap_ci_lo"]), "hi": float(row["gap_ci_hi"]),
                    "resolved": int(row["resolved"]), "n": int(row["n_seeds"])})
    return out


def draw(res, gaps, out, plotsdir):
    """scaling_gap.dat and the figure (gnuplot, plots/scaling.gp)."""
    recipes = sorted({g["recipe"] for g in gaps})
    sizes = sorted({g["N"] for g in gaps})
    dat = os.path.join(out, "scaling_gap.dat")
    with open(dat, "w") as f:
        # index 2*(i*ns+j): measured points of recipe i, size j; index +1: the fit's curve
        for r in recipes:
            for N in sizes:
                pts = sorted((g for g in gaps if g["recipe"] == r and g["N"] == N), key=lambda g: g["tpp_actual"])
                f.write(f"# {r} N={N:.0f}: tokens_per_param gap_pct ci_lo ci_hi\n")
                for g in pts:
                    f.write(f"{g['tpp_actual']:.6g} {g['gap']:.6g} {g['lo'] if math.isfinite(g['lo']) else 'NaN'} "
                            f"{g['hi'] if math.isfinite(g['hi']) else 'NaN'}\n")
                if not pts:
                    f.write("NaN NaN NaN NaN\n")
                f.write("\n\n")
                f.write(f"# {r} N={N:.0f}: the fitted law's gap\n")
                p = res.get("fit")
                tlo = min(g["tpp_actual"] for g in gaps) / 1.3
                thi = max(g["tpp_actual"] for g in gaps) * 1.3
                for t in np.geomspace(tlo, thi, 40) if p else []:
                    lb = predict(p, p["baseline"], N, t * N)
                    f.write(f"{t:.6g} {100 * (predict(p, r, N, t * N) - lb) / lb:.6g}\n")
                if not p:
                    f.write("NaN NaN\n")
                f.write("\n\n")
    xlo = min(g["tpp_actual"] for g in gaps) / 1.3
    xhi = max(g["tpp_actual"] for g in gaps) * 1.3
    titles = " ".join(r.replace(" ", "_") for r in recipes)
    sz = " ".join(f"{N / 1e3:.0f}k" for N in sizes)
    for ext, term in (("pdf", "pdfcairo"), ("png", "pngcairo")):
        cmd = ["gnuplot", "-e", f"datafile='{dat}'; out='{os.path.join(out, 'scaling_gap.' + ext)}'; term='{term}'; "
               f"plotsdir='{plotsdir}'; nrec={len(recipes)}; nsize={len(sizes)}; recipes='{titles}'; sizes='{sz}'; "
               f"xlo={xlo:.6g}; xhi={xhi:.6g}",
               os.path.join(plotsdir, "scaling.gp")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0 or r.stderr.strip():
            sys.exit(f"scaling_fit: gnuplot: {r.stderr.strip() or r.returncode}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep")
    ap.add_argument("--out", required=True)
    ap.add_argument("--holdout", help="MODEL:TPP (axis values); default the largest model's largest ratio")
    ap.add_argument("--plotsdir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plots"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cells, base = load_cells(a.sweep)
    res = analyse(cells, base, a.holdout)
    gaps = gap_table(a.sweep, base)
    res["gaps"] = gaps
    with open(os.path.join(a.out, "scaling.json"), "w") as f:
        json.dump(res, f, indent=1, default=float)
    if gaps:
        draw(res, gaps, a.out, os.path.abspath(a.plotsdir))
    if "error" in res:
        print(f"scaling_fit: {res['error']}", file=sys.stderr)
    else:
        p = res["fit"]
        print(f"scaling_fit: L = {p['E']:.3f} + {p['A']:.3g}/N^{p['alpha']:.3f} + {p['B']:.3g}/D^{p['beta']:.3f}; "
              f"rms log residual {p['rms_log_residual']:.4f}")
        for r, e in res["efficiency"].items():
            print(f"  {r}: eff_N {e['eff_N']['all_seeds']:.3f} [{e['eff_N']['ci_lo']:.3f}, {e['eff_N']['ci_hi']:.3f}]"
                  f"  eff_D {e['eff_D']['all_seeds']:.3f} [{e['eff_D']['ci_lo']:.3f}, {e['eff_D']['ci_hi']:.3f}]")


if __name__ == "__main__":
    main()
