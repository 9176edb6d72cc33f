#!/usr/bin/env bash
# demo.sh — set up like test.sh, then the main job: the quick study
# (experiments/quick.ini: the 100k-parameter nano GPT trained for 8 tokens per
# parameter under bf16, fp8, nvfp4 and mxfp4, four matched seeds each; about
# four minutes on 2 cores), ending with its summary — every gap paired by
# seed with its 95% interval — and the figures.
#   ./demo.sh [CORPUS]
# The corpus: the English corpus of the shipped studies (scripts/corpus.py:
# texts from Debian packages, built into data/english/ on the first run), or
# the file you pass.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh

qp_install_deps
qp_build build >/dev/null
mkdir -p demo-out
corpus=${1:-}
[ -n "$corpus" ] || corpus=$(qp_corpus)
if [ ! -f "$corpus" ]; then echo "demo.sh: $corpus: no such file" >&2; exit 2; fi
# a fresh sweep each time: the time below is the whole study's
rm -rf demo-out/quick
echo "== quick study on $corpus: 4 recipes x 4 seeds, paired gaps with 95% intervals (experiments/quick.ini)"
t0=$SECONDS
build/bin/qsweep experiments/quick.ini -j 2 --data "$corpus" --out demo-out/quick
echo "qsweep: $((SECONDS - t0)) s"
echo
sed -n '/^## Groups/,$p' demo-out/quick/summary.md
echo
build/bin/qplot all demo-out/quick
echo "figures: $(ls demo-out/quick/fig/*.png | tr '\n' ' ')(each with .svg and .pdf twins and its data as .csv)"
echo "summary: demo-out/quick/summary.{md,csv,h5}; run files: demo-out/quick/runs/ (schema: docs/runfile.md)"
