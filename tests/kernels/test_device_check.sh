#!/usr/bin/env bash
# test_device_check.sh — kernels/bench/device_check.sh without a GPU: a stub
# nvidia-smi and a stub bundle (scripts standing in for qtrain, the GPU tests
# and benchmarks, plus one real ELF so the library check has something to
# resolve) run the real script, its sections, its deadline handling and its
# reports (device_report.py on run files the stub qtrain writes with h5py).
# Checks: a summary line per section, printed in section order as each ends;
# a hung program ended by the global deadline (the rest reported as skipped,
# the hung process gone, the call ending on time); at most 8 files in OUT_DIR
# and no run file or checkpoint there; exit 77 of a GPU test after a working
# nvidia-smi is a FAIL; --only; no GPU (exit 77); a missing shared library
# failing the preflight loudly; bad options.
# usage: test_device_check.sh PYTHON CC WORKDIR
set -uo pipefail
PY=$1 CC=$2 W=$3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DC=$ROOT/kernels/bench/device_check.sh
rm -rf "$W" && mkdir -p "$W"
W=$(readlink -f "$W")
failed=0 passed=0
check() { # CONDITION-EXIT-CODE MESSAGE
  if [ "$1" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $2"; fi
}
has() { grep -qE -- "$1" "$2"; echo $?; }

# ---- stubs --------------------------------------------------------------------------------
mkdir -p "$W/path" "$W/stage/bin" "$W/stage/lib"
cat >"$W/path/nvidia-smi" <<'EOF'
#!/bin/sh
[ -n "${STUB_NO_GPU:-}" ] && { echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9; }
echo "NVIDIA H200, 9.0, 580.159.03, 700.00 W"
EOF
# qtrain: a run file and a checkpoint as qtrain writes them (the datasets the reports read)
cat >"$W/stage/bin/qtrain" <<EOF
#!$PY
import os, sys, time
import h5py, numpy as np
a = sys.argv[1:]
opt = {a[i]: a[i + 1] for i in range(len(a) - 1) if a[i].startswith("--")}
out, steps, recipe = opt["--out"], int(opt.get("--steps", 5)), opt.get("--recipe", "fp32")
seed = int(opt.get("--seed", 1337)) + sum(map(ord, recipe))
rng = np.random.default_rng(seed)
loss = 5.5 - 0.05 * np.arange(steps) + 1e-4 * rng.standard_normal(steps)
gpu = opt.get("--device") == "cuda"
with h5py.File(out, "w") as f:
    f.attrs["gemm_path"] = {"bf16": "bf16", "fp32": "fp32", "fp8": "fp8-native", "fp8-current": "fp8-native"}.get(recipe, "emulated-bf16")
    f["train/loss"] = loss
    f["train/grad_norm"] = 1 + loss / 10
    f["train/step_ms"] = np.full(steps, 100.0 if gpu else 40.0)
    f["train/data_wait_ms"] = np.full(steps, 0.5)
    f["train/power_w"] = np.full(steps, 612.0 if gpu else np.nan)
    f["train/batch_hash"] = np.arange(steps, dtype=np.uint64) * 7919
with h5py.File(out[:-3] + ".ckpt.h5", "w") as f:
    f["params"] = rng.standard_normal(1000).astype(np.float32)
    f["adam_m"] = rng.standard_normal(1000).astype(np.float32)
if gpu and os.environ.get("QP_CUDA_PROFILE") == "1":
    print("qtrain: GPU phases (QP_CUDA_PROFILE): 9 steps, 99.00 ms/step: gemm 50.00 (51%), quant 20.00 (20%), "
          "attn 15.00 (15%), rowops 10.00 (10%), optim 3.00 (3%), host 1.00 (1%)", file=sys.stderr)
EOF
stub() { # NAME EXIT [LINES...]
  local n=$1 rc=$2
  shift 2
  {
    echo '#!/bin/sh'
    echo "if [ \"\${STUB_HANG:-}\" = $n ]; then echo \$\$ >>\"\$STUB_PIDS\"; exec sleep 1000; fi"
    for l in "$@"; do printf 'echo "%s"\n' "$l"; done
    echo "exit $rc"
  } >"$W/stage/bin/$n"
}
stub bench_gemm 0 "bench_gemm: NVIDIA H200 (stub)" "" "path                   n         ms    TFLOP/s   vs bf16" \
  "bf16                 4096      0.200      687.2     1.00x" "fp8 e4m3             4096      0.110     1249.4     1.82x" \
  "fp8 e4m3 +amax_D     4096      0.112     1227.1     1.79x" "bf16                 8192      1.450      758.3     1.00x" \
  "fp8 e4m3             8192      0.800     1374.4     1.81x" "fp8 e4m3 +amax_D     8192      0.810     1357.4     1.79x"
stub bench_cuda_quant 0 "bench_cuda_quant: NVIDIA H200 (stub)" \
  "kernel                                   ms       GB/s  of memcpy" \
  "cudaMemcpy D2D                        0.125     4294.9       100%" \
  "quantize fp8-e4m3 (current)           0.140     2396.7        56%" \
  "quantize mxfp8                        0.110     3050.1        71%" \
  "quantize nvfp4 (current)              0.150     2147.5        50%" \
  "rht16 (in place)                      0.160     3355.4        78%"
stub test_cuda_quant 0 "test_cuda_quant: 1200 passed, 0 failed"
stub test_cublaslt 77 "test_cublaslt: no CUDA device (cudaErrorNoDevice), SKIP"
stub test_cuda_native 0 "test_cuda_native: 12 passed, 0 failed"
stub test_cuda_model_kernels 0 "test_cuda_model_kernels: 140 passed, 0 failed"
stub test_cuda_train 0 "test_cuda_train: 300 passed, 0 failed"
chmod +x "$W"/stage/bin/* "$W/path/nvidia-smi"
# one real ELF (the library check needs one), and its own shared library
printf 'int qp_probe(void) { return 7; }\n' >"$W/probe_lib.c"
printf 'int qp_probe(void);\nint main(void) { return qp_probe() == 7 ? 0 : 1; }\n' >"$W/probe.c"
"$CC" -shared -fPIC -o "$W/stage/lib/libqpprobe.so" "$W/probe_lib.c" &&
  "$CC" -o "$W/stage/bin/probe" "$W/probe.c" -L"$W/stage/lib" -lqpprobe
check $? "building the ELF probe with $CC"
echo "the quick brown fox" >"$W/stage/data.txt"
echo "stub bundle for test_device_check" >"$W/stage/BUILD_INFO"
tar -C "$W/stage" -cJf "$W/bundle.tar.xz" BUILD_INFO bin lib data.txt
cat >"$W/torch.py" <<'EOF'
print("bench_torch_gemm: stub")
print("torch.matmul bf16                4096      0.190      723.4")
print("torch._scaled_mm e4m3            4096      0.105     1309.0")
print("torch.matmul bf16                8192      1.400      785.4")
print("torch._scaled_mm e4m3            8192      0.790     1391.8")
EOF
printf 'print("ok")\n' >"$W/devtest.py"

run_dc() { # NAME ARGS... : runs device_check into $W/NAME (out, scratch, stdout, rc, seconds)
  local n=$1
  shift
  mkdir -p "$W/$n"
  local t0
  t0=$(date +%s)
  PATH="$W/path:$PATH" QP_PYTHON=$PY QP_DC_BUNDLE=$W/bundle.tar.xz QP_DC_TORCH_GEMM=$W/torch.py \
    QP_DC_DEVTEST=$W/devtest.py QP_DC_SCRATCH=$W/$n/scratch STUB_PIDS=$W/$n/pids \
    bash "$DC" "$@" "$W/$n/out" >"$W/$n/stdout" 2>&1
  echo $? >"$W/$n/rc"
  echo $(($(date +%s) - t0)) >"$W/$n/secs"
}
SECTIONS="preflight gemm quant agree determinism train tests"

# ---- A: the whole check; test_cublaslt exits 77 with a GPU present -----------------------------
run_dc full
A=$W/full
check $([ "$(cat "$A/rc")" = 1 ]; echo $?) "full run: exit $(cat "$A/rc"), want 1 (a FAIL)"
order=$(grep -oE '^\[[a-z]+\]' "$A/stdout" | tr -d '[]' | tr '\n' ' ')
check $([ "$order" = "$SECTIONS " ]; echo $?) "full run: summary lines in order: '$order'"
for s in preflight gemm quant agree determinism train; do
  check "$(has "^\[$s\] PASS \([0-9]+s\): " "$A/stdout")" "full run: no PASS line for $s"
  check "$(has "^\[$s\] PASS" "$A/out/summary.txt")" "full run: summary.txt lacks $s"
done
check "$(has '^\[tests\] FAIL .*test_cublaslt FAIL \(exit 77: skipped, yet nvidia-smi shows a GPU\)' "$A/stdout")" \
  "full run: test_cublaslt's exit 77 is not a FAIL"
check "$(has '^\[gemm\] PASS .*bf16 758 TFLOP/s \(97% of torch\), fp8 1374 \(1.81x bf16, 99% of torch\)' "$A/stdout")" \
  "full run: the gemm line lacks the side-by-side numbers"
check "$(has '^\[agree\] PASS .*fp32 0.0e\+00, bf16 0.0e\+00' "$A/stdout")" "full run: agree line"
check "$(has '^\[determinism\] PASS .*fp8 bit-identical; nvfp4 bit-identical' "$A/stdout")" "full run: determinism line"
check "$(has '^nvfp4 +emulated-bf16 +81920 +100.0 +1.00x +612' "$A/out/train.txt")" "full run: train table row"
check "$(has 'gemm 50.0, quant 20.0, attn 15.0, rowops 10.0' "$A/out/train.txt")" "full run: phase split in the train table"
check "$(has 'worst per-tensor/MX 56% .*NOT met.*worst NVFP4/RHT 50%' "$A/stdout")" "full run: quant targets"
n=$(find "$A/out" -mindepth 1 | wc -l)
check $([ "$n" -le 8 ]; echo $?) "full run: $n entries in OUT (at most 8)"
check $([ -z "$(find "$A/out" -name '*.h5*')" ]; echo $?) "full run: run files or checkpoints in OUT"
check $([ -n "$(find "$A/scratch" -name 'train_*.h5')" ]; echo $?) "full run: the run files are not in the scratch"
check "$(has 'device_check: 6 passed, 1 failed' "$A/stdout")" "full run: the final count"

# ---- B: a hung program: the global deadline ends it and the call -----------------------------
STUB_HANG=bench_cuda_quant run_dc hang --deadline 20
B=$W/hang
check $([ "$(cat "$B/secs")" -le 32 ]; echo $?) "hang: took $(cat "$B/secs")s with a 20s deadline"
check $([ "$(cat "$B/rc")" = 1 ]; echo $?) "hang: exit $(cat "$B/rc"), want 1"
check "$(has '^\[quant\] TIMEOUT after [0-9]+s \(the global deadline\)' "$B/stdout")" "hang: quant not ended by the deadline"
for s in agree determinism train tests; do
  check "$(has "^\[$s\] SKIP: the global deadline" "$B/stdout")" "hang: no SKIP line for $s"
done
order=$(grep -oE '^\[[a-z]+\]' "$B/stdout" | tr -d '[]' | tr '\n' ' ')
check $([ "$order" = "$SECTIONS " ]; echo $?) "hang: a line per section: '$order'"
for p in $(cat "$B/pids" 2>/dev/null); do
  kill -0 "$p" 2>/dev/null && { check 1 "hang: the hung program $p outlived its section"; kill "$p"; }
done
check $([ -s "$B/pids" ]; echo $?) "hang: the stub never hung (no pid recorded)"

# ---- C: --only reruns one section (after the preflight) -------------------------------------
run_dc only --only gemm
order=$(grep -oE '^\[[a-z]+\]' "$W/only/stdout" | tr -d '[]' | tr '\n' ' ')
check $([ "$order" = "preflight gemm " ]; echo $?) "--only gemm ran: '$order'"
check $([ "$(cat "$W/only/rc")" = 0 ]; echo $?) "--only gemm: exit $(cat "$W/only/rc")"

# ---- D: no GPU: exit 77 and nothing else -----------------------------------------------------
STUB_NO_GPU=1 run_dc nogpu
check $([ "$(cat "$W/nogpu/rc")" = 77 ]; echo $?) "no GPU: exit $(cat "$W/nogpu/rc"), want 77"
check "$(has 'no GPU: nvidia-smi failed' "$W/nogpu/stdout")" "no GPU: message"
check $(! grep -q '^\[' "$W/nogpu/stdout"; echo $?) "no GPU: sections ran"

# ---- E: a library the machine lacks fails the preflight loudly -------------------------------
mv "$W/stage/lib/libqpprobe.so" "$W/libqpprobe.so.away"
tar -C "$W/stage" -cJf "$W/bundle.tar.xz" BUILD_INFO bin lib data.txt
run_dc nolib
check $([ "$(cat "$W/nolib/rc")" = 1 ]; echo $?) "missing library: exit $(cat "$W/nolib/rc"), want 1"
check "$(has '^\[preflight\] FAIL .*libraries not found: probe: libqpprobe.so' "$W/nolib/stdout")" \
  "missing library: no loud preflight failure"
check $(! grep -q '^\[gemm\]' "$W/nolib/stdout"; echo $?) "missing library: later sections ran"

# ---- F: bad options ----------------------------------------------------------------------------
run_dc badopt --only nosuch
check $([ "$(cat "$W/badopt/rc")" = 2 ]; echo $?) "--only nosuch: exit $(cat "$W/badopt/rc"), want 2"

echo "test_device_check: $passed passed, $failed failed"
if [ $failed -ne 0 ]; then
  for d in full hang; do echo "---- $d stdout"; cat "$W/$d/stdout"; done
fi
[ $failed -eq 0 ]
