#!/usr/bin/env bash
# bench_share.sh — a 2-thread qtrain beside two 1-thread qtrain runs (what a
# user's run meets when `qsweep -j 2` is going), against the same run alone,
# ROUNDS times, under qtrain's own choice of OpenMP waiting (train/qp_omp.h:
# a bounded spin on idle CPUs, passive on busy ones), under passive waiting
# and under active waiting (OMP_WAIT_POLICY=active, libgomp spinning), or the
# policies QP_SHARE_POLICIES lists (default, passive, active, spinN =
# GOMP_SPINCOUNT=N, libgomp spinning N times before it sleeps): median
# step time of the 2-thread run each time and its speed as a share of the
# run alone (fair share on 2 cores: 50%; the issue's target: >= 35% every
# time). The background runs start first and outlive the measured one. A
# benchmark: it prints, it asserts nothing.
#   tests/bench/bench_share.sh [BUILD_DIR] [CORPUS] [ROUNDS] [STEPS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
corpus=${2:-$root/../shared/data/tinyshakespeare.txt}
rounds=${3:-3}
steps=${4:-150}
qtrain=$build/bin/qtrain
[ -x "$qtrain" ] || { echo "bench_share.sh: no $qtrain (build first)" >&2; exit 2; }
[ -f "$corpus" ] || { echo "bench_share.sh: no corpus $corpus" >&2; exit 2; }
work=$(mktemp -d /tmp/bench_share.XXXXXX)
bg=()
cleanup() { for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
args=(--data "$corpus" --layers 2 --heads 2 --dim 64 --seq 64 --batch 8 --warmup 5 --eval-every 0
      --eval-batches 1 --qerr-every 0 --ckpt-every 0 --quiet)
med() { # median /train/step_ms after the first 5 steps
  /usr/bin/python3 -c "import sys,h5py,numpy as np; print('%.2f' % np.median(h5py.File(sys.argv[1],'r')['train/step_ms'][5:]))" "$1"
}
one() { # POLICY-ENV OUT: one measured 2-thread run
  env $1 "$qtrain" "${args[@]}" --steps "$steps" --threads 2 --out "$2" && med "$2"
}
printf "2-thread run (2 layers, 64 wide, T64 B8, %d steps) alone and beside two 1-thread runs; load average %s\n" \
  "$steps" "$(cut -d' ' -f1 /proc/loadavg)"
printf "%-8s %5s %12s %14s %9s\n" "policy" "round" "alone ms" "shared ms" "share"
for policy in ${QP_SHARE_POLICIES:-default passive active}; do
  case $policy in
    default) envs="QP_UNUSED=1" ;; # qtrain's own choice
    passive) envs="OMP_WAIT_POLICY=passive" ;;
    active) envs="OMP_WAIT_POLICY=active" ;;
    spin[0-9]*) envs="GOMP_SPINCOUNT=${policy#spin}" ;;
    *) echo "bench_share.sh: unknown policy $policy (default, passive, active, spinN)" >&2; exit 2 ;;
  esac
  for ((r = 1; r <= rounds; r++)); do
    alone=$(one "$envs" "$work/alone.h5")
    bg=()
    for k in 1 2; do
      "$qtrain" "${args[@]}" --steps 100000 --threads 1 --out "$work/bg$k.h5" 2>/dev/null & bg+=($!)
    done
    sleep 1
    shared=$(one "$envs" "$work/shared.h5")
    for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    bg=()
    printf "%-8s %5d %12.2f %14.2f %8.0f%%\n" "$policy" "$r" "$alone" "$shared" \
      "$(awk -v a="$alone" -v s="$shared" 'BEGIN { print 100 * a / s }')"
  done
done
printf "load average %s at the end\n" "$(cut -d' ' -f1 /proc/loadavg)"
