#!/usr/bin/env python3
"""study_cost.py — how long a sweep takes on this machine, from per-step
times measured here and now, before running it.

    study_cost.py EXPERIMENT.ini [--jobs 2] [--steps 110] [--qsweep build/bin/qsweep] [--data FILE]

Reads the sweep's exact qtrain commands (qsweep --dry-run), works out each
run's steps (--steps, or --tokens-per-param with N from train/run/qp_size.h's
formula), measures the median step time of every distinct (model shape,
recipe) by running qtrain on one thread for 10 and for --steps steps: the
CPU time (user + system, getrusage of the child) of the difference divided
by the steps between them, which leaves start-up out and which other load
on the machine does not inflate (the wall-clock median step is printed
beside it, with the load average it was measured under). A validation
batch costs a forward pass, taken as 1/3 of a step. Prints per shape and
recipe the steps, both per-step times and the total, then the whole
sweep's estimate: sum(steps x CPU ms + evaluations) / jobs — the wall time
on an idle machine with as many cores as jobs (qsweep -j 2 on 2 cores: one
thread each)."""
import argparse
import os
import resource
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
    ap.add_argument("--steps", type=int, default=110)
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
    ms, wall = {}, {}
    load = os.getloadavg()[0]

    def child_cpu():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    with tempfile.TemporaryDirectory(prefix="qp-cost-") as tmp:
        for key in sorted({(r["shape"], r["recipe"]) for r in runs}):
            (L, C, B, T), rec = key
            out = os.path.join(tmp, "r.h5")
            cpu = []
            for steps in (10, o.steps):
                t0 = child_cpu()
                p = subprocess.run([qtrain, "--data", runs[0]["argv"][runs[0]["argv"].index("--data") + 1],
                                    "--layers", str(L), "--heads", "4", "--dim", str(C), "--batch", str(B), "--seq",
                                    str(T), "--recipe", rec, "--steps", str(steps), "--eval-every", "0",
                                    "--qerr-every", "0", "--ckpt-every", "0", "--threads", "1", "--prefetch", "0",
                                    "--quiet", "--out", out], capture_output=True, text=True)
                cpu.append(child_cpu() - t0)
                if p.returncode:
                    sys.exit(f"study_cost: qtrain: {p.stderr.strip()}")
                with h5py.File(out, "r") as f:
                    wall[key] = float(np.median(f["train/step_ms"][10:])) if steps > 10 else 0.0
                for f_ in (out, out.replace(".h5", ".ckpt.h5")):
                    if os.path.exists(f_):
                        os.remove(f_)
            ms[key] = 1e3 * (cpu[1] - cpu[0]) / (o.steps - 10)
    total = 0.0
    print(f"{'layers x dim':>12} {'recipe':<36} {'runs':>4} {'steps':>8} {'CPU ms':>7} {'wall ms':>7} {'minutes':>8}")
    for key in sorted(ms):
        rs = [r for r in runs if (r["shape"], r["recipe"]) == key]
        st = sum(r["steps"] for r in rs)
        sec = (st + sum(r["val_batches"] for r in rs) / 3) * ms[key] / 1e3
        total += sec
        print(f"{key[0][0]:>5} x {key[0][1]:<4} {key[1]:<36.36} {len(rs):>4} {st:>8} {ms[key]:>7.1f} "
              f"{wall[key]:>7.1f} {sec / 60:>8.1f}")
    print(f"{len(runs)} runs; {total / 60:.0f} CPU-minutes; with -j {o.jobs} on {o.jobs} idle cores: about "
          f"{total / o.jobs / 60:.0f} minutes (per-step CPU times measured now; load average {load:.1f})")


if __name__ == "__main__":
    main()
