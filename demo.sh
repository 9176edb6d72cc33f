#!/usr/bin/env bash
# demo.sh — set up like test.sh, then the main job: the quick study
# (experiments/quick.ini: the 100k-parameter nano GPT trained for 8 tokens per
# parameter under bf16, fp8, nvfp4 and mxfp4, four matched seeds each), ending
# with its table — every recipe's gap to bf16, paired by seed, with its 95%
# interval —, the figures, and the verdict in plain words, computed from the
# intervals (scripts/verdict.py). It prints how long each part took; the
# study itself is a few minutes of 2 cores (docs/performance.md has measured
# times, with their machine and load).
#   ./demo.sh [CORPUS]
# The corpus: the English corpus of the shipped studies (scripts/corpus.py:
# texts from Debian packages, built into data/english/ on the first run), or
# the file you pass.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh

t_all=$SECONDS
qp_install_deps

# The build prints one progress line (make's percentages, every 10%) instead
# of hundreds of compiler lines; its whole output goes to build.log, whose end
# is shown if it fails.
echo "== building build/ (Release; the first build takes several minutes, later ones seconds)"
t0=$SECONDS
set +e
qp_build build 2>&1 | tee build.log | awk '
  BEGIN { printf "   "; last = -10 }
  match($0, /^\[ *[0-9]+%\]/) {
    p = substr($0, RSTART + 1, RLENGTH - 3) + 0
    if (p >= last + 10) { last = p - p % 10; printf " %d%%", p; fflush() }
  }
  END { print "" }'
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  echo "demo.sh: the build failed; the end of build.log:" >&2
  tail -n 25 build.log >&2
  exit 1
fi
echo "   built in $((SECONDS - t0)) s (log: build.log)"

mkdir -p demo-out
corpus=${1:-}
[ -n "$corpus" ] || corpus=$(qp_corpus)
if [ ! -f "$corpus" ]; then echo "demo.sh: $corpus: no such file" >&2; exit 2; fi
# a fresh sweep each time: the time below is the whole study's
rm -rf demo-out/quick
echo "== quick study on $corpus: 4 recipes x 4 seeds, paired gaps with 95% intervals (experiments/quick.ini)"
t0=$SECONDS
# qsweep prints the group table (each recipe's gap to the baseline) when the sweep is done
build/bin/qsweep experiments/quick.ini -j 2 --data "$corpus" --out demo-out/quick
t_study=$((SECONDS - t0))
echo
build/bin/qplot all demo-out/quick
echo "figures: $(ls demo-out/quick/fig/*.png | tr '\n' ' ')(each with .svg and .pdf twins and its data as .csv)"
echo "run files: demo-out/quick/runs/ (schema: docs/runfile.md)"
echo
echo "== verdict (final validation loss, paired by seed, 95% intervals; resolved: the interval excludes 0)"
/usr/bin/python3 scripts/verdict.py demo-out/quick
echo
echo "study $t_study s, demo $((SECONDS - t_all)) s in all (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
