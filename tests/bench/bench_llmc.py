#!/usr/bin/python3
"""bench_llmc.py — qtrain against llm.c's CPU trainer (train_gpt2.c) and
against the PyTorch version of the baby model, side by side in one run.

    LLMC_DIR=/path/to/llm.c tests/bench/bench_llmc.py [--build build] [--corpus FILE]
        [--reps 3] [--steps 12] [--threads 2] [--configs small,gpt2,baby,longT]

A benchmark: it prints tables and asserts nothing. The machine is shared, so
every comparison alternates the trainers (qtrain, other, qtrain, other, ...)
and reports per-run medians of the step time (the first 3 steps dropped) and
the median over runs; ratios are of those medians.

llm.c: the harness copies train_gpt2.c and llmc/ from LLMC_DIR into a
temporary folder, sets its batch, sequence length and step count and turns
off its sampling (a few sed lines, checked to apply), builds it as llm.c's
Makefile does (gcc -Ofast -march=native -fopenmp -DOMP), writes a
random-init checkpoint of the configuration (GPT-2 init: N(0, 0.02),
residual projections / sqrt(2L), norms 1, biases 0, version 3 header) and
the corpus's bytes as token shards (llm.c's format, uint16 ids < 256), and
runs it in that folder. Every trainer waits for its OpenMP threads the same
way: as OMP_WAIT_POLICY or GOMP_SPINCOUNT say, or else with the bounded spin
qtrain chooses on idle CPUs (GOMP_SPINCOUNT=10000, train/run/qp_omp.h). No llm.c code is kept. qtrain trains the same shape
on the same token ids (the corpus as bytes; the GPT-2 shape reads the shard,
vocabulary 50257), bf16 recipe, no evaluation, logging or checkpoints inside
the timed steps.

Configurations:
  small   llm.c's small CPU configuration: 4L 4H 256C, T128 B8, vocab 256;
          also model FLOP/s of the whole step (6 N tokens + causal attention
          6 L C (T+1) per token; N = the matrices' parameters, LM head
          included) against the GEMM ceiling (the faster kernel) bench_train measures in the
          same run
  gpt2    the GPT-2 124M shape: 12L 12H 768C, vocab 50257, B4 T64; peak RSS
  baby    nanoGPT's baby Shakespeare model (4L 4H 128C, T64 B12) against
          tests/bench/nanogpt_torch.py (python3-torch, CPU), once for each
          BLAS found: Debian's python3-torch runs its matrix products on
          whatever libblas.so.3 the loader finds, by default libblas3's
          reference BLAS (unoptimized loops, most of PyTorch's step there);
          with libopenblas0-pthread installed, also on OpenBLAS (each run
          puts its BLAS's folder first on LD_LIBRARY_PATH and reports the
          library its sgemm_ came from). The reference-BLAS run waits as the
          others do; the OpenBLAS run with OMP_WAIT_POLICY=passive, since
          OpenBLAS's own threads share the cores with OpenMP's (on the 2-core
          Xeon: 107-126 ms/step passive, 313 with GOMP_SPINCOUNT=10000)
  longT   qtrain's peak RSS at T = 256, 512, 1024 (small config, B=1): the
          attention keeps no T x T matrix, so memory grows with T
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))

CONFIGS = {
    # name: L, NH, C, T, B, V
    "small": (4, 4, 256, 128, 8, 256),
    "gpt2": (12, 12, 768, 64, 4, 50257),
}


def say(*a):
    print(*a, flush=True)


class Rss:
    """Peak RSS of each child: RUSAGE_CHILDREN's maxrss is the largest of all
    reaped children, so each child runs under a small wrapper that prints its own."""
    WRAP = "import os,sys,resource; p=os.spawnv(os.P_WAIT, sys.argv[1], sys.argv[1:]); " \
           "print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(p)"

    @staticmethod
    def cmd(cmd):
        return [sys.executable, "-c", Rss.WRAP] + cmd

    @staticmethod
    def parse(err):
        m = re.search(r"PEAK_RSS_KB (\d+)", err)
        return int(m.group(1)) / 1024.0 if m else float("nan")


def median_after(xs, skip=3):
    xs = list(xs)[skip:] if len(xs) > skip + 2 else list(xs)
    return statistics.median(xs)


# ---- llm.c --------------------------------------------------------------------

SEDS = [  # (what llm.c's main says, what it becomes): batch, sequence length, steps, no sampling
    (r"int B = 4;", "int B = {B};"),
    (r"int T = 64;", "int T = {T};"),
    (r"step <= 40;", "step <= {S};"),
    (r"step > 0 && step % 20 == 0", "0"),
    (r"step % 10 == 0", "step < 0"),
]


def build_llmc(llmc, work, B, T, S):
    src = os.path.join(work, f"llmc_B{B}_T{T}")
    if os.path.exists(os.path.join(src, "train_gpt2")):
        return os.path.join(src, "train_gpt2")
    os.makedirs(src, exist_ok=True)
    shutil.copytree(os.path.join(llmc, "llmc"), os.path.join(src, "llmc"), dirs_exist_ok=True)
    text = open(os.path.join(llmc, "train_gpt2.c")).read()
    for old, new in SEDS:
        if old not in text:
            sys.exit(f"bench_llmc: {llmc}/train_gpt2.c has no '{old}' (a different llm.c version?)")
        text = text.replace(old, new.format(B=B, T=T, S=S))
    open(os.path.join(src, "train_gpt2.c"), "w").write(text)
    cmd = ["gcc", "-Ofast", "-march=native", "-fopenmp", "-DOMP", "-Wno-unused-result", "-I" + src,
           os.path.join(src, "train_gpt2.c"), "-lm", "-o", os.path.join(src, "train_gpt2")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"bench_llmc: building llm.c failed: {r.stderr[-2000:]}")
    return os.path.join(src, "train_gpt2")


def write_llmc_checkpoint(path, L, NH, C, maxT, V, seed=1337):
    Vp = (V + 127) // 128 * 128
    rng = np.random.default_rng(seed)
    header = np.zeros(256, np.int32)
    header[:8] = [20240326, 3, maxT, V, L, NH, C, Vp]
    std, pstd = 0.02, 0.02 / np.sqrt(2 * L)
    shapes = [("wte", (Vp, C), std), ("wpe", (maxT, C), std), ("ln1w", (L, C), "one"), ("ln1b", (L, C), 0),
              ("qkvw", (L, 3 * C, C), std), ("qkvb", (L, 3 * C), 0), ("attprojw", (L, C, C), pstd),
              ("attprojb", (L, C), 0), ("ln2w", (L, C), "one"), ("ln2b", (L, C), 0), ("fcw", (L, 4 * C, C), std),
              ("fcb", (L, 4 * C), 0), ("fcprojw", (L, C, 4 * C), pstd), ("fcprojb", (L, C), 0),
              ("lnfw", (C,), "one"), ("lnfb", (C,), 0)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for _, shape, init in shapes:
            if init == "one":
                a = np.ones(shape, np.float32)
            elif init == 0:
                a = np.zeros(shape, np.float32)
            else:
                a = (rng.standard_normal(shape) * init).astype(np.float32)
            if _ == "wte":
                a[V:] = 0  # llm.c's padding rows
            f.write(a.tobytes())


def write_shard(path, tokens):
    header = np.zeros(256, np.int32)
    header[:3] = [20240520, 1, len(tokens)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, np.uint16).tobytes())


def llmc_dir_for(work, name, L, NH, C, T, V, tokens):
    d = os.path.join(work, "run_" + name)
    if not os.path.exists(d):
        os.makedirs(os.path.join(d, "dev", "data", "tinyshakespeare"))
        write_llmc_checkpoint(os.path.join(d, "gpt2_124M.bin"), L, NH, C, T, V)
        n = len(tokens)
        write_shard(os.path.join(d, "dev", "data", "tinyshakespeare", "tiny_shakespeare_train.bin"), tokens[: n * 9 // 10])
        write_shard(os.path.join(d, "dev", "data", "tinyshakespeare", "tiny_shakespeare_val.bin"), tokens[n * 9 // 10:])
    return d


def wait_env(**extra):
    """The environment every trainer runs in: one OpenMP waiting policy for
    all of them, the user's (OMP_WAIT_POLICY or GOMP_SPINCOUNT) or else the
    one qtrain chooses on idle CPUs (train/run/qp_omp.h: GOMP_SPINCOUNT=10000)."""
    env = dict(os.environ, **extra)
    if not env.get("OMP_WAIT_POLICY") and not env.get("GOMP_SPINCOUNT"):
        env["GOMP_SPINCOUNT"] = "10000"
    return env


def wait_policy():
    e = wait_env()
    return ", ".join(f"{k}={e[k]}" for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT") if e.get(k))


def run_llmc(exe, d, threads):
    env = wait_env(OMP_NUM_THREADS=str(threads))
    p = subprocess.run(Rss.cmd([exe]), cwd=d, env=env, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"bench_llmc: llm.c failed ({p.returncode}): {p.stdout[-1000:]} {p.stderr[-1000:]}")
    ms = [float(x) for x in re.findall(r"\(took ([0-9.]+) ms\)", p.stdout)]
    return median_after(ms), Rss.parse(p.stderr)


# ---- qtrain -------------------------------------------------------------------

def run_qtrain(qtrain, data, out, L, NH, C, T, B, steps, threads, recipe="bf16"):
    cmd = [qtrain, "--data", data, "--layers", str(L), "--heads", str(NH), "--dim", str(C), "--seq", str(T),
           "--batch", str(B), "--steps", str(steps), "--warmup", "2", "--eval-every", "0", "--eval-batches", "1",
           "--qerr-every", "0", "--ckpt-every", "0", "--threads", str(threads), "--recipe", recipe, "--quiet",
           "--out", out]
    env = wait_env(OMP_NUM_THREADS=str(threads))
    p = subprocess.run(Rss.cmd(cmd), env=env, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"bench_llmc: qtrain failed ({p.returncode}): {p.stderr[-1500:]}")
    with h5py.File(out, "r") as f:
        ms = f["train/step_ms"][:]
    for suffix in ("", ".ckpt.h5", ".ckpt.h5.prev"):
        q = out + suffix if suffix else out
        if os.path.exists(q):
            os.remove(q)
    return median_after(ms), Rss.parse(p.stderr)


def gemm_ceiling(build, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([os.path.join(build, "bin", "bench_train"), "--ceiling", "--threads", str(threads)],
                       env=env, capture_output=True, text=True)
    m = re.search(r"GEMM ceiling .*?([0-9.]+) GFLOP/s", p.stdout)
    return float(m.group(1)) if m else float("nan")


def model_flops(L, NH, C, T, B, V):
    n_matmul = 12 * L * C * C + V * C
    tokens = B * T
    return 6 * n_matmul * tokens + 6 * L * C * (T + 1) * tokens


def torch_blas_variants():
    """(label, folder, extra environment) of each BLAS Debian's python3-torch
    can run on here: reference first, then OpenBLAS."""
    import glob
    out = []
    for label, sub, extra in (("reference BLAS", "blas", {}),
                              ("OpenBLAS", "openblas-pthread", {"OMP_WAIT_POLICY": "passive"})):
        for d in sorted(glob.glob(f"/usr/lib/*/{sub}")):
            if os.path.exists(os.path.join(d, "libblas.so.3")):
                out.append((label, d, extra))
                break
    return out


def run_torch(steps, threads, blas_dir, extra):
    env = wait_env(**extra)
    if extra:  # its own waiting policy, not a spin count the environment carries
        env.pop("GOMP_SPINCOUNT", None)
    if blas_dir:
        env["LD_LIBRARY_PATH"] = blas_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    p = subprocess.run([sys.executable, os.path.join(HERE, "nanogpt_torch.py"), str(steps), str(threads)],
                       capture_output=True, text=True, env=env)
    m = re.search(r"ms/step ([0-9.]+) .* blas (\S+)", p.stdout)
    if not m:
        return None, p.stderr.strip()[-200:]
    return float(m.group(1)), m.group(2)


def loadavg():
    return open("/proc/loadavg").read().split()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--corpus", default=os.path.join(SRC, "..", "shared", "data", "tinyshakespeare.txt"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--configs", default="small,gpt2,baby,longT")
    a = ap.parse_args()
    configs = a.configs.split(",")
    qtrain = os.path.join(a.build, "bin", "qtrain")
    llmc = os.environ.get("LLMC_DIR")
    if any(c in configs for c in ("small", "gpt2")) and not (llmc and os.path.exists(os.path.join(llmc, "train_gpt2.c"))):
        sys.exit("bench_llmc: set LLMC_DIR to a checkout of https://github.com/karpathy/llm.c (train_gpt2.c, llmc/)")
    work = tempfile.mkdtemp(prefix="bench_llmc_")
    try:
        if os.path.exists(a.corpus):
            raw = open(a.corpus, "rb").read()
        else:
            rng = np.random.default_rng(0)
            words = b"the quick brown fox jumps over a lazy dog and cat".split()
            raw = b" ".join(words[i] for i in rng.integers(0, len(words), 200000))
        corpus = os.path.join(work, "corpus.txt")
        open(corpus, "wb").write(raw)
        tokens = np.frombuffer(raw, np.uint8).astype(np.uint16)
        say(f"bench_llmc: {a.threads} threads, {a.reps} alternating runs of {a.steps} steps each, median step time "
            f"after the first 3; load average {loadavg()} at the start; OpenMP waiting {wait_policy()} for all"
            + (" (PyTorch on OpenBLAS: OMP_WAIT_POLICY=passive)" if "baby" in configs else ""))
        say(f"machine: {open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}, "
            f"{os.cpu_count()} CPUs")
        for name in ("small", "gpt2"):
            if name not in configs:
                continue
            L, NH, C, T, B, V = CONFIGS[name]
            exe = build_llmc(llmc, work, B, T, a.steps)
            d = llmc_dir_for(work, name, L, NH, C, T, V, tokens)
            data = corpus if V == 256 else os.path.join(d, "dev", "data", "tinyshakespeare", "tiny_shakespeare_train.bin")
            q, l, qr, lr, ceils = [], [], [], [], []
            for rep in range(a.reps):
                if name == "small":  # the GEMM ceiling right before each qtrain run: the same machine
                    ceils.append(gemm_ceiling(a.build, a.threads))
                ms, rss = run_qtrain(qtrain, data, os.path.join(work, "q.h5"), L, NH, C, T, B, a.steps, a.threads)
                q.append(ms), qr.append(rss)
                ms, rss = run_llmc(exe, d, a.threads)
                l.append(ms), lr.append(rss)
            qm, lm = statistics.median(q), statistics.median(l)
            say(f"\n{name}: {L}L {NH}H {C}C, T{T} B{B}, vocab {V}")
            say(f"{'trainer':<22} {'runs (ms/step)':<30} {'median':>9} {'peak RSS MiB':>13}")
            say(f"{'qtrain bf16':<22} {' '.join('%.1f' % x for x in q):<30} {qm:9.1f} {max(qr):13.0f}")
            say(f"{'llm.c train_gpt2.c':<22} {' '.join('%.1f' % x for x in l):<30} {lm:9.1f} {max(lr):13.0f}")
            say(f"qtrain is {lm / qm:.2f}x faster per step; peak RSS {max(qr) / max(lr):.2f}x llm.c's")
            if name == "small":
                ceil = statistics.median(ceils)
                fl = model_flops(L, NH, C, T, B, V)
                say(f"model FLOP/s of the whole step: {fl / qm / 1e6:.1f} GFLOP/s ({fl / 1e9:.2f} GFLOP per step); "
                    f"GEMM ceiling before each qtrain run ({' '.join('%.0f' % c for c in ceils)}, median "
                    f"{ceil:.1f} GFLOP/s): {100 * fl / qm / 1e6 / ceil:.0f}%")
        if "baby" in configs:
            variants = torch_blas_variants() or [("the loader's BLAS", None, {})]
            q, t, used = [], {v[0]: [] for v in variants}, {}
            for rep in range(a.reps):
                ms, _ = run_qtrain(qtrain, corpus, os.path.join(work, "q.h5"), 4, 4, 128, 64, 12, a.steps, a.threads)
                q.append(ms)
                for label, d, extra in variants:
                    ms, blas = run_torch(a.steps, a.threads, d, extra)
                    if ms is None:
                        say(f"baby: PyTorch on {label} did not run ({blas})")
                        continue
                    t[label].append(ms)
                    used[label] = blas
            t = {k: v for k, v in t.items() if v}
            if t:
                qm = statistics.median(q)
                say("\nbaby: 4L 4H 128C, T64 B12, vocab 256 (nanoGPT's baby Shakespeare)")
                say(f"{'trainer':<32} {'runs (ms/step)':<30} {'median':>9}")
                say(f"{'qtrain bf16':<32} {' '.join('%.1f' % x for x in q):<30} {qm:9.1f}")
                for label, ts in t.items():
                    say(f"{'PyTorch fp32, ' + label:<32} {' '.join('%.1f' % x for x in ts):<30} "
                        f"{statistics.median(ts):9.1f}")
                for label, ts in t.items():
                    say(f"qtrain is {statistics.median(ts) / qm:.1f}x faster per step than PyTorch on {label} "
                        f"(sgemm_ from {used[label]})")
                if len(t) == 1 and "OpenBLAS" not in t:
                    say("(install libopenblas0-pthread for PyTorch on an optimized BLAS too)")
        if "longT" in configs:
            say("\nlongT: qtrain peak RSS by sequence length (4L 4H 256C, B1, bf16); a T x T score matrix per "
                "layer and head would be 4 L NH T^2 bytes (fwd) and as much again for its gradient")
            say(f"{'T':>6} {'peak RSS MiB':>13} {'ms/step':>9} {'T x T matrices would add MiB':>30}")
            for T in (256, 512, 1024):
                ms, rss = run_qtrain(qtrain, corpus, os.path.join(work, "q.h5"), 4, 4, 256, T, 1, 5, a.threads)
                say(f"{T:6d} {rss:13.0f} {ms:9.1f} {2 * 2 * 4 * 4 * 4 * T * T / 2**20:30.0f}")
        say(f"\nload average {loadavg()} at the end")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
