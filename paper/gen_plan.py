#!/usr/bin/env python3
"""gen_plan.py — the paper's section on which parts must stay in high
precision, from the plans of experiments/plan.ini (qsweep --plan,
docs/qsweep.md "Plans"):

    gen_plan.py --plan DIR --out DIR [--quick]

DIR holds one plan (plan.csv, plan_parts.csv, plan_predictors.csv, plan.md)
or one folder per plan (a plan file with a [grid] or several base recipes).
Writes OUT/plan.tex: a table per plan (the parts sent to BF16, the verified
gap with its interval, the best predictor and the weight-gradient error's
Spearman correlation with their bootstrap intervals) and the verdicts, each
from an interval: a part must stay in BF16 when its measured benefit's t
interval excludes 0; NVIDIA's weight-gradient-error hypothesis holds when
wgrad_error's correlation interval lies above 0, is contradicted below 0,
and is unresolved otherwise (plan_predictors.csv's `resolved`: an interval
from at least 3 seeds). With --quick (the quick paper, which does not run
the plan study) it writes a note saying so."""
import argparse
import csv
import math
import os
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--plan", required=True, help="qsweep --plan's folder for experiments/plan.ini")
ap.add_argument("--out", required=True, help="the paper's generated/ folder")
ap.add_argument("--quick", action="store_true", help="the quick paper: the plan study is not run")
args = ap.parse_args()


def tex(text):
    return (str(text).replace("\\", "\\textbackslash{}").replace("_", r"\_").replace("%", r"\%")
            .replace("&", r"\&").replace("#", r"\#").replace("|", ","))


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(x):
    return float(x) if x not in ("", "nan") else math.nan


def ci(mean, lo, hi):
    return f"{mean:+.2f}% [{lo:+.2f}, {hi:+.2f}]"


def rho(p):
    r, lo, hi = num(p["spearman"]), num(p["ci_lo"]), num(p["ci_hi"])
    if not math.isfinite(r):
        return "n/a"
    if not math.isfinite(lo):
        return f"{r:+.2f} (no interval)"
    return f"{r:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def label(cell):
    arch = re.search(r"arch=([a-z]+)", cell)
    base = re.search(r"base=([^_/]+)", cell)
    a = {"gpt": "GPT", "llama": "Llama"}.get(arch.group(1), arch.group(1)) if arch else "the model"
    b = base.group(1).split("+")[0].upper() if base else ""
    return f"{a}, {b}" if b else a


def one(d, cell):
    """(table row, verdict sentences) of the plan in folder d."""
    md = open(os.path.join(d, "plan.md")).read()
    line = re.search(r"```text\n(plan[^\n]*)\n```", md)
    line = line.group(1) if line else ""
    budget = re.search(r"budget \+?([0-9.]+)%", md)
    budget = budget.group(1) if budget else "?"
    plan = rows(os.path.join(d, "plan.csv"))
    parts = rows(os.path.join(d, "plan_parts.csv"))
    preds = {p["predictor"]: p for p in rows(os.path.join(d, "plan_predictors.csv"))}
    M = len(parts)
    chosen = [r for r in plan if r["chosen"] == "1"]
    base = next((r for r in plan if r["stage"] == "base"), None)
    nseeds = len(base["seeds"].split()) if base else 0
    name = label(cell) if cell else (base["recipe"] if base else "the plan")
    says = []
    if chosen:
        c = chosen[0]
        g = ci(num(c["gap_pct_mean"]), num(c["gap_ci_lo"]), num(c["gap_ci_hi"]))
        sent = c["parts"].replace("+", ", ") if c["parts"] not in ("-", "all") else "none"
        says.append(f"{name}: {c['k']} of {M} GEMMs in BF16 ({sent}) keep the verified gap at {g}, "
                    f"within the {budget}% budget (seeds {c['seeds']}).")
        row = [name, f"{c['k']}/{M}", sent, g]
    else:
        says.append(f"{name}: no recipe with fewer than all {M} GEMMs in BF16 was verified within the "
                    f"{budget}% budget.")
        row = [name, f"{M}/{M}", "all (budget not met)", "--"]
    must = [p for p in parts if math.isfinite(num(p["benefit_ci_lo"])) and num(p["benefit_ci_lo"]) > 0]
    if must:
        says.append("Resolved benefit of BF16 alone (t interval over the search seeds excludes 0): " + ", ".join(
            f"{p['part']} {ci(num(p['benefit_pct_mean']), num(p['benefit_ci_lo']), num(p['benefit_ci_hi']))}"
            for p in must) + ".")
    else:
        says.append("No GEMM alone has a resolved benefit (every t interval over the search seeds holds 0).")
    best = next((p for p in preds.values() if p["chosen"] == "1"), None)
    w = preds.get("wgrad_error")
    if w:
        verdict = (f"is unresolved here ({nseeds} search seeds: a verdict needs 3)" if nseeds < 3
                   else "is unresolved (no correlation)" if not math.isfinite(num(w["ci_lo"]))
                   else "holds (resolved)" if w["resolved"] == "1" and num(w["ci_lo"]) > 0
                   else "is contradicted (resolved)" if w["resolved"] == "1"
                   else "is unresolved")
        says.append(f"NVIDIA's weight-gradient-error hypothesis {verdict}: Spearman's rho of wgrad_error with "
                    f"the measured benefit is {rho(w)}.")
    row += [f"{best['predictor']} {rho(best)}" if best else "--", rho(w) if w else "--"]
    return row, says


def main():
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "plan.tex")
    if args.quick:
        with open(out, "w") as f:
            f.write("The quick paper does not run the plan study (experiments/plan.ini, about 416 runs); "
                    "the full paper (paper/build.sh) reports it here.\n")
        return 0
    cells = []
    if os.path.exists(os.path.join(args.plan, "plan.csv")):
        cells.append((args.plan, ""))
    elif os.path.isdir(args.plan):
        for c in sorted(os.listdir(args.plan)):
            if os.path.exists(os.path.join(args.plan, c, "plan.csv")):
                cells.append((os.path.join(args.plan, c), c))
    if not cells:
        with open(out, "w") as f:
            f.write(f"The plan study ({tex(args.plan)}) has no finished plan in this build, so this part is "
                    "not reported.\n")
        print(f"gen_plan: no plan in {args.plan}", file=sys.stderr)
        return 0
    table, says = [], []
    for d, c in cells:
        r, s = one(d, c)
        table.append(r)
        says += s
    body = ("Each plan (qsweep --plan, experiments/plan.ini) ranks the GEMMs of one model and format by a "
            "predictor logged in one run, bisects the ranked list for the fewest GEMMs in BF16 whose upper 95\\% "
            "bound of the paired gap to BF16 everywhere meets the budget, and verifies that recipe on seeds of "
            "its own. Table~\\ref{tab:plan} gives the verified plans.\n\n")
    body += " ".join(tex(s) for s in says) + "\n\n"
    body += ("\\begin{table}[t]\n\\centering\\small\n\\begin{tabular}{lllll}\n\\toprule\n"
             "model, format & BF16 & GEMMs in BF16 & verified gap [95\\% CI] & wgrad\\_error $\\rho$ [CI] \\\\\n"
             "\\midrule\n")
    for r in table:
        body += " & ".join(tex(x) for x in (r[0], r[1], r[2], r[3], r[5])) + " \\\\\n"
    body += ("\\bottomrule\n\\end{tabular}\n\\caption{The cheapest recipes within the budget: GEMMs sent to BF16 "
             "(of all), the verified paired gap to BF16 everywhere, and the weight-gradient error's Spearman "
             "correlation with each GEMM's measured benefit (bootstrap over seeds).}\\label{tab:plan}\n"
             "\\end{table}\n")
    with open(out, "w") as f:
        f.write(body)
    return 0


sys.exit(main())
