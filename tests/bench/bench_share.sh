#!/usr/bin/env bash
# bench_share.sh — a qtrain run beside two 1-thread qtrain runs (what a
# user's run meets when `qsweep -j 2` is going), against the same run alone,
# ROUNDS times: qtrain's default (auto: --threads auto, its thread count and
# OpenMP waiting chosen at start, train/run/qp_omp.h: on 2 idle CPUs 2 threads
# and a bounded spin, beside the two runs 1 thread), and a 2-thread run
# (--threads 2) under qtrain's choice of waiting (default), passive waiting
# and active waiting (OMP_WAIT_POLICY=active, libgomp spinning), or the
# policies QP_SHARE_POLICIES lists (auto, default, passive, active, spinN =
# GOMP_SPINCOUNT=N, libgomp spinning N times before it sleeps): median
# step time of the measured run each time and its speed as a share of the
# run alone (fair share on 2 cores: 50%; target: >= 35% every
# time). The background runs start first and outlive the measured one.
# Then the same with the background runs joining a measured run that started
# alone (QP_SHARE_JOINED=0 skips it): its median step time after its first
# second, when the others are running (auto: qtrain re-samples the idle
# CPUs as it goes). A benchmark: it prints, it asserts nothing.
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
med() { # median /train/step_ms after the first 5 steps, and the threads the run used
  /usr/bin/python3 -c "import sys,h5py,numpy as np; f=h5py.File(sys.argv[1],'r'); print('%.2f %s' % (np.median(f['train/step_ms'][5:]), f.attrs['threads']))" "$1"
}
one() { # POLICY-ENV THREADS OUT: one measured run
  env $1 "$qtrain" "${args[@]}" --steps "$steps" --threads "$2" --out "$3" && med "$3"
}
printf "run of 2 layers, 64 wide, T64 B8, %d steps, alone and beside two 1-thread runs; load average %s\n" \
  "$steps" "$(cut -d' ' -f1 /proc/loadavg)"
printf "%-8s %5s %12s %8s %14s %8s %9s\n" "policy" "round" "alone ms" "threads" "shared ms" "threads" "share"
for policy in ${QP_SHARE_POLICIES:-auto default passive active}; do
  threads=2
  case $policy in
    auto) envs="QP_UNUSED=1" threads=auto ;; # qtrain's own choices
    default) envs="QP_UNUSED=1" ;; # qtrain's own choice of waiting
    passive) envs="OMP_WAIT_POLICY=passive" ;;
    active) envs="OMP_WAIT_POLICY=active" ;;
    spin[0-9]*) envs="GOMP_SPINCOUNT=${policy#spin}" ;;
    *) echo "bench_share.sh: unknown policy $policy (auto, default, passive, active, spinN)" >&2; exit 2 ;;
  esac
  for ((r = 1; r <= rounds; r++)); do
    read -r alone alone_t < <(one "$envs" "$threads" "$work/alone.h5")
    bg=()
    for k in 1 2; do
      "$qtrain" "${args[@]}" --steps 100000 --threads 1 --out "$work/bg$k.h5" 2>/dev/null & bg+=($!)
    done
    sleep 1
    read -r shared shared_t < <(one "$envs" "$threads" "$work/shared.h5")
    for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    bg=()
    printf "%-8s %5d %12.2f %8s %14.2f %8s %8.0f%%\n" "$policy" "$r" "$alone" "$alone_t" "$shared" "$shared_t" \
      "$(awk -v a="$alone" -v s="$shared" 'BEGIN { print 100 * a / s }')"
  done
done
med_after() { # median /train/step_ms of the steps after the first second of steps, and their threads
  /usr/bin/python3 -c "
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], 'r'); ms = f['train/step_ms'][:]; late = np.cumsum(ms) >= 1000
print('%.2f %s' % (np.median(ms[late]), '/'.join(str(t) for t in sorted(set(f['train/threads'][:][late].tolist())))))" "$1"
}
if [ "${QP_SHARE_JOINED:-1}" != 0 ]; then
  printf "\njoined: the two 1-thread runs start 0.3 s after the measured run (%d steps)\n" $((steps * 8))
  printf "%-8s %5s %12s %8s %14s %8s %9s\n" "policy" "round" "alone ms" "threads" "joined ms" "threads" "share"
  for policy in auto default; do
    threads=2
    [ $policy = auto ] && threads=auto
    for ((r = 1; r <= rounds; r++)); do
      read -r alone alone_t < <(one "QP_UNUSED=1" "$threads" "$work/alone.h5")
      rm -f "$work/joined.h5"
      "$qtrain" "${args[@]}" --steps $((steps * 8)) --threads "$threads" --out "$work/joined.h5" & m=$!
      while [ ! -e "$work/joined.h5" ] && kill -0 $m 2>/dev/null; do sleep 0.05; done
      sleep 0.3
      bg=()
      for k in 1 2; do
        "$qtrain" "${args[@]}" --steps 100000 --threads 1 --out "$work/bg$k.h5" 2>/dev/null & bg+=($!)
      done
      wait $m
      for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
      bg=()
      read -r joined joined_t < <(med_after "$work/joined.h5")
      printf "%-8s %5d %12.2f %8s %14.2f %8s %8.0f%%\n" "$policy" "$r" "$alone" "$alone_t" "$joined" "$joined_t" \
        "$(awk -v a="$alone" -v s="$joined" 'BEGIN { print 100 * a / s }')"
    done
  done
fi
printf "load average %s at the end\n" "$(cut -d' ' -f1 /proc/loadavg)"
