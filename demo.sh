#!/usr/bin/env bash
# demo.sh — set up like test.sh, then the main job: the quick version of the
# study (experiments/quick.ini: a small GPT trained matched — same weights,
# same batches — under bf16, fp8, fp8-current, mxfp8, nvfp4, nvfp4-naive and
# mxfp4, three seeds each; a few minutes on 2 cores), ending with the summary
# table and the figures.
#   ./demo.sh [CORPUS]
# The corpus: ../shared/data/tinyshakespeare.txt when it is there, else the
# plain-text files of Debian's fortunes package, else the file you pass.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh

qp_install_deps
qp_build build >/dev/null
mkdir -p demo-out
corpus=${1:-}
if [ -z "$corpus" ]; then
  if [ -f ../shared/data/tinyshakespeare.txt ]; then
    corpus=../shared/data/tinyshakespeare.txt
  else
    if [ ! -d /usr/share/games/fortunes ] && [ "$(id -u)" -eq 0 ]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fortunes >/dev/null
    fi
    if [ -d /usr/share/games/fortunes ]; then
      find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' -exec cat {} + > demo-out/fortunes.txt
      corpus=demo-out/fortunes.txt
    else
      echo "demo.sh: no corpus here: pass a text file (./demo.sh FILE)" >&2
      exit 2
    fi
  fi
fi
if [ ! -f "$corpus" ]; then echo "demo.sh: $corpus: no such file" >&2; exit 2; fi
echo "== quick study on $corpus: 7 recipes x 3 seeds (experiments/quick.ini)"
build/bin/qsweep experiments/quick.ini -j 2 --data "$corpus" --out demo-out/quick
echo
cat demo-out/quick/summary.md
echo
build/bin/qplot all demo-out/quick
echo "figures: $(ls demo-out/quick/fig/*.png | tr '\n' ' ')(each with .svg and .pdf twins and its data as .csv)"
echo "summary: demo-out/quick/summary.{md,csv,h5}; run files: demo-out/quick/runs/ (schema: docs/runfile.md)"
