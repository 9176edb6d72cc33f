#!/usr/bin/env bash
# bench_mpi.sh — step time and communication share of data-parallel qtrain,
# 1 rank vs 2 ranks, in the same run (this machine is noisy: compare within
# one run). Prints one table: median ms/step and median comm_ms/step_ms over
# steps 10..STEPS-1, per layout and repetition.
#   tests/bench/bench_mpi.sh [BUILD_DIR] [CORPUS] [STEPS] [REPS]
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}; DATA=${2:-../shared/data/tinyshakespeare.txt}; STEPS=${3:-50}; REPS=${4:-3}
PY=${QP_PYTHON:-/usr/bin/python3}
Q=$B/bin/qtrain
MPI=(mpirun --oversubscribe -np 2)
[ "$(id -u)" = 0 ] && MPI=(mpirun --allow-run-as-root --oversubscribe -np 2)
T=$(mktemp -d)
ARGS=(--data "$DATA" --recipe bf16 --layers 4 --heads 4 --dim 128 --seq 64 --batch 12 --steps "$STEPS"
      --warmup 5 --eval-every 0 --eval-batches 1 --qerr-every 0 --ckpt-every 0 --quiet)
for r in $(seq "$REPS"); do
  OMP_NUM_THREADS=1 "$Q" "${ARGS[@]}" --threads 1 --out "$T/r1t1_$r.h5"
  OMP_NUM_THREADS=2 "$Q" "${ARGS[@]}" --threads 2 --out "$T/r1t2_$r.h5"
  "${MPI[@]}" -x OMP_NUM_THREADS=1 "$Q" "${ARGS[@]}" --threads 1 --out "$T/r2t1_$r.h5"
done
"$PY" - "$T" "$REPS" <<'PYEOF'
import sys, h5py, numpy as np
t, reps = sys.argv[1], int(sys.argv[2])
print("baby config (4L 4H 128C, T64, global batch 12), bf16; medians over steps 10..end")
print("%-22s %5s %10s %12s" % ("layout", "rep", "ms/step", "comm share"))
for name, lab in [("r1t1", "1 rank x 1 thread"), ("r1t2", "1 rank x 2 threads"), ("r2t1", "2 ranks x 1 thread")]:
    for r in range(1, reps + 1):
        with h5py.File("%s/%s_%d.h5" % (t, name, r), "r") as f:
            ms, comm = f["train/step_ms"][10:], f["train/comm_ms"][10:]
        print("%-22s %5d %10.1f %12.2f" % (lab, r, np.median(ms), np.median(comm / ms)))
PYEOF
rm -rf "$T"
