#!/usr/bin/env bash
# scripts/readme_figure.sh — the README's figure, docs/demo.png, from the
# demo's sweep: qplot's loss figure (every recipe's training loss, the mean
# over its seeds with a 95% band, and the last quarter of the steps zoomed,
# where the recipes part) of the runs ./demo.sh wrote.
#   scripts/readme_figure.sh [SWEEPDIR]     (default demo-out/quick)
# Draws into a scratch folder (qplot writes each figure's SVG, PDF and CSV
# twins beside it) and copies the PNG alone into docs/.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-demo-out/quick}
qplot=${QPLOT:-build/bin/qplot}
[ -x "$qplot" ] || { echo "readme_figure.sh: $qplot: not built (./demo.sh builds it)" >&2; exit 2; }
[ -d "$dir/runs" ] || { echo "readme_figure.sh: $dir/runs: no such folder (run ./demo.sh first)" >&2; exit 2; }
runs=()
for f in "$dir"/runs/*.h5; do
  case $f in *.ckpt.h5) ;; *) runs+=("$f") ;; esac  # checkpoints are not run files
done
[ ${#runs[@]} -gt 0 ] || { echo "readme_figure.sh: $dir/runs: no run files" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
QP_PNG_DPI=150 "$qplot" loss "${runs[@]}" -o "$tmp/loss.png"   # a web page: 150 dpi
cp "$tmp/loss.png" docs/demo.png
echo "docs/demo.png: $(stat -c %s docs/demo.png) bytes, from ${#runs[@]} runs in $dir"
