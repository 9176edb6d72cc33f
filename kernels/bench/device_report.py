#!/usr/bin/env python3
"""device_report.py — the tables and verdicts of kernels/bench/device_check.sh,
one subcommand per section. Each writes (or appends) its table to OUTFILE and
prints, as its last line, "RESULT PASS|FAIL <one-line summary>". Reads only
what the section left in its scratch folder (program outputs, run files,
checkpoints); numpy and h5py.

  gemm   OUTFILE BENCH_GEMM_TXT TORCH_TXT     cuBLASLt next to PyTorch
  quant  OUTFILE BENCH_QUANT_TXT              quantization kernels vs a D2D copy
  train  OUTFILE SCRATCH TOKENS RECIPE...     train_R.h5 / train_R.err per recipe
  agree  OUTFILE SCRATCH RECIPE...            match_R_cpu.h5 vs match_R_cuda.h5
  determinism OUTFILE SCRATCH RECIPE...       det_R_a vs det_R_b: losses and checkpoints bit for bit
"""
import math
import os
import re
import sys

import numpy as np

try:
    import h5py
except ImportError:  # the image has it; a report without it says so
    h5py = None


def out_write(path, text, mode="w"):
    with open(path, mode) as f:
        f.write(text)


def result(ok, msg):
    print(f"RESULT {'PASS' if ok else 'FAIL'} {msg}")
    return 0


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


# ---- gemm -----------------------------------------------------------------------------

def gemm(outfile, bench_txt, torch_txt):
    ours, theirs = {}, {}
    for line in read(bench_txt).splitlines():
        m = re.match(r"^(bf16|fp8 e4m3 \+amax_D|fp8 e4m3|mxfp8|nvfp4)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+x$", line)
        if m:
            ours[(m.group(1), int(m.group(2)))] = (float(m.group(3)), float(m.group(4)))
    for line in read(torch_txt).splitlines():
        m = re.match(r"^(torch\.matmul bf16|torch\._scaled_mm e4m3(?: \(bf16 out\))?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)$", line)
        if m:
            key = "bf16" if "matmul" in m.group(1) else "fp8 e4m3"
            theirs[(key, int(m.group(2)))] = (float(m.group(3)), float(m.group(4)), m.group(1))
    lines = ["GEMM D[n,n] = A[n,n] . B[n,n]^T, random operands, median of 20 CUDA-event-timed runs, one call",
             f"{'n':>5} {'path':<18} {'qprec ms':>9} {'TFLOP/s':>8} {'PyTorch ms':>10} {'TFLOP/s':>8} {'qprec/PyTorch':>13}"]
    sizes = sorted({n for _, n in ours} | {n for _, n in theirs})
    verdicts = []
    for n in sizes:
        for path in ("bf16", "fp8 e4m3", "fp8 e4m3 +amax_D", "mxfp8", "nvfp4"):
            o, t = ours.get((path, n)), theirs.get((path, n))
            if not o and not t:
                continue
            ratio = f"{o[1] / t[1]:.2f}" if o and t else "-"
            lines.append(f"{n:>5} {path:<18} {o[0] if o else float('nan'):>9.3f} {o[1] if o else float('nan'):>8.1f} "
                         f"{t[0] if t else float('nan'):>10.3f} {t[1] if t else float('nan'):>8.1f} {ratio:>13}")
        b, f = ours.get(("bf16", n)), ours.get(("fp8 e4m3", n))
        tb, tf = theirs.get(("bf16", n)), theirs.get(("fp8 e4m3", n))
        if b and f:
            r = f[1] / b[1]
            lines.append(f"      FP8/BF16 at {n}^3 (qprec): {r:.2f}x (target >= 1.6: {'met' if r >= 1.6 else 'NOT met'})")
            verdicts.append(r >= 1.6)
        for name, o, t in (("bf16", b, tb), ("fp8", f, tf)):
            if o and t:
                r = o[1] / t[1]
                lines.append(f"      {name} qprec/PyTorch at {n}^3: {100 * r:.0f}% (target >= 90%: {'met' if r >= 0.9 else 'NOT met'})")
                verdicts.append(r >= 0.9)
    if theirs and any(v[2].endswith("(bf16 out)") for v in theirs.values()):
        lines.append("      (torch._scaled_mm took no FP32 output here: its FP8 rows write BF16)")
    out_write(outfile, "\n".join(lines) + "\n")
    need = [("bf16", 4096), ("bf16", 8192), ("fp8 e4m3", 4096), ("fp8 e4m3", 8192)]
    have = all(k in ours for k in need)
    if not have:
        return result(False, f"bench_gemm gave {len(ours)} of the rows ({', '.join(f'{p} {n}' for p, n in need if (p, n) not in ours)} missing)")
    b8, f8 = ours[("bf16", 8192)][1], ours[("fp8 e4m3", 8192)][1]
    t8 = theirs.get(("bf16", 8192))
    tf8 = theirs.get(("fp8 e4m3", 8192))
    msg = (f"8192^3: bf16 {b8:.0f} TFLOP/s ({f'{100 * b8 / t8[1]:.0f}% of torch' if t8 else 'no torch'}), "
           f"fp8 {f8:.0f} ({f8 / b8:.2f}x bf16, {f'{100 * f8 / tf8[1]:.0f}% of torch' if tf8 else 'no torch'}); "
           f"targets {sum(verdicts)}/{len(verdicts)} met")
    return result(bool(theirs), msg if theirs else msg + "; PyTorch's side missing")


# ---- quant ------------------------------------------------------------------------------

def quant(outfile, bench_txt):
    text = read(bench_txt)
    rows = []
    for line in text.splitlines():
        m = re.match(r"^(.+?)\s+([\d.]+)\s+([\d.]+)\s+(\d+)%$", line)
        if m:
            rows.append((m.group(1).strip(), float(m.group(2)), float(m.group(3)), float(m.group(4))))
    copy = [r for r in rows if r[0].startswith("cudaMemcpy")]
    q = [r for r in rows if r[0].startswith("quantize ")]
    # targets: per-tensor (BF16, FP8) and MX formats >= 70% of the
    # copy, NVFP4 (and the RHT it uses) >= 50%; other formats (FP8 blocks)
    # are listed, not judged
    fmt = lambda r: r[0].split()[1]
    tensor_mx = [r for r in q if fmt(r) in ("bf16", "fp8-e4m3", "fp8-e5m2") or fmt(r).startswith("mx")]
    nv = [r for r in q if fmt(r).startswith("nvfp4")] + [r for r in rows if r[0].startswith("rht")]
    lines, short = [text.rstrip(), ""], []
    for name, group, target in (("per-tensor/MX", tensor_mx, 70), ("NVFP4/RHT", nv, 50)):
        if group:
            w = min(group, key=lambda r: r[3])
            met = "met" if w[3] >= target else "NOT met"
            lines.append(f"{name} quantization, worst: {w[0]} at {w[3]:.0f}% of the copy's GB/s (target >= {target}%: {met})")
            short.append(f"worst {name} {w[3]:.0f}% ({w[0][9:]}; target {target}% {met})")
    out_write(outfile, "\n".join(lines) + "\n")
    if not copy or not q:
        return result(False, f"bench_cuda_quant gave {len(rows)} rows (no copy or no quantize rows)")
    return result(True, f"D2D copy {copy[0][2]:.0f} GB/s; " + "; ".join(short))


# ---- train ------------------------------------------------------------------------------

def phases(err_text):
    m = re.search(r"GPU phases \(QP_CUDA_PROFILE\): (\d+) steps, ([\d.]+) ms/step:(.*)", err_text)
    if not m:
        return None
    parts = re.findall(r" ([\w+]+) ([\d.]+) \((\d+)%\)", m.group(3))
    return float(m.group(2)), [(name, float(ms), int(pc)) for name, ms, pc in parts]


def attr(f, name, default="?"):
    v = f.attrs.get(name, default)
    return v.decode() if isinstance(v, bytes) else str(v)


def train(outfile, scratch, tokens, recipes):
    tokens = float(tokens)
    hdr = (f"{'recipe':<12} {'gemm path':<14} {'tokens/s':>9} {'ms/step':>8} {'vs bf16':>7} {'power W':>8} "
           f"{'J/Mtok':>7} {'wait %':>6} {'loss':>7}  GPU time by phase, ms/step (QP_CUDA_PROFILE)")
    lines = [f"qtrain --device cuda, {int(tokens)} tokens/step; medians over the steps after the first 3 "
             "(warm-up: allocations, cuBLASLt heuristics)", hdr]
    ok, short, base = True, [], None
    for r in recipes:
        path, err_path = os.path.join(scratch, f"train_{r}.h5"), os.path.join(scratch, f"train_{r}.err")
        err = read(err_path)
        rc = read(os.path.join(scratch, f"train_{r}.rc")).strip() or "?"
        if h5py is None or not os.path.exists(path) or rc != "0":
            last = err.strip().splitlines()[-1] if err.strip() else ""
            lines.append(f"{r:<12} FAILED (exit {rc}) {last[:150]}")
            short.append(f"{r} FAIL")
            ok = False
            continue
        with h5py.File(path, "r") as f:
            ms = f["train/step_ms"][:]
            wait = f["train/data_wait_ms"][:]
            pw = f["train/power_w"][:] if "power_w" in f["train"] else np.array([np.nan])
            loss = f["train/loss"][:]
            gp = attr(f, "gemm_path")
        use = slice(3, None) if len(ms) > 4 else slice(0, None)
        med = float(np.median(ms[use]))
        tps = tokens / (med / 1e3)
        if r == "bf16":
            base = med
        p = float(np.nanmean(pw[use])) if np.isfinite(pw[use]).any() else float("nan")
        jpm = p * (med / 1e3) / tokens * 1e6 if math.isfinite(p) else float("nan")
        wp = 100.0 * float(np.median(wait[use])) / med
        ph = phases(err)
        phs = ", ".join(f"{n} {m:.1f}" for n, m, _ in sorted(ph[1], key=lambda x: -x[1]) if m >= 0.05) if ph else "-"
        vs = f"{base / med:.2f}x" if base else "-"
        lines.append(f"{r:<12} {gp:<14} {tps:>9.0f} {med:>8.1f} {vs:>7} {p:>8.0f} {jpm:>7.1f} {wp:>6.1f} "
                     f"{float(loss[-1]):>7.3f}  {phs}")
        short.append(f"{r} {tps / 1e3:.0f}k tok/s {p:.0f} W")
    out_write(outfile, "\n".join(lines) + "\n")
    return result(ok, "; ".join(short))


# ---- agree ------------------------------------------------------------------------------

def agree(outfile, scratch, recipes):
    lines = ["CPU vs GPU, the same seed, data and batches, 20 steps: max relative loss difference (target <= 1e-3)"]
    ok, short = True, []
    for r in recipes:
        a, b = os.path.join(scratch, f"match_{r}_cpu.h5"), os.path.join(scratch, f"match_{r}_cuda.h5")
        if h5py is None or not (os.path.exists(a) and os.path.exists(b)):
            why = read(os.path.join(scratch, f"match_{r}.why")).strip()
            lines.append(f"  {r:<6} missing run file ({why})")
            ok = False
            short.append(f"{r} missing ({why.splitlines()[0][:100] if why else 'no reason recorded'})")
            continue
        with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
            la, lb = fa["train/loss"][:], fb["train/loss"][:]
            ha, hb = fa["train/batch_hash"][:], fb["train/batch_hash"][:]
        n = min(len(la), len(lb))
        rel = float(np.max(np.abs(la[:n] - lb[:n]) / np.abs(la[:n]))) if n else float("inf")
        good = n == 20 and len(la) == len(lb) and rel <= 1e-3 and np.array_equal(ha, hb)
        ok &= good
        lines.append(f"  {r:<6} steps {n:2d}  max rel {rel:.2e}  same batches {np.array_equal(ha, hb)}  "
                     f"{'PASS' if good else 'FAIL'}")
        short.append(f"{r} {rel:.1e}")
    out_write(outfile, "\n".join(lines) + "\n", "a")
    return result(ok, "max rel loss difference " + ", ".join(short) + " (<= 1e-3)")


# ---- determinism --------------------------------------------------------------------

def same_datasets(pa, pb):
    """Every dataset of two HDF5 files, bit for bit: (n compared, names that differ)."""
    names, diff = [], []
    with h5py.File(pa, "r") as fa, h5py.File(pb, "r") as fb:
        fa.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        for n in names:
            if n not in fb:
                diff.append(n + " (missing)")
                continue
            x, y = fa[n][()], fb[n][()]
            if isinstance(x, np.ndarray) and x.dtype.kind == "f":
                same = x.shape == y.shape and np.array_equal(x.view(np.uint8), y.view(np.uint8))
            else:
                same = np.array_equal(np.asarray(x), np.asarray(y))
            if not same:
                diff.append(n)
    return len(names), diff


def determinism(outfile, scratch, recipes):
    lines = ["Two identical --device cuda runs (same seed, data, config): losses and checkpoints bit for bit"]
    ok, short = True, []
    for r in recipes:
        a, b = os.path.join(scratch, f"det_{r}_a.h5"), os.path.join(scratch, f"det_{r}_b.h5")
        ca, cb = a[:-3] + ".ckpt.h5", b[:-3] + ".ckpt.h5"
        if h5py is None or not all(os.path.exists(p) for p in (a, b, ca, cb)):
            lines.append(f"  {r:<8} missing run or checkpoint file")
            ok, short = False, short + [f"{r} missing"]
            continue
        with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
            la, lb = fa["train/loss"][:], fb["train/loss"][:]
            ga, gb = fa["train/grad_norm"][:], fb["train/grad_norm"][:]
        same_loss = la.shape == lb.shape and la.tobytes() == lb.tobytes() and ga.tobytes() == gb.tobytes()
        n, diff = same_datasets(ca, cb)
        good = same_loss and not diff and len(la) > 0
        ok &= good
        lines.append(f"  {r:<8} {len(la)} steps: losses and grad norms {'identical' if same_loss else 'DIFFER'}; "
                     f"checkpoint {n} datasets, {'all identical' if not diff else 'differ: ' + ', '.join(diff[:6])}  "
                     f"{'PASS' if good else 'FAIL'}")
        short.append(f"{r} {'bit-identical' if good else 'DIFFERS'}")
    out_write(outfile, "\n".join(lines) + "\n", "a")
    return result(ok, "; ".join(short))


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    cmd, rest = argv[1], argv[2:]
    if cmd == "gemm" and len(rest) == 3:
        return gemm(*rest)
    if cmd == "quant" and len(rest) == 2:
        return quant(*rest)
    if cmd == "train" and len(rest) >= 4:
        return train(rest[0], rest[1], rest[2], rest[3:])
    if cmd == "agree" and len(rest) >= 3:
        return agree(rest[0], rest[1], rest[2:])
    if cmd == "determinism" and len(rest) >= 3:
        return determinism(rest[0], rest[1], rest[2:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
