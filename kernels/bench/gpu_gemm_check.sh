#!/usr/bin/env bash
# kernels/bench/gpu_gemm_check.sh — the cuBLASLt GEMM checks on a GPU machine,
# as one short script: test_scale_layout, test_cublaslt, bench_gemm.
#
#   kernels/bench/gpu_gemm_check.sh [BIN]
#
# BIN: a folder holding already built test_scale_layout, test_cublaslt and
# bench_gemm (e.g. build-cublas/bin, built where nvcc is). Without it the three
# are built here with nvcc + gcc alone (no CMake, HDF5 or oneDNN needed),
# for QP_CUDA_ARCH (default: native). Logs go to ${OUT:-build-gpucheck}.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-build-gpucheck}
mkdir -p "$LOG"
[ -d /usr/local/cuda/lib64 ] && export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv 2>&1 || true) | tee "$LOG/gpu.txt"

BIN=${1:-}
if [ -z "$BIN" ]; then
  BIN=$LOG/bin
  OBJ=$LOG/obj
  mkdir -p "$BIN" "$OBJ"
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  ARCH=${QP_CUDA_ARCH:-native}
  set -e
  for f in quant/qp_format quant/qp_rng quant/qp_quant quant/qp_quant_ref quant/qp_simd_avx512 \
           quant/qp_hadamard quant/qp_scaling quant/qp_metrics kernels/qp_scale_layout; do
    gcc -O2 -std=gnu11 -Iquant -Ikernels -c "$f.c" -o "$OBJ/$(basename "$f").o" &
  done
  wait
  "$NVCC" -O2 -std=c++17 -arch="$ARCH" -Ikernels -Iquant -c kernels/qp_cublaslt.cu -o "$OBJ/qp_cublaslt.o"
  gcc -O2 -std=gnu11 -Ikernels -Itests tests/kernels/test_scale_layout.c "$OBJ/qp_scale_layout.o" -o "$BIN/test_scale_layout"
  Q=$(ls "$OBJ"/qp_*.o | grep -v qp_cublaslt)
  "$NVCC" -O2 -std=c++17 -arch="$ARCH" -Ikernels -Iquant tests/kernels/test_cublaslt.cu "$OBJ/qp_cublaslt.o" $Q \
    -lcublasLt -o "$BIN/test_cublaslt"
  "$NVCC" -O2 -std=c++17 -arch="$ARCH" -Ikernels -Iquant kernels/bench/bench_gemm.cu "$OBJ/qp_cublaslt.o" \
    "$OBJ/qp_scale_layout.o" -lcublasLt -o "$BIN/bench_gemm"
  set +e
fi

rc=0
timeout 60 "$BIN/test_scale_layout" 2>&1 | tee "$LOG/test_scale_layout.txt"; r=${PIPESTATUS[0]}; [ "$r" -ne 0 ] && rc=1
timeout 300 "$BIN/test_cublaslt" 2>&1 | tee "$LOG/test_cublaslt.txt"; r=${PIPESTATUS[0]}; [ "$r" -ne 0 ] && rc=1
timeout 240 "$BIN/bench_gemm" 2>&1 | tee "$LOG/bench_gemm.txt"; r=${PIPESTATUS[0]}; [ "$r" -ne 0 ] && rc=1
echo "gpu_gemm_check: rc=$rc (logs in $LOG)"
exit $rc
