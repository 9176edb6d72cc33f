#!/usr/bin/env bash
# test.sh — everything from a fresh Debian 12 machine: dependencies, Release
# build in build/, the full ctest suite (the exhaustive 2^32 codec test and
# the "mpi" label — mpirun -np 2 with the root flags in the test definitions —
# included; the "cluster" label apart, which .ci/run runs after this script),
# then the unit tests again under ASan+UBSan (build-asan/) and the fuzz
# targets for a bounded time (build-fuzz/, clang).
#
# Every stage runs even when an earlier one failed (a failing ctest must not
# hide whether the sanitizers and the fuzzers pass); the last line says which
# stages failed, and the exit status is non-zero if any did.
set -uo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh
set +e

failed=()
# stage NAME CMD...: run one stage, remember it if it fails
stage() {
  local name=$1; shift
  echo "== $name"
  if ! "$@"; then
    echo "== $name: FAILED"
    failed+=("$name")
  fi
}

# a stage that needs a build that failed is not run, and counts as failed
needs() {
  local what=$1; shift
  for f in "${failed[@]:-}"; do
    if [ "$f" = "$what" ]; then
      echo "== skipped: it needs '$what', which failed"
      return 1
    fi
  done
  "$@"
}

run_ctest() { (cd "$1" && shift && ctest --output-on-failure -j"$(nproc)" "$@"); }

qp_all_deps() { qp_install_deps && qp_install_pip_deps; }
stage "dependencies" qp_all_deps
stage "build (Release)" qp_build build
# the "cluster" label (a multi-node Slurm in network namespaces, 2.5–3.5 minutes on 2 cores) is a
# stage of its own in .ci/run: `ctest -L cluster` in build/
stage "tests" needs "build (Release)" run_ctest build -LE cluster
# without CUDA: the sanitized tests are CPU tests, and this proves the build
# without nvcc still works
stage "sanitizer build (ASan + UBSan)" qp_build build-asan -DQP_SANITIZE=ON -DQP_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
stage "sanitizer tests (unit, qerr)" needs "sanitizer build (ASan + UBSan)" \
  env ASAN_OPTIONS=detect_leaks=1 bash -c 'cd build-asan && ctest --output-on-failure -j"$(nproc)" -L "unit|qerr"'
if command -v clang >/dev/null; then
  stage "fuzz build (libFuzzer)" env CC=clang CXX=clang++ bash -c \
    'source scripts/setup.sh && qp_build build-fuzz -DQP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo'
  stage "fuzzing (bounded)" needs "fuzz build (libFuzzer)" run_ctest build-fuzz -L fuzz
else
  echo "== fuzzing: FAILED (clang is not installed)"
  failed+=("fuzzing (no clang)")
fi

if [ ${#failed[@]} -eq 0 ]; then
  echo "== all tests passed"
  exit 0
fi
summary=$(printf '%s; ' "${failed[@]}")
echo "test.sh: ${#failed[@]} stage(s) failed: ${summary%; }"
exit 1
