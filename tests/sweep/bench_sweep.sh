#!/usr/bin/env bash
# bench_sweep.sh — does running runs side by side pay? The same small sweep
# (4 runs: bf16/fp8 x 2 seeds, a 2-layer 64-wide model, 100 steps) with -j 1
# (one run at a time, cores threads each) and -j N (N at a time, cores/N
# threads each), alternating, ROUNDS times each; prints every wall time, the
# medians and their ratio. Not a test: timings on a shared machine vary by
# tens of percent (run it on an idle machine; compare the ratio).
#   tests/sweep/bench_sweep.sh [BUILD_DIR] [CORPUS] [N] [ROUNDS]
#   (defaults: build, the shared corpus, 2, 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
corpus=${2:-$root/../shared/data/tinyshakespeare.txt}
jobs=${3:-2}
rounds=${4:-3}
qsweep=$build/bin/qsweep
[ -x "$qsweep" ] || { echo "bench_sweep.sh: no $qsweep (build first)" >&2; exit 2; }
[ -f "$corpus" ] || { echo "bench_sweep.sh: no corpus $corpus" >&2; exit 2; }
work=$(mktemp -d /tmp/bench_sweep.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/bench.ini" <<INI
[base]
layers = 2
heads = 4
dim = 64
seq = 64
batch = 12
steps = 100
warmup = 10
eval_every = 50
eval_batches = 5
qerr_every = 50
ckpt_every = 50
[grid]
recipe = bf16, fp8
seed = 1, 2
INI
wall() { # seconds of one sweep into a fresh folder
  local t0 t1
  rm -rf "$work/j$1"
  t0=$(date +%s.%N)
  "$qsweep" "$work/bench.ini" --data "$corpus" -j "$1" --out "$work/j$1" >/dev/null 2>"$work/j$1.err" ||
    { cat "$work/j$1.err" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cores=$(nproc)
all1="" alln=""
for ((r = 0; r < rounds; r++)); do # alternating, so a burst of load hits both
  all1+="$(wall 1) "
  alln+="$(wall "$jobs") "
done
t1=$(tr ' ' '\n' <<<"$all1" | grep . | median)
tn=$(tr ' ' '\n' <<<"$alln" | grep . | median)
printf "cores %d, 4 runs of 100 steps (2 layers, 64 wide, T64 B12), %d rounds\n" "$cores" "$rounds"
printf "%-34s %8.2f s   (runs: %s)\n" "-j 1 (threads $cores per run)" "$t1" "$all1"
printf "%-34s %8.2f s   (runs: %s)\n" "-j $jobs (threads $(( cores / jobs > 1 ? cores / jobs : 1 )) per run)" "$tn" "$alln"
printf "%-34s %8.3f (target <= 0.6 for -j 2 on 2 cores)\n" "ratio of medians -j $jobs / -j 1" \
  "$(awk -v a="$tn" -v b="$t1" 'BEGIN { print a / b }')"
