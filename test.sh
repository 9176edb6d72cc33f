#!/usr/bin/env bash
# test.sh — everything from a fresh Debian 12 machine: dependencies, Release
# build in build/, the full ctest suite (the exhaustive 2^32 codec test and
# the "mpi" label — mpirun -np 2 with the root flags in the test definitions —
# included), then the unit tests again under ASan+UBSan (build-asan/) and the
# fuzz targets for a bounded time (build-fuzz/, clang).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh

qp_install_deps
qp_install_pip_deps

echo "== build (Release)"
qp_build build
echo "== tests"
(cd build && ctest --output-on-failure -j"$(nproc)")

echo "== sanitizers (ASan + UBSan): unit tests"
# without CUDA: the sanitized tests are CPU tests, and this proves the build
# without nvcc still works
qp_build build-asan -DQP_SANITIZE=ON -DQP_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$(nproc)" -L "unit|qerr")

if command -v clang >/dev/null; then
  echo "== fuzzing (libFuzzer, bounded)"
  CC=clang CXX=clang++ qp_build build-fuzz -DQP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
  (cd build-fuzz && ctest --output-on-failure -L fuzz)
fi
echo "== all tests passed"
