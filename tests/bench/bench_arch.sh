#!/usr/bin/env bash
# tests/bench/bench_arch.sh — the Llama (--arch llama) beside the GPT at
# nanoGPT's baby Shakespeare size (4 layers, 4 heads, 128 wide, context 64,
# batch 12, lr 1e-3, 2000 steps, bf16), one after the other:
#   1. step time: bench_train with both architectures in turn step by step
#      (medians, the Llama's ratio to the GPT's; the phase split);
#   2. the known result: a whole qtrain run of each (bf16, --qerr-every 0):
#      final validation loss, the median of the run's step times, and the
#      ratio of those medians (the runs follow each other, so a machine whose
#      load changes between them skews this one; part 1 is the matched one).
# A benchmark: it prints tables and asserts nothing (the val-loss bound is the
# long test train_baby_shakespeare_llama_bf16's).
# usage: tests/bench/bench_arch.sh [BUILD_DIR] [CORPUS] [STEPS] [BENCH_STEPS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
corpus=${2:-$here/../../../shared/data/tinyshakespeare.txt}
steps=${3:-2000}
bench_steps=${4:-100}
if [ ! -f "$corpus" ]; then echo "bench_arch: $corpus not here (the known result needs Tiny Shakespeare)"; exit 2; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "bench_arch: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
"$build/bin/bench_train" --data "$corpus" --steps "$bench_steps" --recipes bf16 --archs gpt,llama --configs baby \
  | grep -v "^phase profile\|^  nanoGPT baby.*on .* off"
echo
for arch in gpt llama; do
  "$build/bin/qtrain" --data "$corpus" --arch "$arch" --recipe bf16 --steps "$steps" --qerr-every 0 --quiet \
    --out "$out/baby_$arch.h5"
done
/usr/bin/python3 - "$out" "$steps" <<'PY'
import sys, h5py, numpy as np
out, steps = sys.argv[1], int(sys.argv[2])
rows = {}
for arch in ("gpt", "llama"):
    with h5py.File(f"{out}/baby_{arch}.h5", "r") as f:
        rows[arch] = (float(f["eval/val_loss"][-1]), float(f["train/loss"][-1]), float(np.median(f["train/step_ms"][:])),
                      int(f.attrs["num_params"]), f.attrs["mlp_hidden"])
print(f"qtrain, {steps} steps each, bf16, one after the other:")
print(f"{'arch':<7}{'params':>9}{'MLP width':>11}{'val loss':>10}{'train loss':>12}{'median ms/step':>16}{'x gpt':>8}")
for arch, (val, tr, ms, n, h) in rows.items():
    print(f"{arch:<7}{n:>9}{('4C' if arch == 'gpt' else h):>11}{val:>10.4f}{tr:>12.4f}{ms:>16.1f}{ms / rows['gpt'][2]:>8.2f}")
print(f"llama val loss - gpt val loss: {rows['llama'][0] - rows['gpt'][0]:+.4f} (target: <= +0.03, the Llama within 0.03 of the GPT)")
PY
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
