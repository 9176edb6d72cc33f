#!/usr/bin/env bash
# demo.sh — set up like test.sh, then the main job: nanoGPT's baby Shakespeare
# model trained matched (same seed, weights and batches) under bf16, fp8 and
# nvfp4, final validation losses side by side; then a qerr report of the
# trained weights in every format.
#   ./demo.sh [CORPUS]        (DEMO_STEPS=N for a shorter run; default 2000)
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh

qp_install_deps
qp_build build >/dev/null

corpus=${1:-../shared/data/tinyshakespeare.txt}
if [ ! -f "$corpus" ]; then
  if [ -d /usr/share/games/fortunes ]; then
    mkdir -p demo-out
    cat /usr/share/games/fortunes/*[!.dat] 2>/dev/null > demo-out/fortunes.txt || true
    corpus=demo-out/fortunes.txt
  else
    echo "demo.sh: no corpus: pass a text file (./demo.sh FILE)" >&2
    exit 2
  fi
fi
steps=${DEMO_STEPS:-2000}
mkdir -p demo-out
echo "== training the baby model on $corpus for $steps steps under bf16, fp8, nvfp4 (2 threads)"
for recipe in bf16 fp8 nvfp4; do
  rm -f "demo-out/$recipe.h5" "demo-out/$recipe.ckpt.h5"
  build/bin/qtrain --data "$corpus" --recipe "$recipe" --steps "$steps" --out "demo-out/$recipe.h5" \
    --qerr-every 100 --quiet
done
echo
/usr/bin/python3 - demo-out <<'PY'
import sys, h5py
print(f"{'recipe':8s} {'val_loss':>9s} {'gap vs bf16':>12s} {'ms/step':>8s} {'recalib events':>15s}")
base = None
for r in ["bf16", "fp8", "nvfp4"]:
    with h5py.File(f"{sys.argv[1]}/{r}.h5", "r") as f:
        v = float(f["eval/val_loss"][-1])
        ms = float(sorted(f["train/step_ms"][:])[len(f["train/step_ms"]) // 2])
        ev = len(f["events/recalib"])
    base = v if base is None else base
    print(f"{r:8s} {v:9.4f} {100 * (v - base) / base:+11.2f}% {ms:8.1f} {ev:15d}")
PY
echo
echo "== quantization error of the trained bf16 weights (qerr on the checkpoint)"
build/bin/qerr --summary --formats fp8-e4m3,mxfp8,mxfp4,nvfp4,nvfp4-2d --match '^/params/(qkvw|attprojw|fcw|fcprojw)$' \
  demo-out/bf16.ckpt.h5
echo
echo "run files: demo-out/{bf16,fp8,nvfp4}.h5 (schema: docs/runfile.md)"
