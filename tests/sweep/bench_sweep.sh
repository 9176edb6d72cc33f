#!/usr/bin/env bash
# bench_sweep.sh — does running runs side by side pay? The same small sweep
# (4 runs: bf16/fp8 x 2 seeds, a 2-layer 64-wide model, 100 steps) with -j 1
# (one run at a time, cores threads each) and -j N (N at a time, cores/N
# threads each), alternating, ROUNDS times each; prints every wall time, the
# medians and their ratio. In the same rounds, one run of the sweep alone with
# 1 thread (t1) and with 2 threads (t2): on 2 cores the best -j 2 can do
# against -j 1 is t1 / (2 t2) (two 1-thread runs side by side at full speed
# against one 2-thread run at a time); the last line compares the measured
# ratio with that bound. Not a test: timings on a shared machine vary by tens
# of percent (run it on an idle machine; compare the ratios).
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
sed -e 's/^recipe = bf16, fp8/recipe = bf16/' -e 's/^seed = 1, 2/seed = 1/' "$work/bench.ini" > "$work/one.ini"
wall() { # seconds of one sweep into a fresh folder: JOBS [INI [THREADS]]
  local t0 t1 ini=${2:-$work/bench.ini} out=$work/j$1_${3:-x}
  rm -rf "$out"
  if [ -n "${3:-}" ]; then
    sed -e '$a [sweep]' -e "\$a threads_per_run = $3" "$ini" > "$out.ini"; ini=$out.ini
  fi
  t0=$(date +%s.%N)
  "$qsweep" "$ini" --data "$corpus" -j "$1" --out "$out" >/dev/null 2>"$out.err" ||
    { cat "$out.err" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cores=$(nproc)
all1="" alln="" one1="" one2=""
for ((r = 0; r < rounds; r++)); do # alternating, so a burst of load hits all
  all1+="$(wall 1) "
  alln+="$(wall "$jobs") "
  one1+="$(wall 1 "$work/one.ini" 1) "
  one2+="$(wall 1 "$work/one.ini" 2) "
done
t1=$(tr ' ' '\n' <<<"$all1" | grep . | median)
tn=$(tr ' ' '\n' <<<"$alln" | grep . | median)
s1=$(tr ' ' '\n' <<<"$one1" | grep . | median)
s2=$(tr ' ' '\n' <<<"$one2" | grep . | median)
printf "cores %d, 4 runs of 100 steps (2 layers, 64 wide, T64 B12), %d rounds\n" "$cores" "$rounds"
printf "%-34s %8.2f s   (runs: %s)\n" "-j 1 (threads $cores per run)" "$t1" "$all1"
printf "%-34s %8.2f s   (runs: %s)\n" "-j $jobs (threads $(( cores / jobs > 1 ? cores / jobs : 1 )) per run)" "$tn" "$alln"
printf "%-34s %8.2f s   (runs: %s)\n" "one run alone, 1 thread (t1)" "$s1" "$one1"
printf "%-34s %8.2f s   (runs: %s)\n" "one run alone, 2 threads (t2)" "$s2" "$one2"
ratio=$(awk -v a="$tn" -v b="$t1" 'BEGIN { print a / b }')
bound=$(awk -v a="$s1" -v b="$s2" 'BEGIN { print a / (2 * b) }')
printf "%-34s %8.3f\n" "ratio of medians -j $jobs / -j 1" "$ratio"
printf "%-34s %8.3f   (measured / bound = %.3f; target <= 1.05)\n" "bound t1 / (2 t2)" "$bound" \
  "$(awk -v a="$ratio" -v b="$bound" 'BEGIN { print a / b }')"
