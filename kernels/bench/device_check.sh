#!/usr/bin/env bash
# device_check.sh — every check that needs a GPU, in one run of at most five
# minutes (unpacking included), so that a short GPU reservation suffices: a
# failed section can be rerun alone (--only) in a second run. docs/gpu.md.
#
#   kernels/bench/device_check.sh [--only S[,S...]] [--deadline SECONDS] [OUT_DIR]
#
# OUT_DIR (default $OUT, else /tmp/qp_device_check_out) receives at most 8
# small files: device_check.log, summary.txt and the tables gemm.txt,
# quant.txt, train.txt, agree.txt, tests.txt. Run files, checkpoints and the
# unpacked bundle stay in the scratch folder (QP_DC_SCRATCH; default
# /dev/shm/qp_device_check where /dev/shm has 16 GB free, else
# /tmp/qp_device_check), never in OUT_DIR.
#
# Sections, in this order (each with its own budget, all under one global
# deadline, default 280 s from the start; each section's line of the summary
# is printed the moment it ends, so a killed call still returns those):
#   preflight    unpack .devbundle/qprec-bundle.tar.xz (make_device_bundle.sh),
#                find libcublasLt (the CUDA toolkit's, or the CUDA-13 wheels'
#                nvidia/cu13/lib), ldd every binary: any "not found" fails loudly
#   gemm         bench_gemm (cuBLASLt BF16/FP8 at 4096^3, 8192^3) next to
#                torch.matmul / torch._scaled_mm in the same call
#   quant        bench_cuda_quant: every quantization kernel's GB/s vs a D2D copy
#   agree        CPU vs GPU, fp32 and bf16, 20 matched steps: losses within 1e-3
#   determinism  two identical --device cuda runs (fp8, nvfp4): losses and
#                checkpoints bit for bit
#   train        qtrain --device cuda on a GPT-2-small-shaped model per recipe:
#                tokens/s, board power, data wait, GPU time by phase
#   tests        the GPU tests (test_cuda_quant, test_cublaslt, test_cuda_native,
#                test_cuda_model_kernels, test_cuda_train, test_qtrain_device)
# A program that exits 77 ("no GPU, skip") after nvidia-smi has shown a GPU is
# a FAIL. Exit: 0 all passed, 1 anything failed or timed out, 77 no GPU
# (nvidia-smi failed). From the checkout's root, with .devbundle/ copied along:
#   kernels/bench/device_check.sh results/
# Overrides (used by tests/kernels/test_device_check.sh): QP_DC_BUNDLE (the
# tarball), QP_DC_BIN (prebuilt binaries instead of a bundle), QP_DC_DATA,
# QP_PYTHON, QP_DC_TORCH_GEMM, QP_DC_DEVTEST (the scripts run), QP_DC_SCRATCH.
set -uo pipefail
SELF=$(readlink -f "$0")
ROOT=$(cd "$(dirname "$SELF")/../.." && pwd)
ALL=(preflight gemm quant agree determinism train tests)
# seconds per section (the estimates for an H200 are in kernels/README.md; a
# budget is a ceiling, the global deadline the real limit)
declare -A BUDGET=([preflight]=30 [gemm]=45 [quant]=25 [agree]=45 [determinism]=45 [train]=100 [tests]=100)
PY=${QP_PYTHON:-python3}
REPORT="$ROOT/kernels/bench/device_report.py"
TRAIN_RECIPES=(bf16 fp8 fp8-current mxfp8 nvfp4 mxfp4)
DET_RECIPES=(fp8 nvfp4)
GPT2=(--layers 12 --heads 12 --dim 768 --seq 1024 --batch 8) # 8192 tokens per step
now() { date +%s; }

# ---- one section, run as its own process session ------------------------------------
if [ "${1:-}" = "--section" ]; then
  name=$2
  SCR=$QPDC_SCR OUTD=$QPDC_OUT
  result() { echo "$*" >"$SCR/result_$name"; }
  progress() { echo "$*" >>"$SCR/partial_$name"; }
  # A program's exit as a word: 77 after a working nvidia-smi is a failure.
  status_of() {
    case $1 in
      0) echo pass ;;
      77) echo "FAIL (exit 77: skipped, yet nvidia-smi shows a GPU)" ;;
      124 | 137) echo "FAIL (timed out)" ;;
      *) echo "FAIL (exit $1)" ;;
    esac
  }
  # Our programs see the bundle's libraries; Python (PyTorch, h5py) keeps the image's.
  libs() { LD_LIBRARY_PATH=${QPDC_LDP:-} "$@"; }
  qtrain_run() { # RUNFILE ERRFILE SECONDS ARGS... : exit code
    local out=$1 err=$2 secs=$3
    shift 3
    rm -f "$out" "${out%.h5}.ckpt.h5" "${out%.h5}.ckpt.h5.prev"
    libs timeout -k 3 "$secs" "$QPDC_BIN/qtrain" --data "$QPDC_DATA" --quiet --out "$out" "$@" 2>"$err"
  }
  case $name in
  preflight)
    if [ -n "${QP_DC_BIN:-}" ]; then
      BIN=$(readlink -f "$QP_DC_BIN")
      DATA=${QP_DC_DATA:-$ROOT/../shared/data/tinyshakespeare.txt}
      LIBDIR=
      what="prebuilt binaries in $BIN"
    else
      BUNDLE=${QP_DC_BUNDLE:-$ROOT/.devbundle/qprec-bundle.tar.xz}
      if [ ! -f "$BUNDLE" ]; then
        result "FAIL no bundle at $BUNDLE (make it with kernels/bench/make_device_bundle.sh and carry .devbundle)"
        exit 1
      fi
      rm -rf "$SCR/bundle" && mkdir -p "$SCR/bundle"
      if command -v xz >/dev/null; then
        xz -dc "$BUNDLE" | tar -C "$SCR/bundle" -xf - || { result "FAIL could not unpack $BUNDLE"; exit 1; }
      else
        "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$BUNDLE" "$SCR/bundle" ||
          { result "FAIL could not unpack $BUNDLE (no xz, python tarfile failed)"; exit 1; }
      fi
      BIN=$SCR/bundle/bin LIBDIR=$SCR/bundle/lib DATA=${QP_DC_DATA:-$SCR/bundle/data.txt}
      what="bundle $(head -1 "$SCR/bundle/BUILD_INFO" 2>/dev/null)"
      echo "preflight: $(cat "$SCR/bundle/BUILD_INFO" 2>/dev/null)"
    fi
    [ -f "$DATA" ] || { result "FAIL no corpus at $DATA"; exit 1; }
    # cuBLASLt and friends: the CUDA toolkit's libraries, the driver's, and the
    # CUDA-13 wheels' (site-packages/nvidia/cu13/lib; older wheels nvidia/*/lib)
    dirs=()
    [ -n "$LIBDIR" ] && dirs+=("$LIBDIR")
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
      [ -d "$d" ] && dirs+=("$d")
    done
    while IFS= read -r d; do [ -d "$d" ] && dirs+=("$d"); done < <("$PY" - <<'PYEOF' 2>/dev/null
import glob, os, site, sys
roots = list(site.getsitepackages()) + [site.getusersitepackages()]
try:
    import nvidia
    roots += [os.path.dirname(p) for p in nvidia.__path__]
except Exception:
    pass
seen = set()
for r in roots:
    for d in sorted(glob.glob(os.path.join(r, "nvidia", "cu13", "lib"))) + sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib"))):
        if d not in seen:
            seen.add(d)
            print(d)
PYEOF
)
    LDP=$(IFS=:; echo "${dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "preflight: library path $LDP"
    missing= nbin=0 blt=
    for b in "$BIN"/*; do
      [ -f "$b" ] && [ -x "$b" ] || continue
      head -c 4 "$b" | grep -q 'ELF' || continue
      nbin=$((nbin + 1))
      out=$(LD_LIBRARY_PATH=$LDP ldd "$b" 2>&1)
      nf=$(echo "$out" | awk '/not found/{print $1}' | sort -u | tr '\n' ' ')
      [ -n "$nf" ] && missing+="$(basename "$b"): $nf; "
      [ -z "$blt" ] && blt=$(echo "$out" | awk '/libcublasLt/{print $3}')
    done
    if [ -n "$missing" ]; then
      result "FAIL libraries not found: ${missing}searched ${LDP:-the system paths}"
      exit 1
    fi
    [ "$nbin" -gt 0 ] || { result "FAIL no binaries in $BIN"; exit 1; }
    "$PY" -c 'import numpy, h5py' 2>/dev/null || { result "FAIL $PY lacks numpy/h5py (the reports need them)"; exit 1; }
    {
      printf 'export QPDC_BIN=%q QPDC_DATA=%q QPDC_LDP=%q\n' "$BIN" "$DATA" "$LDP"
    } >"$SCR/env.sh"
    result "PASS $what; $nbin binaries resolve every library (libcublasLt: ${blt:-none needed})"
    ;;
  gemm)
    libs timeout -k 3 25 "$QPDC_BIN/bench_gemm" >"$SCR/bench_gemm.txt" 2>&1
    rc=$?
    cat "$SCR/bench_gemm.txt"
    progress "bench_gemm $(status_of $rc)"
    timeout -k 3 35 "$PY" "${QP_DC_TORCH_GEMM:-$ROOT/kernels/bench/bench_torch_gemm.py}" >"$SCR/torch_gemm.txt" 2>&1
    trc=$?
    cat "$SCR/torch_gemm.txt"
    line=$("$PY" "$REPORT" gemm "$OUTD/gemm.txt" "$SCR/bench_gemm.txt" "$SCR/torch_gemm.txt" | tail -1)
    cat "$OUTD/gemm.txt"
    detail=${line#RESULT * }
    if [ $rc -ne 0 ]; then
      result "FAIL bench_gemm $(status_of $rc); $detail"
    elif [ $trc -ne 0 ]; then
      result "FAIL PyTorch side $(status_of $trc); $detail"
    else
      result "${line#RESULT }"
    fi
    ;;
  quant)
    libs timeout -k 3 20 "$QPDC_BIN/bench_cuda_quant" >"$SCR/bench_quant.txt" 2>&1
    rc=$?
    cat "$SCR/bench_quant.txt"
    line=$("$PY" "$REPORT" quant "$OUTD/quant.txt" "$SCR/bench_quant.txt" | tail -1)
    if [ $rc -ne 0 ]; then result "FAIL bench_cuda_quant $(status_of $rc); ${line#RESULT * }"; else result "${line#RESULT }"; fi
    ;;
  agree)
    # nanoGPT's baby Shakespeare shape; the same seed, data and batches on both
    for r in fp32 bf16; do
      for d in cpu cuda; do
        qtrain_run "$SCR/match_${r}_$d.h5" "$SCR/match_${r}_$d.err" 15 --device "$d" --recipe "$r" \
          --layers 4 --heads 4 --dim 128 --seq 64 --batch 12 --steps 20 --warmup 5 --eval-every 0 \
          --eval-batches 1 --qerr-every 0 --ckpt-every 0 --threads "$(nproc)"
        rc=$?
        [ $rc -eq 0 ] || echo "$d: $(status_of $rc): $(tail -1 "$SCR/match_${r}_$d.err")" >>"$SCR/match_$r.why"
        progress "$r $d $(status_of $rc)"
      done
    done
    line=$("$PY" "$REPORT" agree "$OUTD/agree.txt" "$SCR" fp32 bf16 | tail -1)
    cat "$OUTD/agree.txt"
    result "${line#RESULT }"
    ;;
  determinism)
    # GPT-2 small's widths at a quarter of its depth and half its context: every
    # kernel, the kept statistics and cuBLASLt's algorithms, in seconds
    for r in "${DET_RECIPES[@]}"; do
      for k in a b; do
        qtrain_run "$SCR/det_${r}_$k.h5" "$SCR/det_${r}_$k.err" 30 --device cuda --recipe "$r" \
          --layers 3 --heads 12 --dim 768 --seq 512 --batch 8 --steps 6 --warmup 2 --eval-every 0 \
          --eval-batches 1 --qerr-every 3 --ckpt-every 0 --seed 7
        rc=$?
        progress "$r run $k $(status_of $rc)"
        [ $rc -eq 0 ] || tail -2 "$SCR/det_${r}_$k.err"
      done
    done
    line=$("$PY" "$REPORT" determinism "$OUTD/agree.txt" "$SCR" "${DET_RECIPES[@]}" | tail -1)
    tail -n $((${#DET_RECIPES[@]} + 1)) "$OUTD/agree.txt"
    rm -f "$SCR"/det_*.ckpt.h5*
    result "${line#RESULT }"
    ;;
  train)
    # 12 steps per recipe; if the first run shows that will not fit the time
    # left, fewer (at least 6) for the rest, so every recipe gets a row
    steps=12 left_runs=${#TRAIN_RECIPES[@]}
    for r in "${TRAIN_RECIPES[@]}"; do
      t_run=$(now)
      per=$(((QPDC_END - t_run - 4) / left_runs))
      [ "$per" -gt 40 ] && per=40
      QP_CUDA_PROFILE=1 qtrain_run "$SCR/train_$r.h5" "$SCR/train_$r.err" "$per" --device cuda --recipe "$r" "${GPT2[@]}" \
        --steps "$steps" --warmup 2 --eval-every 0 --eval-batches 1 --qerr-every 0 --ckpt-every 0
      rc=$?
      left_runs=$((left_runs - 1))
      if [ $rc -eq 0 ] && [ "$left_runs" -gt 0 ]; then
        wall=$(($(now) - t_run))
        steps=$("$PY" - "$SCR/train_$r.h5" "$wall" "$steps" "$(((QPDC_END - $(now) - 4) / left_runs))" <<'PYEOF'
import sys, h5py, numpy as np
f, wall, steps, per = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ms = h5py.File(f, "r")["train/step_ms"][:]
step_s = float(np.median(ms)) / 1e3
fixed = max(wall - step_s * steps, 0.0)
print(max(6, min(12, int((per - fixed) / max(step_s, 1e-3)))))
PYEOF
) || steps=12
      fi
      echo $rc >"$SCR/train_$r.rc"
      rm -f "$SCR/train_$r.ckpt.h5" "$SCR/train_$r.ckpt.h5.prev" # 1 GB each: scratch, and gone
      progress "$r $(status_of $rc)"
      tail -2 "$SCR/train_$r.err"
    done
    line=$("$PY" "$REPORT" train "$OUTD/train.txt" "$SCR" 8192 "${TRAIN_RECIPES[@]}" | tail -1)
    cat "$OUTD/train.txt"
    result "${line#RESULT }"
    ;;
  tests)
    : >"$OUTD/tests.txt"
    fails=
    for t in test_cuda_quant test_cublaslt test_cuda_native test_cuda_model_kernels test_cuda_train; do
      if [ ! -x "$QPDC_BIN/$t" ]; then
        st="FAIL (not in the bundle)"
      else
        (cd "$SCR" && libs timeout -k 3 60 "$QPDC_BIN/$t") >"$SCR/$t.out" 2>&1
        st=$(status_of $?)
      fi
      cat "$SCR/$t.out" 2>/dev/null
      echo "$t: $st | $(grep -v '^\s*$' "$SCR/$t.out" 2>/dev/null | tail -1)" >>"$OUTD/tests.txt"
      progress "$t $st"
      [ "$st" = pass ] || fails+="${fails:+; }$t $st"
    done
    mkdir -p "$SCR/devtest"
    libs timeout -k 3 90 "$PY" "${QP_DC_DEVTEST:-$ROOT/tests/kernels/test_qtrain_device.py}" "$QPDC_BIN/qtrain" "$QPDC_DATA" \
      "$SCR/devtest" >"$SCR/test_qtrain_device.out" 2>&1
    rc=$?
    st=$(status_of $rc)
    # without a GPU it tests the exit-2 path and says so: with one, that is a failure
    grep -q "no CUDA device here" "$SCR/test_qtrain_device.out" && st="FAIL (qtrain found no CUDA device)"
    cat "$SCR/test_qtrain_device.out"
    echo "test_qtrain_device: $st | $(tail -1 "$SCR/test_qtrain_device.out")" >>"$OUTD/tests.txt"
    progress "test_qtrain_device $st"
    [ "$st" = pass ] || fails+="${fails:+; }test_qtrain_device $st"
    if [ -n "$fails" ]; then result "FAIL $fails"; else result "PASS 6 GPU tests"; fi
    ;;
  *)
    echo "device_check: unknown section $name"
    exit 2
    ;;
  esac
  exit 0
fi

# ---- the driver -------------------------------------------------------------------------
ONLY= DEADLINE_S=280 OUTD=
while [ $# -gt 0 ]; do
  case $1 in
    --only) ONLY=${2:-}; shift 2 ;;
    --deadline) DEADLINE_S=${2:-}; shift 2 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "device_check: unknown option $1 (see --help)"; exit 2 ;;
    *) OUTD=$1; shift ;;
  esac
done
[[ "$DEADLINE_S" =~ ^[0-9]+$ ]] || { echo "device_check: --deadline needs whole seconds"; exit 2; }
for c in setsid timeout; do command -v $c >/dev/null || { echo "device_check: needs $c"; exit 2; }; done
T0=$(now)
DEADLINE=$((T0 + DEADLINE_S))
OUTD=${OUTD:-${OUT:-/tmp/qp_device_check_out}}
mkdir -p "$OUTD" || { echo "device_check: cannot create $OUTD"; exit 2; }
OUTD=$(readlink -f "$OUTD")
if [ -n "${QP_DC_SCRATCH:-}" ]; then
  SCR=$QP_DC_SCRATCH
elif [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR==2{print $4}')" -gt $((16 * 1024 * 1024)) ]; then
  SCR=/dev/shm/qp_device_check
else
  SCR=/tmp/qp_device_check
fi
mkdir -p "$SCR" && SCR=$(readlink -f "$SCR")
case "$SCR/" in "$OUTD"/*) echo "device_check: the scratch folder $SCR is inside $OUTD"; exit 2 ;; esac
rm -rf "$SCR"/result_* "$SCR"/partial_* "$SCR"/*.h5 "$SCR"/*.err "$SCR"/*.rc "$SCR"/*.why "$SCR"/*.out "$SCR"/devtest
LOG=$OUTD/device_check.log SUM=$OUTD/summary.txt
: >"$LOG"
: >"$SUM"
rm -f "$OUTD"/{gemm,quant,train,agree,tests}.txt
line() { echo "$*" | tee -a "$SUM" | tee -a "$LOG"; }

selected=("${ALL[@]}")
if [ -n "$ONLY" ]; then
  selected=(preflight)
  IFS=, read -r -a want <<<"$ONLY"
  for w in "${want[@]}"; do
    [ -n "${BUDGET[$w]:-}" ] || { echo "device_check: unknown section '$w' (sections: ${ALL[*]})"; exit 2; }
    [ "$w" = preflight ] || selected+=("$w")
  done
fi

gpu=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,power.limit --format=csv,noheader 2>&1)
if [ $? -ne 0 ] || [ -z "$gpu" ]; then
  line "device_check: no GPU: nvidia-smi failed: $(echo "$gpu" | head -1)"
  exit 77
fi
line "device_check: $(echo "$gpu" | head -1); sections: ${selected[*]}; deadline ${DEADLINE_S}s; scratch $SCR"

# Every process of the section's session (the section runs under setsid): a
# hung program and its children end with it.
session_pids() {
  local f rest
  for f in /proc/[0-9]*/stat; do
    { read -r rest <"$f"; } 2>/dev/null || continue
    rest=${rest##*) }
    set -- $rest # state ppid pgrp session ...
    [ "${4:-x}" = "$SID" ] && { f=${f#/proc/}; echo "${f%/stat}"; }
  done
}
kill_session() {
  SID=$1
  local p
  local left
  left=$(session_pids)
  [ -n "$left" ] || return 0
  for p in $left; do kill -TERM "$p" 2>/dev/null; done
  sleep 2
  for p in $(session_pids); do kill -KILL "$p" 2>/dev/null; done
}

npass=0 nfail=0
run_section() {
  local name=$1 t1 left allowed pid timed_out=0 rc status
  t1=$(now)
  left=$((DEADLINE - t1))
  allowed=${BUDGET[$name]}
  [ "$left" -lt "$allowed" ] && allowed=$left
  if [ "$allowed" -lt 3 ]; then
    line "[$name] SKIP: the global deadline (${DEADLINE_S}s) is reached"
    nfail=$((nfail + 1))
    return
  fi
  echo "== [$name] start at $((t1 - T0))s, $allowed s allowed" >>"$LOG"
  QPDC_SCR=$SCR QPDC_OUT=$OUTD QPDC_END=$((t1 + allowed)) setsid bash "$SELF" --section "$name" >>"$LOG" 2>&1 </dev/null &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if [ $(($(now) - t1)) -ge "$allowed" ]; then
      timed_out=1
      break
    fi
    sleep 0.5
  done
  if [ $timed_out = 1 ]; then
    kill_session "$pid"
    wait "$pid" 2>/dev/null
    local why="its ${BUDGET[$name]}s budget"
    [ "$allowed" -lt "${BUDGET[$name]}" ] && why="the global deadline"
    status="TIMEOUT after $(($(now) - t1))s ($why); done so far: $(cat "$SCR/partial_$name" 2>/dev/null | tr '\n' ';')"
    nfail=$((nfail + 1))
  else
    wait "$pid"
    rc=$?
    kill_session "$pid" 2>/dev/null # anything it left behind
    if [ -s "$SCR/result_$name" ]; then
      status=$(head -1 "$SCR/result_$name")
    else
      status="FAIL section ended with exit $rc and no result; so far: $(cat "$SCR/partial_$name" 2>/dev/null | tr '\n' ';')"
    fi
    case $status in PASS*) npass=$((npass + 1)) ;; *) nfail=$((nfail + 1)) ;; esac
    status="${status%% *} ($(($(now) - t1))s): ${status#* }"
  fi
  line "[$name] $status"
}

for s in "${selected[@]}"; do
  run_section "$s"
  if [ "$s" = preflight ]; then
    if ! grep -q '^PASS' "$SCR/result_preflight" 2>/dev/null; then
      line "device_check: preflight failed: nothing else can run"
      break
    fi
    # shellcheck disable=SC1091
    . "$SCR/env.sh"
    export QPDC_BIN QPDC_DATA QPDC_LDP
  fi
done

# OUT_DIR's contract: at most 8 small files of <= 16 MiB each, easy to copy back
if [ "$(stat -c %s "$LOG")" -gt $((15 * 1024 * 1024)) ]; then
  { head -c $((2 * 1024 * 1024)) "$LOG"; echo; echo "... (cut) ..."; tail -c $((12 * 1024 * 1024)) "$LOG"; } >"$LOG.cut" &&
    mv "$LOG.cut" "$LOG"
fi
nfiles=$(find "$OUTD" -mindepth 1 | wc -l)
big=$(find "$OUTD" -type f -size +16M | wc -l)
if [ "$nfiles" -gt 8 ] || [ "$big" -gt 0 ]; then
  line "device_check: FAIL $OUTD holds $nfiles entries ($big over 16 MiB): at most 8 small files come back"
  nfail=$((nfail + 1))
fi
line "device_check: $npass passed, $nfail failed or timed out, $(($(now) - T0))s; OUT: $(cd "$OUTD" && ls | tr '\n' ' ')"
[ "$nfail" -eq 0 ]
