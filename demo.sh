#!/usr/bin/env bash
# demo.sh — set up like test.sh, then the main job: a qerr report, per format,
# on a demo tensor file (a small GPT's weights, activations with outlier
# channels, heavy-tailed gradients) generated with a fixed seed.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh

qp_install_deps
qp_build build >/dev/null
mkdir -p demo-out
/usr/bin/python3 tools/gen_demo_tensors.py --out demo-out/demo.safetensors --seed 0
echo "== per-tensor error of the demo tensors (build/bin/qerr)"
build/bin/qerr --formats bf16,fp8-e4m3,mxfp8,mxfp4,nvfp4,nvfp4-2d --rht --sort rel_l2 --top 20 \
  --h5 demo-out/qerr.h5 demo-out/demo.safetensors
echo
echo "== summary per format"
build/bin/qerr --summary --formats bf16,fp8-e4m3,mxfp8,mxfp4,nvfp4,nvfp4-2d --rht demo-out/demo.safetensors
echo
echo "full table: demo-out/qerr.h5 (h5dump demo-out/qerr.h5)"
