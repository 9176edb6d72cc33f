#!/usr/bin/env bash
# test_baby.sh QTRAIN RECIPE CORPUS OUTDIR — the known result: nanoGPT's CPU
# configuration on character-level Tiny Shakespeare (4 layers, 4 heads, 128
# wide, context 64, batch 12, 2000 iterations, lr 1e-3, no dropout) must reach
# a validation loss <= 1.95 (nanoGPT reports about 1.88). Skips (77) when the
# corpus is not on this machine.
set -euo pipefail
qtrain=$1 recipe=$2 corpus=$3 out=$4
if [ ! -f "$corpus" ]; then echo "test_baby: $corpus not here, SKIP"; exit 77; fi
mkdir -p "$out"
"$qtrain" --data "$corpus" --recipe "$recipe" --out "$out/baby_$recipe.h5" --quiet --qerr-every 0
/usr/bin/python3 - "$out/baby_$recipe.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    val = float(f["eval/val_loss"][-1])
    steps = len(f["train/loss"])
print(f"{sys.argv[1]}: {steps} steps, final val_loss {val:.4f} (need <= 1.95)")
print(f"test_baby: {int(val <= 1.95 and steps == 2000)} passed, {int(not (val <= 1.95 and steps == 2000))} failed")
sys.exit(0 if val <= 1.95 and steps == 2000 else 1)
PY
