#!/usr/bin/env bash
# make_device_bundle.sh — build here what kernels/bench/device_check.sh runs on
# a GPU machine that cannot build qprec (no HDF5 headers, no oneDNN: a plain
# CUDA image), as one compressed file to copy there with the checkout:
#   .devbundle/qprec-bundle.tar.xz   (git-ignored; at most 40 MiB, checked)
# holding bin/ (qtrain and its CUDA backend module, the GPU tests and benchmarks, stripped), lib/ (the
# shared libraries they load that such an image lacks: HDF5 and its
# dependencies, oneDNN, OpenMP; not glibc's, not libstdc++/libgcc_s/zlib,
# not CUDA's — libcublasLt comes from the image's toolkit or its CUDA-13
# wheels, cudart is linked statically, NVML is the driver's), data.txt (the
# corpus) and BUILD_INFO (commit, toolkit, sizes, the library list).
# Build: Release, sm_90 only (H100, H200), no MPI (one process there).
# Then, on the GPU machine, from the checkout's root (docs/gpu.md):
#   kernels/bench/device_check.sh results/
# Usage: kernels/bench/make_device_bundle.sh [BUILD_DIR]   (default build-bundle)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-bundle}
LIMIT=$((40 * 1024 * 1024))
BINS=(qtrain qp_backend_cuda.so bench_gemm bench_cuda_quant test_cuda_quant test_cublaslt test_cuda_native test_cuda_train
      test_cuda_model_kernels)
say() { echo "make_device_bundle: $*"; }
command -v nvcc >/dev/null || { say "nvcc not found: the bundle needs a CUDA build"; exit 1; }
command -v xz >/dev/null || { say "xz not found (apt-get install xz-utils)"; exit 1; }
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON >"$BUILD.configure.log" 2>&1 ||
  { say "configure failed (see $BUILD.configure.log)"; exit 1; }
grep -q 'kernels/ is built for 90$' "$BUILD.configure.log" ||
  { say "the build is not CUDA sm_90 only (see $BUILD.configure.log)"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" --target "${BINS[@]/%.so/}" >"$BUILD.build.log" 2>&1 ||
  { say "build failed (see $BUILD.build.log)"; exit 1; }

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib"
for b in "${BINS[@]}"; do
  f="$BUILD/bin/$b"
  [ -x "$f" ] || { say "missing $f"; exit 1; }
  strip --strip-unneeded -o "$STAGE/bin/$b" "$f"
done
# The libraries: every resolved dependency except those any CUDA image has.
skip='/(ld-linux[^/]*|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libz|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia-[^/]*)\.so'
missing=$(for b in "$STAGE"/bin/*; do ldd "$b"; done | grep 'not found' | sort -u || true)
[ -z "$missing" ] || { say "unresolved here: $missing"; exit 1; }
for b in "$STAGE"/bin/*; do ldd "$b" | awk '/=> \//{print $3}'; done | sort -u | grep -v -E "$skip" |
  while read -r l; do
    cp -L "$l" "$STAGE/lib/"
    strip --strip-unneeded "$STAGE/lib/$(basename "$l")" 2>/dev/null || true
  done
DATA=${QP_DATA:-../shared/data/tinyshakespeare.txt}
[ -f "$DATA" ] || { say "corpus $DATA not found (QP_DATA=FILE)"; exit 1; }
cp "$DATA" "$STAGE/data.txt"
{
  echo "built $(date -u +%FT%TZ) from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo '+uncommitted')"
  echo "nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), sm_90, $(gcc -dumpfullversion) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "needs from the machine: glibc >= $(ldd --version | head -1 | awk '{print $NF}'), libstdc++, libgcc_s, zlib, libcublasLt.so.13 (CUDA 13), a driver for CUDA 13"
  echo "bin:"; (cd "$STAGE/bin" && ls -l | awk 'NR>1{printf "  %-26s %10d\n", $9, $5}')
  echo "lib:"; (cd "$STAGE/lib" && ls -l | awk 'NR>1{printf "  %-26s %10d\n", $9, $5}')
} >"$STAGE/BUILD_INFO"
mkdir -p .devbundle
rm -f .devbundle/qprec-bundle.tar.xz
tar -C "$STAGE" -cf - BUILD_INFO bin lib data.txt | xz -9 -T0 >.devbundle/qprec-bundle.tar.xz
size=$(stat -c %s .devbundle/qprec-bundle.tar.xz)
raw=$(du -sb "$STAGE" | cut -f1)
say "$(awk -v s="$size" -v r="$raw" -v n="$(ls "$STAGE/lib" | wc -l)" \
  'BEGIN{printf ".devbundle/qprec-bundle.tar.xz: %.1f MiB (%.1f MiB unpacked, %d libraries)", s/1048576, r/1048576, n}')"
[ "$size" -le "$LIMIT" ] || { say "larger than 40 MiB: keep the bundle small enough to copy with the tree"; exit 1; }
