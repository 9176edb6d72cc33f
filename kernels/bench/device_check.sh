#!/usr/bin/env bash
# device_check.sh — every check that needs a GPU, in one run, ending with one
# table. Meant for a GPU machine (an H200 for the issue's targets); finishes in
# about 6 minutes there. Usage (from the repository root):
#   kernels/bench/device_check.sh [OUT_DIR]
# It uses a prebuilt bundle when .devbundle/ exists (kernels/bench/
# make_device_bundle.sh makes one on a build machine: binaries, the shared
# libraries they need, the corpus), else it builds here (needs CMake, nvcc,
# HDF5 and oneDNN development files).
# Sections: 1 GPU tests (bit-identical quantization, cuBLASLt GEMMs, GPU model),
# 2 GEMM TFLOP/s (bench_gemm), 3 quantization kernels vs a device copy
# (bench_cuda_quant), 4 qtrain --device cuda tokens/s and power per recipe on a
# GPT-2-small-sized model, 5 CPU-vs-GPU loss agreement over 20 matched steps.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-${OUT:-/tmp/qp_device_check}}
mkdir -p "$OUT"
LOG="$OUT/device_check.log"
: >"$LOG"
say() { echo "$@" | tee -a "$LOG"; }
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 ))s; }
PY=${QP_PYTHON:-python3}

nvidia-smi --query-gpu=name,compute_cap,driver_version,power.limit --format=csv,noheader 2>&1 | tee -a "$LOG" \
  || { say "device_check: no GPU (nvidia-smi failed)"; exit 77; }

if [ -x .devbundle/bin/qtrain ]; then
  BIN=$PWD/.devbundle/bin
  export LD_LIBRARY_PATH=$PWD/.devbundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  DATA=$PWD/.devbundle/data.txt
  # cuBLAS(Lt) and NCCL are not in the bundle: the toolkit's, or the pip wheels'
  for d in $("$PY" -c 'import importlib, os
for m in ("nvidia.nccl", "nvidia.cublas", "nvidia.cuda_runtime"):
    try: print(os.path.join(list(importlib.import_module(m).__path__)[0], "lib"))
    except Exception: pass' 2>/dev/null); do LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d; done
  say "== using the prebuilt bundle .devbundle ($(cat .devbundle/BUILD_INFO 2>/dev/null))"
else
  say "== building (Release, sm_90 + sm_100) $(elapsed)"
  cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release >>"$LOG" 2>&1 &&
    make -C build-device -j"$(nproc)" >>"$LOG" 2>&1 || { say "device_check: build failed (see $LOG)"; exit 1; }
  BIN=$PWD/build-device/bin
  DATA=${QP_DATA:-../shared/data/tinyshakespeare.txt}
  [ -f "$DATA" ] || { "$PY" - "$OUT/data.txt" <<'PYEOF'
import random, sys
random.seed(1)
words = "the of and to in is was that for it with as his on be at by I this had not are but from".split()
open(sys.argv[1], "w").write(" ".join(random.choice(words) for _ in range(400000)))
PYEOF
  DATA=$OUT/data.txt; }
fi
export PATH=$BIN:$PATH

declare -A RES
# 1. GPU tests: each prints its own checks; exit 0 pass, 77 skip.
say "== 1. GPU tests $(elapsed)"
for t in test_cuda_quant test_cublaslt test_cuda_native test_cuda_train; do
  if [ -x "$BIN/$t" ]; then
    ( cd "$OUT" && timeout 120 "$BIN/$t" ) >>"$LOG" 2>&1; rc=$?
    case $rc in 0) RES[$t]=pass;; 77) RES[$t]=skip;; *) RES[$t]="FAIL (rc $rc)";; esac
  else RES[$t]="not built"; fi
  say "  $t: ${RES[$t]}"
done
# qtrain --device cuda end to end: run file, CPU agreement, resume, --inject, --grad-comm
T=$BIN/test_qtrain_device.py; [ -f "$T" ] || T=tests/kernels/test_qtrain_device.py
mkdir -p "$OUT/devtest"
timeout 240 "$PY" "$T" "$BIN/qtrain" "$DATA" "$OUT/devtest" >>"$LOG" 2>&1; rc=$?
case $rc in 0) RES[test_qtrain_device]=pass;; 77) RES[test_qtrain_device]=skip;; *) RES[test_qtrain_device]="FAIL (rc $rc)";; esac
say "  test_qtrain_device: ${RES[test_qtrain_device]}"
# (test_qtrain_mpi_cuda needs two GPUs: ctest -R test_qtrain_mpi_cuda on such a machine)

# 2. GEMMs and 3. quantization kernels: the programs print their own tables.
say "== 2. cuBLASLt GEMMs $(elapsed)"
timeout 90 "$BIN/bench_gemm" 2>&1 | tee "$OUT/bench_gemm.txt" >>"$LOG"
say "== 3. quantization kernels $(elapsed)"
timeout 90 "$BIN/bench_cuda_quant" 2>&1 | tee "$OUT/bench_cuda_quant.txt" >>"$LOG"

# 4. Training on the GPU: GPT-2-small-sized (12 layers, 12 heads, 768 wide,
# context 1024, batch 8 = 8192 tokens/step), 30 steps per recipe.
say "== 4. qtrain --device cuda, 12L/12H/768, T=1024, B=8, 30 steps $(elapsed)"
for r in bf16 fp8 fp8-current mxfp8 nvfp4 mxfp4; do
  timeout 120 qtrain --device cuda --data "$DATA" --recipe "$r" --layers 12 --heads 12 --dim 768 --seq 1024 \
    --batch 8 --steps 30 --warmup 5 --eval-every 0 --eval-batches 1 --qerr-every 0 --ckpt-every 0 \
    --out "$OUT/gpu_$r.h5" --quiet >>"$LOG" 2>&1
  say "  $r: exit $?"
done

# 5. Matched CPU and GPU runs: same seed, data, batches; first 20 losses.
say "== 5. CPU vs GPU, 20 steps $(elapsed)"
for r in fp32 bf16; do
  for d in cpu cuda; do
    timeout 120 qtrain --device $d --data "$DATA" --recipe $r --layers 4 --heads 4 --dim 128 --seq 64 --batch 12 \
      --steps 20 --warmup 5 --eval-every 0 --qerr-every 0 --ckpt-every 0 --threads "$(nproc)" \
      --out "$OUT/match_${r}_$d.h5" --quiet >>"$LOG" 2>&1 || say "  $r $d: exit $?"
  done
done

"$PY" - "$OUT" <<'PYEOF' 2>&1 | tee -a "$LOG"
import os, re, sys
import numpy as np
out = sys.argv[1]
try:
    import h5py
except ImportError:
    h5py = None
def lines(name):
    p = os.path.join(out, name)
    return open(p).read().splitlines() if os.path.exists(p) else []
print("\n================ qprec device check ================")
print("GEMMs (bench_gemm):")
for l in lines("bench_gemm.txt"):
    if re.search(r"TFLOP|ratio|bf16|fp8|mxfp8|nvfp4", l, re.I): print("  " + l)
print("Quantization kernels (bench_cuda_quant):")
for l in lines("bench_cuda_quant.txt"):
    if re.search(r"GB/s|copy|fp8|mx|nvfp4|rht|amax|%", l, re.I): print("  " + l)
print("Training, GPT-2-small size, 8192 tokens/step (median over steps 5..29):")
print("  %-12s %12s %10s %10s %12s" % ("recipe", "tokens/s", "ms/step", "power W", "vs bf16"))
base = None
for r in ["bf16", "fp8", "fp8-current", "mxfp8", "nvfp4", "mxfp4"]:
    p = os.path.join(out, "gpu_%s.h5" % r)
    if h5py is None or not os.path.exists(p):
        print("  %-12s %12s" % (r, "no run file")); continue
    with h5py.File(p, "r") as f:
        ms = f["train/step_ms"][5:]; pw = f["train/power_w"][5:] if "power_w" in f["train"] else np.array([np.nan])
        path = f.attrs.get("gemm_path", b"?")
        path = path.decode() if isinstance(path, bytes) else str(path)
    if len(ms) == 0:
        print("  %-12s %12s" % (r, "no steps")); continue
    med = float(np.median(ms)); tps = 8192 / (med / 1e3)
    if r == "bf16": base = med
    print("  %-12s %12.0f %10.1f %10.1f %12s  (%s)" % (r, tps, med, float(np.nanmean(pw)) if np.isfinite(pw).any() else float("nan"),
          "%.2fx" % (base / med) if base else "-", path))
print("CPU vs GPU, first 20 losses (max relative difference; target <= 1e-3):")
for r in ["fp32", "bf16"]:
    a, b = os.path.join(out, "match_%s_cpu.h5" % r), os.path.join(out, "match_%s_cuda.h5" % r)
    if h5py is None or not (os.path.exists(a) and os.path.exists(b)):
        print("  %-6s missing run file" % r); continue
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        la, lb = fa["train/loss"][:20], fb["train/loss"][:20]
    n = min(len(la), len(lb))
    if n == 0:
        print("  %-6s no steps" % r); continue
    rel = float(np.max(np.abs(la[:n] - lb[:n]) / np.abs(la[:n])))
    print("  %-6s steps %2d  max rel %.2e  %s" % (r, n, rel, "PASS" if rel <= 1e-3 and n == 20 else "FAIL"))
PYEOF
say "GPU tests: $(for t in "${!RES[@]}"; do printf '%s=%s ' "$t" "${RES[$t]}"; done)"
say "device_check finished in $(elapsed)"
