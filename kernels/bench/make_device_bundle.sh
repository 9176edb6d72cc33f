#!/usr/bin/env bash
# make_device_bundle.sh — build here, run on a GPU machine that lacks the
# build's dependencies (HDF5, oneDNN). Writes .devbundle/ (git-ignored):
# bin/ (qtrain, the GPU tests and benchmarks), lib/ (the shared libraries they
# load, except glibc's and CUDA's own, which the GPU machine has), data.txt
# (the corpus) and BUILD_INFO. Then, with the device tool:
#   run(command="kernels/bench/device_check.sh $OUT", carry=[".devbundle"])
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-bundle}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="90;100" >/dev/null
make -C "$BUILD" -j"$(nproc)" qtrain >/dev/null
for t in bench_gemm bench_cuda_quant test_cuda_quant test_cublaslt test_cuda_native test_cuda_train; do
  make -C "$BUILD" -j"$(nproc)" "$t" >/dev/null 2>&1 || echo "make_device_bundle: no target $t (skipped)"
done
rm -rf .devbundle && mkdir -p .devbundle/bin .devbundle/lib
for b in qtrain bench_gemm bench_cuda_quant test_cuda_quant test_cublaslt test_cuda_native test_cuda_train; do
  f=$(find "$BUILD" -type f -name "$b" -perm -u+x | head -1)
  [ -n "$f" ] && cp "$f" .devbundle/bin/
done
for b in .devbundle/bin/*; do
  ldd "$b" | awk '/=> \//{print $3}'
done | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libcuda|libcublas[^/]*|libcudart|libnccl|libnvidia[^/]*)\.so' |
  while read -r l; do cp -L "$l" .devbundle/lib/; done
DATA=${QP_DATA:-../shared/data/tinyshakespeare.txt}
[ -f "$DATA" ] && cp "$DATA" .devbundle/data.txt
cp tests/kernels/test_qtrain_device.py .devbundle/bin/
echo "built $(date -u +%FT%TZ) from $(git rev-parse --short HEAD) with nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')" >.devbundle/BUILD_INFO
du -sh .devbundle
