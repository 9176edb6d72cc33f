#!/usr/bin/env bash
# tests/bench/bench_train.sh — training speed side by side in one run:
# bench_train's tables (every recipe in turn step by step, ratios to bf16,
# model FLOP/s against the GEMM ceiling, the phase profile and its cost), then
# bench_llmc.py: qtrain against llm.c's train_gpt2.c (when LLMC_DIR points to
# a checkout of karpathy/llm.c) and against the PyTorch baby model (when
# python3-torch is installed), alternately, and qtrain's memory by sequence
# length. A benchmark: it prints, it asserts nothing.
# usage: [LLMC_DIR=...] tests/bench/bench_train.sh [BUILD_DIR] [CORPUS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
corpus=${2:-$here/../../../shared/data/tinyshakespeare.txt}
if [ ! -f "$corpus" ]; then
  corpus=$(mktemp)
  /usr/bin/python3 -c "import random; random.seed(0); w='the quick brown fox jumps over a lazy dog and cat'.split(); print(' '.join(random.choice(w) for _ in range(200000)))" > "$corpus"
fi
"$build/bin/bench_train" --data "$corpus" --steps 20
echo
configs=baby,longT
[ -n "${LLMC_DIR:-}" ] && configs=small,gpt2,baby,longT
/usr/bin/python3 "$here/bench_llmc.py" --build "$build" --corpus "$corpus" --configs "$configs"
