#!/usr/bin/env bash
# tests/bench/bench_train.sh — training speed side by side in one run:
# bench_train's table (ms/step, GEMM GFLOP/s per recipe, two configurations)
# and, when python3-torch is installed, the same baby model in PyTorch, run
# alternately three times so both see the same machine; prints the medians
# and the ratio. A benchmark: it prints, it asserts nothing.
# usage: tests/bench/bench_train.sh [BUILD_DIR] [CORPUS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
corpus=${2:-$here/../../../shared/data/tinyshakespeare.txt}
if [ ! -f "$corpus" ]; then
  corpus=$(mktemp)
  /usr/bin/python3 -c "import random; random.seed(0); w='the quick brown fox jumps over a lazy dog and cat'.split(); print(' '.join(random.choice(w) for _ in range(200000)))" > "$corpus"
fi
"$build/bin/bench_train" --data "$corpus" --steps 20
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo
  echo "side by side, nanoGPT baby configuration, bf16 (qprec) vs PyTorch fp32, 2 threads, medians of 20 steps:"
  q=(); t=()
  for i in 1 2 3; do
    q+=("$("$build/bin/bench_train" --data "$corpus" --steps 20 --recipes bf16 | awk '/^bf16/{print $2; exit}')")
    t+=("$(/usr/bin/python3 "$here/nanogpt_torch.py" 20 2 | awk '{print $3}')")
  done
  printf '%s\n' "${q[@]}" | sort -g | sed -n 2p > /tmp/.qp_q
  printf '%s\n' "${t[@]}" | sort -g | sed -n 2p > /tmp/.qp_t
  qm=$(cat /tmp/.qp_q); tm=$(cat /tmp/.qp_t)
  echo "  qprec bf16 runs: ${q[*]} ms/step  -> median $qm"
  echo "  PyTorch runs:    ${t[*]} ms/step  -> median $tm"
  awk -v q="$qm" -v t="$tm" 'BEGIN{printf "  qprec bf16 is %.1fx faster per step than PyTorch here\n", t/q}'
  echo "  llm.c train_gpt2.c on its small configuration: ~970 ms/step on this machine kind (figure from the issue, not re-measured here)"
fi
