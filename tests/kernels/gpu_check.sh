#!/bin/sh
# gpu_check.sh — the GPU trainer's checks on a machine with a CUDA device, as
# one short script (a few minutes after the build):
#   test_cuda_train      CPU vs GPU, 20 steps, fp32/bf16 to 1e-3, fp8/nvfp4
#   test_qtrain_device   qtrain --device cuda end to end: run file, CPU
#                        agreement, checkpoint and resume, --inject, --grad-comm
#   test_cuda_quant      every kernel against quant/ (SR offset/stride maps too)
#   test_cuda_native     native fp8 / mxfp8 / nvfp4 dispatch vs QP_CUDA_EMULATE=1
#   test_qtrain_mpi_cuda mpirun -np 2 qtrain --device cuda (NCCL) vs one GPU
#                        (SKIPs with fewer than two GPUs)
# usage: tests/kernels/gpu_check.sh [BUILD_DIR]   (default build-gpu)
set -eu
B=${1:-build-gpu}
[ -f "$B/CMakeCache.txt" ] || cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null
make -C "$B" -j"$(nproc)" qtrain test_cuda_train test_cuda_quant test_cuda_native >/dev/null
nvidia-smi --query-gpu=name,compute_cap,power.draw --format=csv,noheader || true
cd "$B" && ctest -R 'test_cuda_train|test_qtrain_device|test_cuda_quant|test_cuda_native|test_qtrain_mpi_cuda' \
    --output-on-failure
