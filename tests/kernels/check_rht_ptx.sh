#!/usr/bin/env bash
# check_rht_ptx.sh — the RHT kernels round as the host does, read from their
# PTX (no GPU needed): in every rht_kernel entry of qp_cuda_rht.cu each f32
# multiply, add and subtract carries .rn (PTX's "round once, never fuse into
# an FMA": ptxas may contract a mul and an add written without it), and there
# is no fma/mad and no .ftz (subnormals kept). Transformer Engine's transform
# (rht_kernel<16, true>, qp_rht_te_vec) is exactly 16 products x*(+-0.25)
# and the 64 adds/subtracts of four butterfly stages, the arithmetic of
# quant/'s qp_rht16_te. The flags are qpcuda's (kernels/CMakeLists.txt,
# QP_CUDA_EXACT_FLAGS). A control compiled without --fmad=false shows the
# checks catch a contractible a*b+c, so the test cannot pass by matching
# nothing.
# usage: check_rht_ptx.sh NVCC WORKDIR NVCC_FLAGS... -- SOURCE
set -uo pipefail
nvcc=$1 work=$2
shift 2
flags=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags+=("$1"); shift; done
shift
src=$1
mkdir -p "$work"
# f32 arithmetic of the entries whose name matches $2 in PTX file $1: one
# line per instruction, its opcode
f32_ops() {
  awk -v pat="$2" '
    /^\.(visible )?\.?entry / { inside = ($0 ~ pat) }
    inside && $1 ~ /^(mul|add|sub|fma|mad|neg)\./ && $1 ~ /\.f32$/ { print $1 }' "$1"
}
# the opcodes that break the host's rounding: fused, flushed, or contractible
bad_ops() { grep -vE '^(mul|add|sub)\.rn\.f32$' | grep -v '^neg\.f32$'; }

cat >"$work/control.cu" <<'CU'
__global__ void control_kernel(float *p) { p[0] = p[1] * 0.25f + p[2] * 0.25f; }
CU
if ! "$nvcc" -ptx -arch=compute_90 -o "$work/control.ptx" "$work/control.cu"; then
  echo "check_rht_ptx: nvcc failed on the control"; exit 1
fi
if [ -z "$(f32_ops "$work/control.ptx" control_kernel | bad_ops)" ]; then
  echo "check_rht_ptx: the checks miss the control's contractible a*b+c:"; f32_ops "$work/control.ptx" control_kernel
  exit 1
fi
ptx="$work/qp_cuda_rht.ptx"
if ! "$nvcc" -ptx "${flags[@]}" -o "$ptx" "$src"; then
  echo "check_rht_ptx: nvcc failed on $src"; exit 1
fi
fail=0
n_entries=$(grep -cE '^\.(visible )?\.?entry .*rht_kernel' "$ptx")
if [ "$n_entries" -lt 5 ]; then
  echo "FAIL: $n_entries rht_kernel entries in $ptx, expected 5 (16, 32, 64, 128 seeded; 16 TE)"; fail=1
fi
bad=$(f32_ops "$ptx" rht_kernel | bad_ops | sort | uniq -c)
if [ -n "$bad" ]; then
  echo "FAIL: rht_kernel arithmetic that does not round as the host does:"; echo "$bad"; fail=1
fi
# Transformer Engine's kernel: rht_kernel<16, true> (mangled ILi16ELb1E)
te=$(f32_ops "$ptx" 'rht_kernelILi16ELb1E')
muls=$(echo "$te" | grep -c '^mul\.rn\.f32$')
sums=$(echo "$te" | grep -cE '^(add|sub)\.rn\.f32$')
if [ "$muls" -ne 16 ] || [ "$sums" -ne 64 ] || [ "$(echo "$te" | grep -c .)" -ne 80 ]; then
  echo "FAIL: TE's RHT kernel has $muls products and $sums sums (expected 16 and 64, nothing else):"
  echo "$te" | sort | uniq -c
  fail=1
fi
[ $fail -eq 0 ] && echo "ok: $n_entries rht_kernel entries round every f32 operation once (.rn, no FMA, no FTZ);" \
  "TE's: 16 products, 64 butterfly sums"
exit $fail
