#!/usr/bin/env python3
"""study_cost.py — how long a sweep takes on this machine, from per-step
times measured here and now, before running it.

    study_cost.py EXPERIMENT.ini [--jobs 2] [--steps 60] [--qsweep build/bin/qsweep] [--data FILE]

Reads the sweep's exact qtrain commands (qsweep --dry-run), works out each
run's steps (--steps, or --tokens-per-param with N from train/qp_size.h's
formula), measures the median step time of every distinct (model shape,
recipe) by running qtrain for --steps steps on one thread (the first 10
steps left out), and the cost of one validation batch (a forward pass is
taken as 1/3 of a step), and prints per shape and recipe the steps, the
measured ms per step and the total, then the whole sweep's estimate:
sum(steps x ms + evaluations) / jobs. Runs side by side share the cores
(-j 2 on 2 cores: one thread each), which is how the measurement runs too;
a loaded machine makes every number larger, so it says the load average it
measured under."""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile

import h5py
import numpy as np


def arg(a, flag, default=None):
    return a[a.index(flag) + 1] if flag in a else default


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("experiment")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--qsweep", default=os.path.join(here, "..", "build", "bin", "qsweep"))
    ap.add_argument("--data")
    o = ap.parse_args()
    cmd = [o.qsweep, o.experiment, "--out", tempfile.mkdtemp(prefix="qp-cost-"), "--dry-run"]
    if o.data:
        cmd += ["--data", o.data]
    dry = subprocess.run(cmd, capture_output=True, text=True)
    if dry.returncode:
        sys.exit(f"study_cost: {dry.stderr.strip()}")
    runs = []
    for line in dry.stdout.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, c = line.split(": ", 1)
        a = shlex.split(c)
        L, C = int(arg(a, "--layers", 4)), int(arg(a, "--dim", 128))
        B, T, A = int(arg(a, "--batch", 12)), int(arg(a, "--seq", 64)), int(arg(a, "--grad-accum", 1))
        N = L * (12 * C * C + 13 * C) + 2 * C
        tpp = arg(a, "--tokens-per-param")
        steps = max(1, round(float(tpp) * N / (B * T * A))) if tpp else int(arg(a, "--steps", 2000))
        ev = int(arg(a, "--eval-every", 250))
        vt = arg(a, "--val-tokens")
        data = arg(a, "--data")
        nval = (os.path.getsize(data) * 0.1 if vt == "all" else int(vt) if vt else 20 * B * T) / (B * T)
        nevals = (steps // ev if ev > 0 else 0) + 1
        runs.append({"name": name, "argv": a, "shape": (L, C, B, T), "recipe": arg(a, "--recipe", "bf16"),
                     "steps": steps, "val_batches": nval * nevals})
    qtrain = runs[0]["argv"][0]
    ms = {}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="qp-cost-") as tmp:
        for key in sorted({(r["shape"], r["recipe"]) for r in runs}):
            (L, C, B, T), rec = key
            out = os.path.join(tmp, "r.h5")
            p = subprocess.run([qtrain, "--data", runs[0]["argv"][runs[0]["argv"].index("--data") + 1], "--layers",
                                str(L), "--heads", "4", "--dim", str(C), "--batch", str(B), "--seq", str(T),
                                "--recipe", rec, "--steps", str(o.steps), "--eval-every", "0", "--qerr-every", "0",
                                "--ckpt-every", "0", "--threads", "1", "--quiet", "--out", out],
                               capture_output=True, text=True)
            if p.returncode:
                sys.exit(f"study_cost: qtrain: {p.stderr.strip()}")
            with h5py.File(out, "r") as f:
                ms[key] = float(np.median(f["train/step_ms"][10:]))
            os.remove(out)
            ck = out.replace(".h5", ".ckpt.h5")
            if os.path.exists(ck):
                os.remove(ck)
    total = 0.0
    print(f"{'layers x dim':>12} {'recipe':<24} {'runs':>4} {'steps':>8} {'ms/step':>8} {'minutes':>8}")
    for key in sorted(ms):
        rs = [r for r in runs if (r["shape"], r["recipe"]) == key]
        st = sum(r["steps"] for r in rs)
        sec = (st + sum(r["val_batches"] for r in rs) / 3) * ms[key] / 1e3
        total += sec
        print(f"{key[0][0]:>5} x {key[0][1]:<4} {key[1]:<24} {len(rs):>4} {st:>8} {ms[key]:>8.1f} {sec / 60:>8.1f}")
    print(f"{len(runs)} runs; {total / 60:.0f} core-minutes; with -j {o.jobs}: about {total / o.jobs / 3600:.2f} h "
          f"(per-step times measured now, load average {load:.1f})")


if __name__ == "__main__":
    main()
