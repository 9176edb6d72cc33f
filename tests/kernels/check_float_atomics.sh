#!/usr/bin/env bash
# check_float_atomics.sh — the training path's CUDA code has no floating-point
# atomic adds: compiled to PTX, no atom/red instruction adds an f16/bf16/f32/f64.
# A float atomicAdd makes a sum's order (and its rounding) depend on thread
# timing, so two identical runs would differ; every reduction must instead
# have one owner and a fixed order. Integer atomics (counts) and atomic max on
# a non-negative float's bits are order-free and allowed.
# The pattern is first shown to catch a float atomicAdd (a control compiled
# here), so the test cannot pass by matching nothing.
# usage: check_float_atomics.sh NVCC WORKDIR NVCC_FLAGS... -- SOURCES...
set -uo pipefail
nvcc=$1 work=$2
shift 2
flags=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags+=("$1"); shift; done
shift
mkdir -p "$work"
float_adds() { # PTX lines of float atomic/reduction adds
  awk '$1 ~ /^(atom|red)\./ && $1 ~ /\.add/ && $1 ~ /\.(f16|f16x2|bf16|bf16x2|f32|f64)($|\.)/ {print FILENAME ":" FNR ": " $0}' "$@"
}
cat >"$work/control.cu" <<'CU'
__global__ void k(float *p, float v) { atomicAdd(p, v); }
__global__ void k2(double *p, double v) { p[1] = atomicAdd(p, v); }
CU
if ! "$nvcc" -ptx "${flags[@]}" -o "$work/control.ptx" "$work/control.cu"; then
  echo "check_float_atomics: nvcc failed on the control"; exit 1
fi
n=$(float_adds "$work/control.ptx" | wc -l)
if [ "$n" -lt 2 ]; then
  echo "check_float_atomics: the pattern misses the control's float atomicAdds:"; cat "$work/control.ptx"; exit 1
fi
fail=0
for src in "$@"; do
  ptx="$work/$(basename "$src" .cu).ptx"
  if ! "$nvcc" -ptx "${flags[@]}" -o "$ptx" "$src"; then
    echo "check_float_atomics: nvcc failed on $src"; fail=1; continue
  fi
  hits=$(float_adds "$ptx")
  if [ -n "$hits" ]; then
    echo "FAIL: float atomic adds in $src:"; echo "$hits" | head -20; fail=1
  else
    echo "ok: $(basename "$src"): $(grep -cE '^\s*(atom|red)\.' "$ptx") integer/bit atomics, no float atomic adds"
  fi
done
exit $fail
