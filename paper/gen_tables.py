#!/usr/bin/env python3
"""gen_tables.py — every number and verdict of the paper, generated: LaTeX
macros and tables from the sweeps' summary.h5 (qsweep; columns read by name),
the scaling fit (paper/scaling_fit.py's scaling.json) and, for the error and
pipeline breakdowns, the run files themselves (h5py). Every verdict sentence
comes from paper/verdicts.py, which words a number by its 95% interval.

usage: gen_tables.py --study DIR --scaling DIR --ablation DIR --passes DIR --attribution DIR --pipeline DIR
                     --cell MODEL:TPP --out DIR
Writes OUT/macros.tex, OUT/table_{gaps,noise,fit,holdout,published,published_passes,ablation,passes,
attribution,qerr}.tex and OUT/section_recipes2026.tex (empty without --recipes2026); \\qp{key}{field} expands to a generated value."""
import argparse
import datetime
import glob
import json
import math
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_verdicts  # noqa: E402
import verdicts as v  # noqa: E402
from intervals import holm, mean_ci, paired_slope, t_pvalue, t_pvalue_from  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--study", required=True)
ap.add_argument("--scaling", required=True)
ap.add_argument("--ablation", required=True)
ap.add_argument("--passes", required=True, help="the per-pass sweep (experiments/passes.ini)")
ap.add_argument("--attribution", required=True, help="the per-layer attribution sweep (experiments/attribution.ini)")
ap.add_argument("--pipeline", required=True)
ap.add_argument("--recipes2026", help="the 2026 recipes sweep (experiments/recipes2026.ini); the full paper only: "
                "without it the section is left out")
ap.add_argument("--cell", required=True, help="MODEL:TPP, the cell the figures and the qerr table show")
ap.add_argument("--out", required=True)
ap.add_argument("--quick", action="store_true", help="the quick, low-powered variant (experiments/quick_*.ini): "
                "said in the title, the abstract and results.md")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
CELL_MODEL, CELL_TPP = args.cell.split(":")

# Published numbers: Quartet II's raw results, Llama on C4 (Panferov et al., "Quartet II: Accurate LLM
# Pre-Training in NVFP4 by Improved Unbiased Gradient Estimation", arXiv:2601.22813):
# NVIDIA's NVFP4 recipe minus BF16, in nats, at ~25, ~100, ~400 tokens/parameter.
PUBLISHED = {"30M": {25: 0.055, 100: 0.079, 400: 0.103}, "100M": {25: 0.057, 100: 0.073, 400: 0.080}}
PUBLISHED_NOISE = "0.002--0.004"
# ... and by pass at 30M (the same paper): forward-only NVFP4 with 1x16 and with 16x16 weight blocks, backward-only
PUBLISHED_PASSES = {("fprop", "1x16"): 0.061, ("fprop", "16x16"): 0.070, ("dgrad+wgrad", "16x16"): (0.001, 0.015)}


def s(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def tex(text):
    return (str(text).replace("\\", "\\textbackslash{}").replace("_", r"\_").replace("%", r"\%")
            .replace("&", r"\&").replace("#", r"\#").replace("|", ",").replace("–", "--").replace("²", "$^2$"))


def summary(d):
    p = os.path.join(d, "summary.h5")
    if not os.path.exists(p):
        sys.exit(f"gen_tables: {p} missing: run the sweep (paper/build.sh) first")
    with h5py.File(p, "r") as f:
        return f["runs"][:], f["recipes"][:], (f["noise"][:] if "noise" in f else None), dict(f.attrs)


macros = {}
# results.md: the same verdict sentences in plain text (Markdown), by section, in the order written
results = {}


def m(key, field, value):
    macros[(key, field)] = value


def say(section, text):
    """A verdict (plain text) for docs/results.md; the paper's macro gets tex(text)."""
    if text:
        results.setdefault(section, []).append(text)
    return text


def fin(x):
    return x is not None and isinstance(x, (int, float, np.floating)) and math.isfinite(x)


def pct(x, lo=None, hi=None):
    if not fin(x):
        return "--"
    if lo is None or not (fin(lo) and fin(hi)):
        return f"{x:+.2f}"
    return f"{x:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def bold(text, flag):
    return "\\textbf{" + text + "}" if flag else text


def write(name, text):
    with open(os.path.join(args.out, name), "w") as f:
        f.write(text)


def sweep_setup(key, sweep, groups):
    """Macros KEY.setup (the model and length of a sweep's first run file) and KEY.nseeds."""
    with h5py.File(sorted(p_ for p_ in glob.glob(os.path.join(sweep, "runs", "*.h5"))
                          if not p_.endswith(".ckpt.h5"))[0], "r", libver="latest", swmr=True) as f:
        a_ = {k: s(v_) for k, v_ in f.attrs.items()}
    m(key, "setup", tex(f"{a_.get('layers')} blocks, width {a_.get('dim')}, {a_.get('steps')} steps of "
                        f"{int(a_.get('batch', 0)) * int(a_.get('seq', 0))} tokens "
                        f"({float(a_.get('tokens_per_param', 'nan')):.2g} tokens/parameter)"))
    m(key, "nseeds", str(int(groups["n_seeds"].max())))


def rows_where(table, **kw):
    names = table.dtype.names
    return [r for r in table if all(k in names and s(r[k]) == str(val) for k, val in kw.items())]


# ---- the study: sizes x tokens per parameter x recipes x seeds ------------------------------
runs, groups, noise, sattrs = summary(args.study)
base = s(sattrs.get("baseline", "bf16"))
gn = groups.dtype.names
recipes = list(dict.fromkeys(s(r) for r in groups["recipe"]))
others = [r for r in recipes if r != base]
models = list(dict.fromkeys(s(r) for r in groups["model"])) if "model" in gn else [CELL_MODEL]
tpps = sorted(dict.fromkeys(s(r) for r in groups["tokens_per_param"]), key=float) if "tokens_per_param" in gn else \
    [CELL_TPP]
done = [r for r in runs if s(r["status"]) == "done"]
if not done:
    sys.exit("gen_tables: no finished run in the study sweep")
first = sorted(p for p in glob.glob(os.path.join(args.study, "runs", "*.h5")) if not p.endswith(".ckpt.h5"))
with h5py.File(first[0], "r", libver="latest", swmr=True) as f:
    a = {k: s(v_) for k, v_ in f.attrs.items()}
for k in ["heads", "seq", "batch", "lr", "warmup", "val_tokens"]:
    m("study", k.replace("_", ""), a.get(k, "?"))
m("study", "corpus", tex(os.path.basename(a.get("data", "?"))))
m("study", "nrecipes", str(len(recipes)))
m("study", "nseeds", str(int(groups["n_seeds"].max())))
m("study", "nruns", str(len(runs)))
m("study", "ndone", str(len(done)))
m("study", "date", datetime.date.today().isoformat())
m("study", "models", ", ".join(tex(x) for x in models))
m("study", "tpps", ", ".join(tpps))
m("study", "cellmodel", tex(CELL_MODEL))
m("study", "celltpp", CELL_TPP)
ep = [float(r["epochs"]) for r in runs if math.isfinite(float(r["epochs"]))]
m("study", "epochsmax", f"{max(ep):.2f}" if ep else "?")
Ns = {}
for g in groups:
    if "model" in gn and fin(float(g["params_nonembedding"])):
        Ns[s(g["model"])] = float(g["params_nonembedding"])
m("study", "sizes", ", ".join(f"{tex(k)} ({v_ / 1e3:.0f}k)" for k, v_ in Ns.items()))
if Ns:
    m("study", "sizespan", f"{max(Ns.values()) / min(Ns.values()):.1f}")
m("study", "tppspan", f"{float(tpps[-1]) / float(tpps[0]):g}")

# the gap table's family: every recipe's gap in every cell (not the noise twins), Holm-adjusted together
gap_family = [g for g in groups if s(g["recipe"]) != base and not ("noise" in gn and int(g["noise"]))]
gap_p = [t_pvalue_from(float(g["gap_pct_mean"]), float(g["gap_pct_std"]), int(g["n_seeds"])) for g in gap_family]
gap_rej, gap_adj = holm(gap_p)
NGAP = sum(1 for x in gap_p if fin(x))


def gkey(g):
    return (s(g["model"]) if "model" in gn else "", s(g["tokens_per_param"]) if "tokens_per_param" in gn else "",
            s(g["recipe"]))


gap_holm = {gkey(g): (a_, r_) for g, a_, r_ in zip(gap_family, gap_adj, gap_rej)}
n_raw = sum(1 for g in gap_family if int(g["resolved"]))
n_holm = sum(1 for x in gap_rej if x)
m("mult", "ngaps", str(NGAP))
m("mult", "gapsraw", str(n_raw))
m("mult", "gapsholm", str(n_holm))
m("verdict", "multiplicity", tex(say("Multiplicity", (
    f"The gap table is one family of {NGAP} verdicts, controlled by Holm's step-down correction (family-wise error "
    f"rate 5%): {n_raw} of the {NGAP} gap intervals exclude 0 on their own, and {n_holm} stay resolved after the "
    "correction; only those are called resolved here."))))

# the gap table: a row per cell, a column per recipe
lines = []
for mo in models:
    for t in tpps:
        cell = rows_where(groups, **({"model": mo} if "model" in gn else {}),
                          **({"tokens_per_param": t} if "tokens_per_param" in gn else {}))
        if not cell:
            continue
        epochs = max((float(g["epochs_max"]) for g in cell if fin(float(g["epochs_max"]))), default=float("nan"))
        cells = []
        for r in others:
            g = [x for x in cell if s(x["recipe"]) == r]
            if not g:
                cells.append("--")
                continue
            g = g[0]
            txt = pct(float(g["gap_pct_mean"]), float(g["gap_ci_lo"]), float(g["gap_ci_hi"]))
            hr = gap_holm.get(gkey(g), (float("nan"), False))[1]
            cells.append(bold(txt, hr) if hr or not int(g["resolved"]) else "\\textit{" + txt + "}")
        lines.append(f"{tex(mo)} & {t} & {epochs:.2f} & " + " & ".join(cells) + " \\\\")
write("table_gaps.tex",
      "\\begin{table*}[t]\\centering\\small\n\\begin{tabular}{lrr" + "r" * len(others) + "}\n\\toprule\n"
      "model & tokens/param & epochs & " + " & ".join(tex(r) for r in others) + " \\\\\n\\midrule\n" +
      "\n".join(lines) + "\n\\bottomrule\n\\end{tabular}\n"
      f"\\caption{{Final validation loss gap to {tex(base)} in \\% of {tex(base)}'s loss: the mean over "
      f"{macros[('study', 'nseeds')]} seeds of the gap to the {tex(base)} run of the same seed (same initial weights "
      "and batches), with its 95\\% Student t interval. Bold: resolved after Holm's correction "
      f"across the table's {NGAP} gaps (family-wise error 5\\%); italic: the interval alone excludes 0, the "
      "correction does not keep it.}\\label{tab:gaps}\n\\end{table*}\n")

# the noise floor per cell
nrows, rms_all = [], []
if noise is not None and len(noise):
    for g in noise:
        mo = s(g["model"]) if "model" in noise.dtype.names else ""
        t = s(g["tokens_per_param"]) if "tokens_per_param" in noise.dtype.names else ""
        rms_all.append(float(g["gap_pct_rms"]))
        nrows.append(f"{tex(mo)} & {t} & {tex(s(g['recipe']))} & {int(g['n_seeds'])} & "
                     f"{pct(float(g['gap_pct_mean']), float(g['gap_ci_lo']), float(g['gap_ci_hi']))} & "
                     f"{float(g['gap_pct_rms']):.2f} \\\\")
write("table_noise.tex",
      "\\begin{table*}[t]\\centering\\small\n\\begin{tabular}{lrlrrr}\n\\toprule\n"
      "model & tok/param & recipe & seeds & gap \\% [95\\% CI] & rms \\\\\n\\midrule\n" +
      ("\n".join(nrows) if nrows else "\\multicolumn{6}{c}{no noise twins in this sweep} \\\\") +
      "\n\\bottomrule\n\\end{tabular}\n\\caption{The noise floor: the same recipe and initial weights under "
      "another data seed (batches, stochastic rounding, Hadamard signs), against the run of its seed. A recipe's "
      "gap inside this floor is not a property of its format.}\\label{tab:noise}\n\\end{table*}\n")
noise_rms = float(np.sqrt(np.mean(np.square(rms_all)))) if rms_all else float("nan")
# the noise twins have no gap by construction: how many "resolve" is the empirical false-positive rate
if noise is not None and len(noise):
    nz = [g for g in noise if int(g["n_seeds"]) >= 2]
    nz_raw = sum(1 for g in nz if int(g["resolved"]))
    nz_rej, _ = holm([t_pvalue_from(float(g["gap_pct_mean"]), float(g["gap_pct_std"]), int(g["n_seeds"])) for g in nz])
    fp = say("Noise floor", (
        f"The noise twins have no gap by construction; of their {len(nz)} gaps with an interval, {nz_raw} "
        f"{'excludes' if nz_raw == 1 else 'exclude'} 0 on its own, an empirical false-positive rate of {100 * nz_raw / max(1, len(nz)):.0f}% beside the nominal "
        f"5%, and {sum(nz_rej)} after Holm's correction across the {len(nz)}."))
else:
    fp = "This sweep has no noise twins, so no false-positive rate is measured."
m("verdict", "falsepositive", tex(fp))
m("noise", "rms", f"{noise_rms:.2f}" if fin(noise_rms) else "n/a")

# verdicts in the figures' cell
where = {}
if "model" in gn:
    where["model"] = CELL_MODEL
if "tokens_per_param" in gn:
    where["tokens_per_param"] = CELL_TPP
cellnoise = [float(g["gap_pct_rms"]) for g in (noise if noise is not None else [])
             if all(k not in noise.dtype.names or s(g[k]) == val for k, val in where.items())]
ver = gen_verdicts.study_verdicts(
    os.path.join(args.study, "summary.h5"), where, noise_rms=cellnoise[0] if cellnoise else None,
    holm_by_recipe={r: (gap_holm[(k_[0], k_[1], r)][0], NGAP) for k_ in gap_holm for r in [k_[2]]
                    if k_[:2] == (where.get("model", ""), where.get("tokens_per_param", ""))})
for k, sentence in ver.items():
    m("verdict", k.replace("-", ""), tex(say(f"The cell {CELL_MODEL} at {CELL_TPP} tokens per parameter", sentence)))
for r in others:
    g = rows_where(groups, recipe=r, **where)
    if g:
        m(r, "gap", pct(float(g[0]["gap_pct_mean"])))
        m(r, "gapci", pct(float(g[0]["gap_pct_mean"]), float(g[0]["gap_ci_lo"]), float(g[0]["gap_ci_hi"])))

# trends along tokens per parameter (per size) and along size (per ratio): paired slopes per seed (the change of
# the gap per doubling of the axis, a t interval over seeds), one family Holm-adjusted together
def seed_points(recipe, axis, **w):
    """{seed: [(x, gap_pct)]} of a recipe's done, non-twin runs matching w, x the axis value (tokens per
    parameter, or the model's non-embedding parameters)."""
    out = {}
    for r_ in rows_where(runs, recipe=recipe, **w):
        if s(r_["status"]) != "done" or ("noise_twin" in runs.dtype.names and int(r_["noise_twin"])):
            continue
        g_ = float(r_["gap_pct"])
        x_ = float(s(r_["tokens_per_param"])) if axis == "tokens_per_param" else Ns.get(s(r_["model"]), float("nan"))
        if fin(g_) and fin(x_):
            out.setdefault(s(r_["seed"]), []).append((x_, g_))
    return out


trend_rows = []  # (label, axis words, slope tuple)
for r in [x for x in ("nvfp4", "mxfp4", "fp8") if x in others]:
    if "tokens_per_param" in gn and "model" in gn:
        for mo in models:
            sl = paired_slope(seed_points(r, "tokens_per_param", model=mo))
            if sl[4] >= 1:
                trend_rows.append((f"{gen_verdicts.label(r)}'s gap at {mo}", "tokens per parameter", sl, r, mo))
        for t in tpps:
            sl = paired_slope(seed_points(r, "model", tokens_per_param=t))
            if sl[4] >= 1:
                trend_rows.append((f"{gen_verdicts.label(r)}'s gap at {t} tokens per parameter", "model size", sl, r, t))
trend_rej, trend_adj = holm([x[2][5] for x in trend_rows])
NTREND = sum(1 for x in trend_rows if fin(x[2][5]))
trend_by = {}
trend = []
for (lab, axis, (mm, lo, hi, res, n, p_), r, where_), adj in zip(trend_rows, trend_adj):
    sent = v.trend(lab, mm, lo, hi, n, axis, p_adj=adj, family=NTREND)
    trend_by[(r, axis, where_)] = sent
    trend.append(sent)
resolved_trends = [t_ for t_, rj in zip(trend, trend_rej) if rj]
unres = len(trend) - len(resolved_trends)
trend_text = (" ".join(resolved_trends) + (" " if resolved_trends else "") +
              (f"{'The other ' + str(unres) + ' of the ' + str(len(trend)) if resolved_trends else 'All ' + str(unres)} trends (FP8, NVFP4 and MXFP4 along tokens per parameter at each "
               "size and along size at each length) are unresolved: their per-seed slopes' intervals include 0, or "
               f"do not survive Holm's correction across the {NTREND}." if unres else ""))
for t_ in trend:
    say("Trends (paired slopes per doubling, Holm across the family)", t_)
m("verdict", "trends", tex(trend_text) + " Table~\\ref{tab:slopes} lists every slope." if trend else
  "No recipe was run at two cells.")
write("table_slopes.tex",
      "\\begin{table}[t]\\centering\\small\n\\begin{tabular}{llr}\n\\toprule\n"
      "gap of & along & \\% per doubling [95\\% CI] \\\\\n\\midrule\n" +
      "\n".join(f"{tex(r)} at {tex(w_)} & "
                f"{'tok/param' if ax == 'tokens per parameter' else 'size'} & "
                f"{bold(pct(sl[0], sl[1], sl[2]), rj)} \\\\"
                for (lab, ax, sl, r, w_), rj in zip(trend_rows, trend_rej)) +
      "\n\\bottomrule\n\\end{tabular}\n\\caption{Trends as paired contrasts: per seed, the least-squares change "
      "of the gap per doubling of tokens per parameter (at one size) or of non-embedding parameters (at one length); "
      f"mean and t interval over seeds. Bold: resolved after Holm's correction across the {NTREND}.}}"
      "\\label{tab:slopes}\n\\end{table}\n")

# MXFP4 against NVFP4 and FP8 against the noise floor, in every cell
cmp_lines = []
for mo in models:
    for t in tpps:
        w = {**({"model": mo} if "model" in gn else {}), **({"tokens_per_param": t} if "tokens_per_param" in gn else {})}
        d = gen_verdicts.paired(runs, "mxfp4", "nvfp4", w)
        if d:
            mm, lo, hi, res, n = mean_ci(d)
            cmp_lines.append((mo, t, "MXFP4 $-$ NVFP4", pct(mm, lo, hi), res, t_pvalue(d)))
        d = [float(r["gap_pct"]) for r in rows_where(runs, recipe="fp8", **w) if fin(float(r["gap_pct"]))
             and not ("noise_twin" in runs.dtype.names and int(r["noise_twin"]))]
        if d:
            mm, lo, hi, res, n = mean_ci(d)
            nr = [float(g["gap_pct_rms"]) for g in (noise if noise is not None else [])
                  if all(k not in noise.dtype.names or s(g[k]) == val for k, val in w.items())]
            cmp_lines.append((mo, t, "FP8" + (f" (noise rms {nr[0]:.2f})" if nr else ""), pct(mm, lo, hi), res,
                              t_pvalue(d)))
cmp_rej, _ = holm([c[5] for c in cmp_lines])
NCMP = sum(1 for c in cmp_lines if fin(c[5]))
cmp_lines = [c[:4] + (rj,) for c, rj in zip(cmp_lines, cmp_rej)]
n_mx = sum(1 for c in cmp_lines if c[2].startswith("MXFP4"))
n_mx_res = sum(1 for c in cmp_lines if c[2].startswith("MXFP4") and c[4] and c[3].startswith("+"))
n_mx_rev = sum(1 for c in cmp_lines if c[2].startswith("MXFP4") and c[4] and c[3].startswith("-"))
n_f8 = sum(1 for c in cmp_lines if c[2].startswith("FP8"))
n_f8_res = sum(1 for c in cmp_lines if c[2].startswith("FP8") and c[4])
cmp_text = ((f"MXFP4's gap minus NVFP4's, paired by seed, is resolved above 0 in {n_mx_res} of {n_mx} cells and "
             f"below 0 in {n_mx_rev}, after Holm's correction across the {NCMP} verdicts of that table; in the other "
             "cells it is unresolved. " if n_mx else "") +
            (f"FP8's own gap is resolved from 0 in {n_f8_res} of {n_f8} cells." if n_f8 else ""))
m("verdict", "mxfp4count", tex(say("MXFP4 against NVFP4, FP8 per cell", cmp_text.strip())) +
  (" Table~\\ref{tab:trend} lists every cell." if cmp_lines else ""))
write("table_trend.tex",
      "\\begin{table*}[t]\\centering\\small\n\\begin{tabular}{lrlr}\n\\toprule\n"
      "model & tok/param & quantity & \\% [95\\% CI] \\\\\n\\midrule\n" +
      "\n".join(f"{tex(a_)} & {b_} & {c_} & {bold(d_, e_)} \\\\" for a_, b_, c_, d_, e_ in cmp_lines) +
      "\n\\bottomrule\n\\end{tabular}\n\\caption{Per cell: MXFP4's paired gap minus NVFP4's, and FP8's gap with "
      f"the cell's noise floor. Bold: resolved after Holm's correction across the table's {NCMP}.}}"
      "\\label{tab:trend}\n\\end{table*}\n")

# ---- the scaling fit -------------------------------------------------------------------------------
with open(os.path.join(args.scaling, "scaling.json")) as f:
    sc = json.load(f)
if "fit" in sc:
    p = sc["fit"]
    m("fit", "E", f"{p['E']:.3f}" if p.get("E_identified", True) else "0")
    m("fit", "A", f"{p['A']:.3g}")
    m("fit", "alpha", f"{p['alpha']:.3f}")
    m("fit", "B", f"{p['B']:.3g}")
    m("fit", "beta", f"{p['beta']:.3f}")
    m("fit", "resid", f"{p['rms_log_residual']:.4f}")
    m("fit", "ncells", str(p["n_cells"]))
    frows, fsent = [], []
    how = ("The fit is in two stages, least squares on log L: BF16's law first, then each recipe's two efficiencies "
           "with the law held fixed.")
    if not p.get("E_identified", True):
        how += (" E is not identified by this grid (it ran to its lower bound), so the law is refitted without it "
                "(E = 0).")
    if p.get("at_bound"):
        how += f" At a bound of the fit, so not identified by this grid: {', '.join(p['at_bound'])}."
    fsent.append(how)
    for r, e in sc["efficiency"].items():
        cells_ = []
        for kind in ("eff_N", "eff_D"):
            x = e[kind]
            pt = x.get("seed_mean", x["all_seeds"])
            cells_.append("not identified" if x.get("at_bound") else
                          f"{pt:.3g} [{x['ci_lo']:.3g}, {x['ci_hi']:.3g}]" if fin(x["ci_lo"]) else f"{pt:.3g}")
            what = f"{gen_verdicts.label(r)}'s {'parameter' if kind == 'eff_N' else 'data'} efficiency"
            ci = f"{pt:.3g}, 95% CI [{x['ci_lo']:.3g}, {x['ci_hi']:.3g}] over per-seed fits, log scale"
            if x.get("at_bound"):
                fsent.append(f"{what} runs to a bound of the fit (0.01 or 100) in some fit: not identified.")
            elif x["below_1"]:
                fsent.append(f"{what} is below 1 ({ci}): resolved.")
            elif x.get("above_1"):
                fsent.append(f"{what} is above 1 ({ci}): resolved.")
            elif fin(x["ci_lo"]):
                fsent.append(f"{what} ({ci}) is unresolved from 1.")
        frows.append(f"{tex(r)} & " + " & ".join(cells_) + " \\\\")
    write("table_fit.tex",
          "\\begin{table}[t]\\centering\\small\n\\begin{tabular}{lrr}\n\\toprule\n"
          "recipe & eff$_N$ [95\\% CI] & eff$_D$ [95\\% CI] \\\\\n\\midrule\n" + "\n".join(frows) +
          "\n\\bottomrule\n\\end{tabular}\n\\caption{Effective parameter and data efficiency: the multipliers of "
          f"$N$ and $D$ that map each recipe onto {tex(base)}'s law; the geometric mean of the per-seed fits with "
          "its t interval on the log scale.}\\label{tab:fit}\n\\end{table}\n")
    m("verdict", "fit", tex(say("The loss law", " ".join(fsent))))
    ho = sc.get("holdout", {})
    hrows, inside, inside_pi = [], 0, 0
    for r, h in ho.get("recipes", {}).items():
        inside += h["inside"]
        inside_pi += h.get("inside_pi", False)
        hrows.append(f"{tex(r)} & {h.get('predicted_seed_mean', h['predicted_all_seeds']):.3f} & "
                     + (f"[{h['ci_lo']:.3f}, {h['ci_hi']:.3f}]" if fin(h["ci_lo"]) else "--")
                     + " & " + (f"[{h['pi_lo']:.3f}, {h['pi_hi']:.3f}]" if "pi_lo" in h else "--")
                     + f" & {h['observed_mean']:.3f} \\\\")
    dof = next((h.get("pi_dof") for h in ho.get("recipes", {}).values()), None)
    write("table_holdout.tex",
          "\\begin{table*}[t]\\centering\\small\n\\begin{tabular}{lrrrr}\n\\toprule\n"
          "recipe & predicted & per-seed fits' interval & prediction interval & measured \\\\\n"
          "\\midrule\n" + "\n".join(hrows) +
          "\n\\bottomrule\n\\end{tabular}\n\\caption{The held-out cell (" + tex(str(ho.get("model"))) + ", " +
          str(ho.get("tpp")) + " tokens/parameter), validation loss in nats per byte: the law fitted without it "
          "predicts it (the geometric mean of the per-seed fits' predictions, with their 95\\% t interval: the "
          "law's own uncertainty) and the prediction interval that adds the law's scatter about the cells it was "
          f"fitted to (t with {dof} residual degrees of freedom times its residual standard error, in log L), against "
          "the measured mean. The recipes share one law: the cell is one check of it.}\\label{tab:holdout}\n"
          "\\end{table*}\n")
    m("holdout", "cell", f"{tex(str(ho.get('model')))} at {ho.get('tpp')} tokens/parameter")
    nrec = len(ho.get("recipes", {}))
    if nrec:
        m("verdict", "holdout", tex(say("The loss law", (
            f"Fitted without the cell {ho.get('model')} at {ho.get('tpp')} tokens per parameter, the law predicts "
            f"it inside the prediction interval for {inside_pi} of {nrec} recipes and inside the per-seed fits' "
            f"interval for {inside}; the recipes share one law, so this is one held-out check of one law, "
            f"{'passed' if inside_pi == nrec else 'failed'}, not {nrec} independent ones."))))
    else:
        m("verdict", "holdout", tex(say("The loss law", "The law could not be fitted without the held-out cell: "
                                         + str(ho.get("error", "")) + ".")))
    # published comparison: the fit's NVFP4 gap in nats at 25/100/400 tokens per parameter for each size
    prow = []
    sizes = sorted(Ns.items(), key=lambda kv: kv[1])
    law_gap = {}  # (size, tokens per parameter) -> the law's NVFP4 gap in nats
    for t in (25, 100, 400):
        cells_ = [f"{PUBLISHED['30M'][t]:+.3f}", f"{PUBLISHED['100M'][t]:+.3f}"]
        for name, N in sizes:
            if "nvfp4" in p["eff_N"]:
                def law(r):
                    return (p["E"] + p["A"] / (p["eff_N"][r] * N) ** p["alpha"] +
                            p["B"] / (p["eff_D"][r] * t * N) ** p["beta"])
                meas = [g for g in rows_where(groups, recipe="nvfp4", model=name)
                        if abs(float(g["tokens_per_param_actual"]) - t) / t < 0.05] if "model" in gn else []
                law_gap[(name, t)] = law('nvfp4') - law(base)
                txt = f"{law_gap[(name, t)]:+.3f}"
                if meas:
                    bl = rows_where(groups, recipe=base, model=name, tokens_per_param=s(meas[0]["tokens_per_param"]))
                    txt += f" (meas. {float(meas[0]['val_loss_mean']) - float(bl[0]['val_loss_mean']):+.3f})"
                cells_.append(txt)
        prow.append(f"{t} & " + " & ".join(cells_) + " \\\\")
    write("table_published.tex",
          "\\begin{table*}[t]\\centering\\small\n\\begin{tabular}{r" + "r" * (2 + len(sizes)) + "}\n\\toprule\n"
          "tokens/param & Quartet-II 30M & Quartet-II 100M & " +
          " & ".join(f"qprec {tex(n)} ({N / 1e3:.0f}k)" for n, N in sizes) + " \\\\\n\\midrule\n" + "\n".join(prow) +
          "\n\\bottomrule\n\\end{tabular}\n\\caption{NVIDIA's NVFP4 recipe minus BF16 in validation loss: "
          "Quartet-II's in nats per BPE token, qprec's in nats per byte (byte tokens), so the columns are in unlike "
          "units and compare in sign and order only. Published: Quartet-II's raw results, Llama models on C4 (repeat "
          "runs differ by "
          f"{PUBLISHED_NOISE} nats). qprec: the fitted law of Table~\\ref{{tab:fit}} at each size (an "
          "extrapolation outside the grid), with the measured seed-mean difference where the grid has that "
          "cell.}\\label{tab:published}\n\\end{table*}\n")
    # the trend beside the published one: only the grid's paired slopes carry an interval; the law's extrapolation
    # has none here (its per-seed fits are not extrapolated), so it is printed, not judged
    trend = []
    pubvals = ", ".join(f"{PUBLISHED['30M'][t]:+.3f}" for t in (25, 100, 400))
    if law_gap:
        n0 = sizes[0][0]
        trend.append(f"Extrapolated to 25, 100 and 400 tokens per parameter, the law's NVFP4 gap at {n0} is "
                     f"{law_gap[(n0, 25)]:+.3f}, {law_gap[(n0, 100)]:+.3f} and {law_gap[(n0, 400)]:+.3f} nats per byte; "
                     "the law gives no interval for this trend, so it is not judged against Quartet-II's "
                     f"({pubvals} nats per BPE token at 30M, a different unit).")
        if p["eff_D"].get("nvfp4", 1.0) < 1.0:
            trend.append("A data efficiency below 1 that does not change with D gives a gap that is a fixed multiple "
                         "of the law's data term, which falls as D rises: the law cannot follow a gap that rises "
                         "with data, so its extrapolation is not a prediction of the trend.")
    if "model" in gn and "tokens_per_param" in gn:
        for name, _ in reversed(sizes):
            sent = trend_by.get(("nvfp4", "tokens per parameter", name))
            if sent:
                trend.append(f"Measured in the grid: {sent} Quartet-II reports {pubvals} nats at 25, 100 and 400 "
                             "tokens per parameter (30M); a published trend is matched only by a resolved one here.")
                break
    m("verdict", "publishedtrend", tex(say("Against published results", " ".join(trend))))
else:
    m("fit", "error", tex(sc.get("error", "no fit")))
    for name in ("table_fit.tex", "table_holdout.tex", "table_published.tex"):
        write(name, "% no fit: " + sc.get("error", "") + "\n")
    m("verdict", "fit", tex("The loss law could not be fitted: " + sc.get("error", "") + "."))
    m("verdict", "publishedtrend", tex("No law was fitted, so nothing is extrapolated to the published sizes."))
    m("verdict", "holdout", "")

# ---- the NVFP4 ablation -------------------------------------------------------------------------
def ablation_section():
    aruns, agroups, _, aattrs = summary(args.ablation)
    abase = s(aattrs.get("baseline", "nvfp4"))
    abl_rows, abl_sent = [], []
    # the gap of each variant to BF16 of the same seed, when the ablation runs BF16 too
    has_bf16 = any(s(g["recipe"]) == "bf16" for g in agroups)


    def gap_to_bf16(r):
        """Per seed: 100 x (r's final validation loss - bf16's) / bf16's."""
        def by_seed(x_):
            return {s(x["seed"]): float(x["final_val_loss"]) for x in aruns
                    if s(x["recipe"]) == x_ and s(x["status"]) == "done" and fin(float(x["final_val_loss"]))}
        ga, gb = by_seed(r), by_seed("bf16")
        return {k: 100 * (ga[k] - gb[k]) / gb[k] for k in ga if k in gb}


    for g in agroups:
        r = s(g["recipe"])
        if r == "bf16" and r != abase:
            continue
        bf = ""
        if has_bf16:
            mm, lo, hi, res, _ = mean_ci(list(gap_to_bf16(r).values()))
            bf = " & " + bold(pct(mm, lo, hi), res)
        if r == abase:
            abl_rows.append(f"{tex(r)} (reference) & {float(g['val_loss_mean']):.4f} & --{bf} \\\\")
            continue
        txt = pct(float(g["gap_pct_mean"]), float(g["gap_ci_lo"]), float(g["gap_ci_hi"]))
        abl_rows.append(f"{tex(r)} & {float(g['val_loss_mean']):.4f} & "
                        f"{bold(txt, int(g['resolved']))}{bf} \\\\")
        abl_sent.append((r, float(g["gap_pct_mean"]), float(g["gap_ci_lo"]), float(g["gap_ci_hi"]), int(g["n_seeds"])))
    write("table_ablation.tex",
          "\\begin{table*}[t]\\centering\\small\n\\begin{tabular}{lrr" + ("r" if has_bf16 else "") + "}\n\\toprule\n"
          "variant & val.\\ loss & gap \\% [95\\% CI]" + (" & to BF16 \\% [95\\% CI]" if has_bf16 else "") +
          " \\\\\n\\midrule\n" + "\n".join(abl_rows) +
          "\n\\bottomrule\n\\end{tabular}\n\\caption{NVFP4 recipe ablation: gap to the full recipe (paired by seed), "
          "mean and 95\\% interval over seeds" + ("; to BF16: each variant's gap to the BF16 run of the same seed" if
                                                 has_bf16 else "") +
          "; bold: resolved. A modifier drops one element of NVIDIA's recipe; "
          "bf16-last=N keeps N final blocks in BF16.}\\label{tab:ablation}\n\\end{table*}\n")
    m("verdict", "ablation", tex(say("NVFP4 ablation", v.gaps(abl_sent, base="the full recipe"))))
    # the question: is NVIDIA's full recipe worse than the naive one? Their paired difference
    # (the same as the naive row's gap to the full recipe, read the other way), in % of the full recipe's loss
    naive = rows_where(agroups, recipe="nvfp4-naive")
    if naive and abase == "nvfp4":
        d_ = [-float(x["gap_pct"]) for x in aruns if s(x["recipe"]) == "nvfp4-naive" and fin(float(x["gap_pct"]))]
        mm, lo, hi, _, n_ = mean_ci(d_)
        m("verdict", "fullvsnaive", tex(say("NVFP4 ablation", v.compare(
            "NVIDIA's full recipe", "the naive recipe", mm, lo, hi, n_, what="final loss (in % of the full recipe's)"))))
    else:
        m("verdict", "fullvsnaive", "")
    sweep_setup("ablation", args.ablation, agroups)




# ---- by pass: NVIDIA's NVFP4 plan in some passes, the others BF16 -----------------------------------
def passes_section():
    PASSES = ("fprop", "dgrad", "wgrad")


    def pass_plan(recipe):
        """(quantized passes joined by '+', weight blocks) of a passes.ini recipe: nvfp4 with 'P+Q=bf16' rules
        turning passes back to BF16 and 'w:1d' for 1x16 weight blocks."""
        off = set()
        for clause in recipe.split(","):
            if clause.endswith("=bf16") and set(clause[:-5].split("+")) <= set(PASSES):
                off |= set(clause[:-5].split("+"))
        on = [p_ for p_ in PASSES if p_ not in off]
        weights = "--" if on == ["wgrad"] else "1x16" if "w:1d" in recipe.split(",") else "16x16"
        return "+".join(on), weights


    def paired_nats(runs, a, b):
        """Per seed: a's final validation loss minus b's (the same seeds), in nats."""
        def by_seed(r):
            return {s(x["seed"]): float(x["final_val_loss"]) for x in runs
                    if s(x["recipe"]) == r and s(x["status"]) == "done" and fin(float(x["final_val_loss"]))}
        ga, gb = by_seed(a), by_seed(b)
        return [ga[k] - gb[k] for k in sorted(ga) if k in gb]


    def nats(m_, lo, hi):
        return "--" if not fin(m_) else f"{m_:+.3f}" if not (fin(lo) and fin(hi)) else f"{m_:+.3f} [{lo:+.3f}, {hi:+.3f}]"


    pruns, pgroups, _, pattrs = summary(args.passes)
    pbase = s(pattrs.get("baseline", "bf16"))
    prows, psent, by_pass = [], [], {}
    for g in pgroups:
        r = s(g["recipe"])
        if r == pbase:
            continue
        on, w = pass_plan(r)
        label = f"NVFP4 in {on.replace('+', ' and ')}" + (f" ({w} weights)" if w != "--" else "")
        mn, lo_n, hi_n, res_n, n_n = mean_ci(paired_nats(pruns, r, pbase))
        by_pass[(on, w)] = {"recipe": r, "nats": (mn, lo_n, hi_n, n_n), "label": label}
        txt = pct(float(g["gap_pct_mean"]), float(g["gap_ci_lo"]), float(g["gap_ci_hi"]))
        prows.append((len(on.split("+")), on, w, f"{on.replace('+', ' + ')} & {w} & {bold(txt, int(g['resolved']))} & "
                      f"{bold(nats(mn, lo_n, hi_n), res_n)} \\\\"))
        psent.append((label, float(g["gap_pct_mean"]), float(g["gap_ci_lo"]), float(g["gap_ci_hi"]), int(g["n_seeds"])))
    prows.sort(key=lambda x: (x[0], [PASSES.index(p_) for p_ in x[1].split("+")], x[2]))
    write("table_passes.tex",
          "\\begin{table*}[t]\\centering\\small\n\\begin{tabular}{llrr}\n\\toprule\n"
          "NVFP4 in & weights & gap \\% [95\\% CI] & nats [95\\% CI] \\\\\n\\midrule\n" + "\n".join(x[3] for x in prows) +
          "\n\\bottomrule\n\\end{tabular}\n\\caption{NVIDIA's NVFP4 recipe in some passes only, every other GEMM in "
          f"{tex(pbase)}: the gap to {tex(pbase)} of the same seed in \\% and in nats, mean and 95\\% interval over seeds; "
          "bold: resolved. Each pass keeps the recipe's plan: fprop 1x16 activations and 16x16 (or 1x16) weights, dgrad "
          "gradients with stochastic rounding, wgrad both operands with a 16-point Hadamard transform.}"
          "\\label{tab:passes}\n\\end{table*}\n")
    m("verdict", "passes", tex(say("By pass", v.gaps(psent, base=pbase.upper()))))
    sweep_setup("passes", args.passes, pgroups)
    cmp_ = []
    for (a_, wa), (b_, wb), what in ((("fprop", "16x16"), ("fprop", "1x16"), "16x16 against 1x16 weight blocks"),
                                     (("fprop", "16x16"), ("dgrad+wgrad", "16x16"), "forward against backward")):
        if (a_, wa) in by_pass and (b_, wb) in by_pass:
            d_ = gen_verdicts.paired(pruns, by_pass[(a_, wa)]["recipe"], by_pass[(b_, wb)]["recipe"])
            mm, lo, hi, _, n_ = mean_ci(d_)
            cmp_.append(v.compare(by_pass[(a_, wa)]["label"], by_pass[(b_, wb)]["label"], mm,
                                                             lo, hi, n_, what=f"gap to {pbase.upper()}"))
    m("verdict", "passescompare", tex(say("By pass", " ".join(cmp_))))

    # the published ablation by pass (Quartet-II, 30M), beside the same passes here, in nats
    pub_rows, pub_sent = [], []
    for (on, w), pub in PUBLISHED_PASSES.items():
        lab = {"fprop": "forward only", "dgrad+wgrad": "backward only"}[on] + f", {w} weights"
        got = by_pass.get((on, w))
        mn, lo, hi, n_ = got["nats"] if got else (float("nan"),) * 3 + (0,)
        ptxt = f"{pub[0]:+.3f} to {pub[1]:+.3f}" if isinstance(pub, tuple) else f"{pub:+.3f}"
        pub_rows.append(f"{lab} & {ptxt} & {bold(nats(mn, lo, hi), fin(lo) and (lo > 0 or hi < 0))} \\\\")
        pub_sent.append(v.published(f"NVFP4 {lab}", pub, mn, lo, hi, n_))
    write("table_published_passes.tex",
          "\\begin{table*}[t]\\centering\\small\n\\begin{tabular}{lrr}\n\\toprule\n"
          "NVFP4 in & Quartet-II 30M & qprec [95\\% CI] \\\\\n\\midrule\n" + "\n".join(pub_rows) +
          "\n\\bottomrule\n\\end{tabular}\n\\caption{NVIDIA's NVFP4 recipe in the forward or the backward passes "
          "only, gap to BF16 in nats: Quartet-II's published ablation (a 30M Llama on C4) beside the same passes "
          f"here ({tex(macros[('passes', 'setup')])}, Table~\\ref{{tab:passes}}); bold: resolved. The models differ "
          "300-fold in size, and the losses are in unlike units (Quartet-II: nats per BPE token; qprec: nats per byte): "
          "the comparison is of sign and order, not of value.}\\label{tab:publishedpasses}\n"
          "\\end{table*}\n")
    m("verdict", "publishedpasses", tex(say("Against published results", " ".join(pub_sent))))




# ---- per-layer attribution: one block at a time in each recipe ---------------------------------------
def attribution_section():
    with h5py.File(os.path.join(args.attribution, "summary.h5"), "r") as f:
        if "attribution" not in f or not len(f["attribution"]):
            sys.exit(f"gen_tables: {args.attribution}/summary.h5 has no /attribution rows: run it with attribute = blocks")
        attr = f["attribution"][:]
    _, atgroups, _, atattrs = summary(args.attribution)
    atbase = s(atattrs.get("baseline", "bf16"))
    arows, asent, folded = [], [], {}
    for g in atgroups:
        r = s(g["recipe"])
        if r == atbase:
            continue
        lab = gen_verdicts.label(r)
        full = pct(float(g["gap_pct_mean"]), float(g["gap_ci_lo"]), float(g["gap_ci_hi"]))
        arows.append(f"\\multicolumn{{4}}{{l}}{{\\textbf{{{tex(r)}}}: full gap {bold(full, int(g['resolved']))}\\%}} \\\\")
        asent.append(v.gap(lab, float(g["gap_pct_mean"]), float(g["gap_ci_lo"]), float(g["gap_ci_hi"]),
                           int(g["n_seeds"]), base=atbase.upper()))
        for a_ in [x for x in attr if s(x["recipe"]) == r]:
            blk, meth = s(a_["block"]), s(a_["share_method"])
            if meth == "kept":
                arows.append(f"& {blk} & 0 (BF16) & 0 (kept) \\\\")
            else:
                shr = (f"{float(a_['share_pct']):+.0f} [unbounded]" if meth == "unbounded" else
                       f"{float(a_['share_pct']):+.0f} [{float(a_['share_ci_lo']):+.0f}, {float(a_['share_ci_hi']):+.0f}]"
                       if meth == "fieller" else f"{float(a_['share_pct']):+.0f}")
                gtxt = pct(float(a_["gap_pct_mean"]), float(a_["gap_ci_lo"]), float(a_["gap_ci_hi"]))
                arows.append(f"& {blk} & {bold(gtxt, int(a_['resolved']))} & {bold(shr, int(a_['share_resolved']))} \\\\")
            sh = v.share(lab, blk, float(a_["share_pct"]), float(a_["share_ci_lo"]), float(a_["share_ci_hi"]),
                         int(a_["n_seeds"]), meth)
            kind = ("unknown" if "unknown" in sh else "unresolved" if "unresolved" in sh else
                    "kept" if meth == "kept" else None)
            if kind and blk != "sum":
                folded.setdefault((lab, kind), []).append(blk)
            else:
                asent.append(sh)
        for (lab_, kind), blks in [(k_, b_) for k_, b_ in folded.items() if k_[0] == lab]:
            which = ("block " + blks[0]) if len(blks) == 1 else "blocks " + ", ".join(blks[:-1]) + " and " + blks[-1]
            these = f"the share of block {blks[0]} is" if len(blks) == 1 else f"the shares of {which} are"
            asent.append({"unknown": f"{lab_}: {these} unknown, unbounded because the full gap itself is unresolved.",
                          "unresolved": f"{lab_}: {these} unresolved: the intervals include 0.",
                          "kept": f"{lab_} keeps {which} in BF16: no gap by construction."}[kind])
    write("table_attribution.tex",
          "\\begin{table}[t]\\centering\\small\n\\begin{tabular}{lrrr}\n\\toprule\n"
          "& block & block gap \\% [95\\% CI] & share \\% [95\\% CI] \\\\\n\\midrule\n" + "\n".join(arows) +
          "\n\\bottomrule\n\\end{tabular}\n\\caption{Per-layer attribution: each block alone in the recipe's plan, "
          f"every other block {tex(atbase)} (same seeds). Block gap: to {tex(atbase)}, in \\%; share: mean block gap over "
          "mean full gap with the paired Fieller 95\\% interval (unbounded when the full gap is unresolved); sum: the "
          "blocks' gaps added per seed. Bold: resolved.}\\label{tab:attribution}\n\\end{table}\n")
    m("verdict", "attribution", tex(say("By block", " ".join(asent))))
    sweep_setup("attribution", args.attribution, atgroups)




def missing_sweep(what, texs, verdicts, setups):
    """A sweep that has not run (or has no finished row): its tables say so, its verdicts say so, and the paper
    still builds from the rest."""
    note = f"The {what} sweep has no finished runs in this build, so this part is not reported."
    for t_ in texs:
        write(t_, f"% {note}\n")
    for k_ in verdicts:
        m("verdict", k_, tex(say(what.capitalize(), note) if k_ == verdicts[0] else ""))
    for k_ in setups:
        m(k_, "setup", "not run")
        m(k_, "nseeds", "0")


def has_rows(d, table="recipes"):
    p_ = os.path.join(d, "summary.h5")
    if not os.path.exists(p_):
        return False
    with h5py.File(p_, "r") as f:
        return table in f and len(f[table]) > 0 and (table != "recipes" or
                                                    any(s(x) == "done" for x in f["runs"]["status"]))


if has_rows(args.ablation):
    ablation_section()
else:
    missing_sweep("ablation", ["table_ablation.tex"], ["ablation", "fullvsnaive"], ["ablation"])
if has_rows(args.passes):
    passes_section()
else:
    missing_sweep("by-pass", ["table_passes.tex", "table_published_passes.tex"],
                  ["passes", "passescompare", "publishedpasses"], ["passes"])
if has_rows(args.attribution, "attribution"):
    attribution_section()
else:
    missing_sweep("attribution", ["table_attribution.tex"], ["attribution"], ["attribution"])


# ---- the 2026 recipes side by side (the full paper only) -----------------------------------------
# what each recipe of experiments/recipes2026.ini is, for the table
R2026_LABELS = {"te-nvfp4": "NVFP4 as TE runs it", "te-nvfp4-4o6": "TE with Four Over Six",
                "te-nvfp4-4o6|wgrad:rht=te": "TE with Four Over Six and RHT", "te-mxfp8": "MXFP8 (TE)",
                "te-fp8-block": "FP8 blocks (TE)"}
# the differences the file pairs its recipes for (a minus b, as summary.h5 spells them), as the verdicts name them
R2026_PAIRS = {("te-nvfp4-4o6", "te-nvfp4"): ("Four Over Six", "plain NVFP4"),
               ("te-nvfp4-4o6,wgrad:rht=te", "te-nvfp4-4o6"): ("Four Over Six with RHT", "Four Over Six alone")}


def recipes2026_section():
    rruns, rgroups, _, rattrs = summary(args.recipes2026)
    rbase = s(rattrs.get("baseline", "bf16"))
    rn = rgroups.dtype.names
    fam = [g for g in rgroups if s(g["recipe"]) != rbase]
    p_ = [t_pvalue_from(float(g["gap_pct_mean"]), float(g["gap_pct_std"]), int(g["n_seeds"])) for g in fam]
    rej, adj = holm(p_)
    nfam = sum(1 for x in p_ if fin(x))
    rows, sent, labels, models = [], [], {}, {}
    for g, a_, r_ in zip(fam, adj, rej):
        r = s(g["recipe"])
        model = s(g["model"]) if "model" in rn else CELL_MODEL
        label = R2026_LABELS.get(r.replace(",", "|"), r)  # summary.h5 spells the rules with ','
        labels.setdefault(label)
        models.setdefault(model)
        txt = pct(float(g["gap_pct_mean"]), float(g["gap_ci_lo"]), float(g["gap_ci_hi"]))
        rows.append(f"{tex(model)} & {tex(label)} & \\texttt{{{tex(r)}}} & {float(g['val_loss_mean']):.4f} & "
                    f"{bold(txt, int(g['resolved']) and bool(r_))} \\\\")
        sent.append((f"{label} at {model}", float(g["gap_pct_mean"]), float(g["gap_ci_lo"]), float(g["gap_ci_hi"]),
                     int(g["n_seeds"]), a_, nfam))
    sweep_setup("recipes2026", args.recipes2026, rgroups)
    verdict = say("The 2026 recipes", v.gaps(sent, base=rbase.upper()))
    # the differences the file pairs its recipes for, per size, paired by seed (both runs of a seed share
    # the BF16 run's initial weights and batches), Holm across them: does Four Over Six change TE's NVFP4,
    # and does TE's RHT on wgrad change Four Over Six (which TE leaves unimplemented)
    pairs_ = []
    for model in models:
        where = {"model": model} if "model" in rruns.dtype.names else None
        for (a_, b_), names in R2026_PAIRS.items():
            d_ = gen_verdicts.paired(rruns, a_, b_, where)
            if d_:
                pairs_.append((model, names, d_))
    _, cadj = holm([t_pvalue(d_) for *_, d_ in pairs_]) if pairs_ else ([], [])
    cfam = sum(1 for *_, d_ in pairs_ if len(d_) >= 2)
    cmp_ = []
    for (model, (la, lb), d_), pa in zip(pairs_, cadj):
        mm, lo, hi, _, n_ = mean_ci(d_)
        cmp_.append(v.compare(la, lb, mm, lo, hi, n_, what=f"gap to {rbase.upper()} at {model}", p_adj=pa, family=cfam))
    contrasts = say("The 2026 recipes", " ".join(cmp_))
    write("section_recipes2026.tex",
          "\\textbf{The 2026 recipes.} Table~\\ref{tab:recipes2026} sets the training recipes of 2026 side by side, "
          f"each paired by seed with {tex(rbase.upper())} on {len(models)} model "
          f"size{'s' if len(models) != 1 else ''} ({', '.join(tex(x) for x in models)}; the first run "
          f"file's: {macros[('recipes2026', 'setup')]}; {macros[('recipes2026', 'nseeds')]} seeds): "
          f"{tex('; '.join(labels))}. TE documents Four Over Six with its Hadamard transform as not implemented; "
          "Quartet~II is not among them: its MS-EDEN backward is not a format qprec has "
          "(docs/recipes.md). " + tex(verdict) + (" " + tex(contrasts) if contrasts else "") + "\n\n"
          "\\begin{table*}[t]\\centering\\small\n\\begin{tabular}{lllrr}\n\\toprule\n"
          "size & recipe & preset & val.\\ loss & gap \\% [95\\% CI] \\\\\n\\midrule\n" + "\n".join(rows) +
          "\n\\bottomrule\n\\end{tabular}\n\\caption{The 2026 recipes: gap to "
          f"{tex(rbase.upper())} of the same seed, mean and 95\\% interval over seeds; bold: resolved after "
          f"Holm's correction across the table's {nfam} gaps.}}\\label{{tab:recipes2026}}\n\\end{{table*}}\n")


if args.recipes2026 and has_rows(args.recipes2026):
    recipes2026_section()
elif args.recipes2026:
    write("section_recipes2026.tex", "\\textbf{The 2026 recipes.} The 2026 recipes sweep has no finished runs in "
          "this build, so this part is not reported.\n")
    say("The 2026 recipes", "The 2026 recipes sweep has no finished runs in this build, so this part is not reported.")
else:
    write("section_recipes2026.tex", "% the 2026 recipes: the full paper only (paper/build.sh without QP_PAPER_QUICK)\n")


# ---- where the quantization error concentrates (the figures' cell, from the run files) ------------
def qerr_means(recipe):
    acc = {}
    for p_ in glob.glob(os.path.join(args.study, "runs", "*.h5")):
        if p_.endswith(".ckpt.h5"):
            continue
        with h5py.File(p_, "r", libver="latest", swmr=True) as f:
            at = {k: s(v_) for k, v_ in f.attrs.items()}
            if at.get("recipe") != recipe or "quant/error" not in f or at.get("data_seed") != at.get("seed"):
                continue
            q = f["quant/error"][:]
        q = q[q["rel_l2"] > 1e-4]  # BF16-kept blocks are not the recipe's format
        for op in set(q["operand"]):
            for ps in set(q["pass"]):
                sel = q[(q["operand"] == op) & (q["pass"] == ps)]
                if len(sel):
                    acc.setdefault((s(op), s(ps)), []).append(float(np.mean(sel["rel_l2"])))
    return {k: float(np.mean(v_)) for k, v_ in acc.items()}


qrows = []
keys = [("x", "fprop"), ("w", "fprop"), ("dy", "dgrad"), ("w", "dgrad"), ("dy", "wgrad"), ("x", "wgrad")]
per = {r: qerr_means(r) for r in others}
per = {r: q for r, q in per.items() if q}
for op, ps in keys:
    qrows.append(f"{op} & {ps} & " + " & ".join(f"{per[r][(op, ps)]:.3f}" if (op, ps) in per[r] else "--"
                                                 for r in per) + " \\\\")
if per.get("nvfp4"):
    k, val = max(per["nvfp4"].items(), key=lambda kv: kv[1])
    lk, lv = min(per["nvfp4"].items(), key=lambda kv: kv[1])
    m("verdict", "qerr", f"Under NVFP4 the largest mean error is on {k[0]} in {k[1]} ({val:.3f}), the smallest on "
      f"{lk[0]} in {lk[1]} ({lv:.3f}).")
else:
    m("verdict", "qerr", "")
write("table_qerr.tex",
      "\\begin{table}[t]\\centering\\small\n\\begin{tabular}{ll" + "r" * len(per) + "}\n\\toprule\n"
      "operand & pass & " + " & ".join(tex(r) for r in per) + " \\\\\n\\midrule\n" + "\n".join(qrows) +
      "\n\\bottomrule\n\\end{tabular}\n\\caption{Mean relative L2 quantization error by operand and pass "
      "(quantized blocks only, all logged steps, cells and seeds).}\\label{tab:qerr}\n\\end{table}\n")

# ---- the data pipeline ------------------------------------------------------------------------
pruns, _, _, _ = summary(args.pipeline)
if "prefetch" in pruns.dtype.names:
    desc = []
    for pf in sorted(set(pruns["prefetch"]), key=lambda x: int(x)):
        rr = pruns[pruns["prefetch"] == pf]
        desc.append(f"with prefetch {s(pf)} a step waits {100 * np.mean(rr['data_wait_share']):.1f}% of its "
                    f"time for data ({np.median(rr['tokens_per_s_median']):.0f} tokens/s)")
    m("verdict", "pipeline", say("Data pipeline", "Measured on BF16 runs: " + "; ".join(desc) + ".").replace("%", "\\%"))
else:
    m("verdict", "pipeline", "")

# the variant: the quick study says so in the title, the abstract and results.md
if args.quick:
    m("paper", "titlenote", "A quick, low-powered study")
    full_ini = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments", "study.ini")
    grid = {}
    if os.path.exists(full_ini):
        for ln in open(full_ini):
            k_, _, v_ = ln.partition("=")
            if k_.strip() in ("tokens_per_param", "seed") and v_.strip():
                grid[k_.strip()] = [x.strip() for x in v_.split(",")]
    adds = (f"runs of {grid['tokens_per_param'][0]} to {grid['tokens_per_param'][-1]} tokens per parameter and "
            f"{len(grid['seed'])} seeds" if len(grid) == 2 else "longer runs and more seeds")
    power = (f"{n_holm} of its {NGAP} gaps and {len(resolved_trends)} of its {len(trend_rows)} trends resolve at "
             "this power")
    m("paper", "variant", tex(
        "This is the quick, low-powered study (experiments/quick_*.ini: short runs, "
        f"{macros[('study', 'nseeds')]} seeds, {tpps[0]} to {tpps[-1]} tokens per parameter): {power}. The full "
        f"study (experiments/study.ini) has {adds}, which narrow the intervals."))
else:
    m("paper", "titlenote", "FP8, MXFP4 and NVFP4 training, emulated exactly, compared paired by seed")
    m("paper", "variant", "")

# docs/results.md: the verdicts above in Markdown (paper/build.sh copies it into docs/)
variant = "quick, low-powered study (`QP_PAPER_QUICK=1 paper/build.sh`)" if args.quick else \
    "full study (`paper/build.sh`)"
md = ["<!-- generated by paper/build.sh (paper/gen_tables.py) from the sweeps' summaries: do not edit -->",
      "# Study results", "",
      f"The verdicts of the {variant}, generated {macros[('study', 'date')]} by the same code that writes the "
      "paper (`paper/verdicts.py`); the paper (`paper/out/qprec.pdf`) has the tables and figures.", "",
      f"- Models: {', '.join(f'{k} ({v_ / 1e3:.0f}k)' for k, v_ in Ns.items())} non-embedding "
      f"parameters; tokens per parameter: {', '.join(tpps)}; {macros[('study', 'nrecipes')]} recipes; up to "
      f"{macros[('study', 'nseeds')]} seeds; {len(done)} of {len(runs)} runs finished.",
      "- Losses are nats per byte (byte tokens): a loss in nats here is not comparable in value with one per BPE "
      "token; comparisons with published numbers are of sign and order.",
      "- Every gap is paired by seed (the same initial weights and batches as the BF16 run of that seed) and given "
      "as mean [95% interval] over seeds, in % of BF16's final validation loss; intervals are Student t at every "
      "seed count.",
      "- A verdict is resolved only when its interval excludes 0 and it passes Holm's correction across its family "
      "(the gaps of the gap table; the trends; the per-cell comparisons).", ""]
if args.quick:
    md += [f"This is the quick study: {power}. The full study (`experiments/study.ini`) has {adds}.", ""]
for sec, texts in results.items():
    md += [f"## {sec}", ""] + [f"- {t_}" for t_ in texts] + [""]
write("results.md", "\n".join(md))
# the wording rule on every generated verdict: grows/shrinks/larger/smaller/"as published" only beside
# resolved/unresolved or an interval
bad = [x for texts in results.values() for t_ in texts for x in v.unqualified(t_)]
for x in bad:
    print(f"gen_tables: a verdict breaks the wording rule: {x}", file=sys.stderr)

with open(os.path.join(args.out, "macros.tex"), "w") as f:
    f.write("% generated by paper/gen_tables.py — do not edit\n")
    f.write("\\makeatletter\n\\newcommand{\\qp}[2]{\\@ifundefined{qp@#1@#2}{\\textbf{??}}{\\csname qp@#1@#2\\endcsname}}\n")
    for (k, fld), val in sorted(macros.items()):
        f.write(f"\\expandafter\\def\\csname qp@{k}@{fld}\\endcsname{{{val}}}\n")
    f.write("\\makeatother\n")
print(f"gen_tables: {len(macros)} macros in {args.out}")
if bad:
    sys.exit(1)
