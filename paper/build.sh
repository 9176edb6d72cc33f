#!/usr/bin/env bash
# paper/build.sh — the write-up from generated numbers: runs (or reuses) the
# study sweep, the NVFP4 ablation and the data-pipeline comparison with
# qsweep, draws the figures with qplot, generates every table and number
# (paper/gen_tables.py, from summary.h5 and the run files) and builds
# paper/out/qprec.pdf with latexmk when TeX is installed (else says what to
# install, and leaves the generated sources in paper/out/).
#   paper/build.sh             the full study (hours on 2 cores; resumable)
#   QP_PAPER_QUICK=1 paper/build.sh   the few-minute version (experiments/quick*.ini)
#   QP_SWEEPS=DIR              where the sweeps live (default sweeps/)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
qp_install_deps
qp_build build >/dev/null
sweeps=${QP_SWEEPS:-sweeps}
if [ -n "${QP_PAPER_QUICK:-}" ]; then
  study=experiments/quick.ini ablation=experiments/quick_ablation.ini sweeps=$sweeps/quick
else
  study=experiments/study.ini ablation=experiments/ablation.ini
fi
pipeline=experiments/pipeline.ini
jobs=${QP_JOBS:-2}
status=0
build/bin/qsweep "$study" -j "$jobs" --out "$sweeps/study" || status=$?
build/bin/qsweep "$ablation" -j "$jobs" --out "$sweeps/ablation" || status=$?
# one run at a time: the data-wait measurement should not share the CPU
build/bin/qsweep "$pipeline" -j 1 --out "$sweeps/pipeline" || status=$?
[ "$status" -eq 0 ] || echo "paper/build.sh: some runs failed (see the sweeps' summary.md); building from what finished" >&2
out=paper/out
mkdir -p "$out/generated" "$out/fig"
build/bin/qplot all "$sweeps/study"
cp "$sweeps/study/fig/"*.pdf "$out/fig/"
# the error heatmap of the NVFP4 recipe, seed 1 (what the caption says)
nv=$(ls "$sweeps/study/runs/"*recipe=nvfp4_seed=1*.h5 2>/dev/null | grep -v ckpt | head -1)
[ -n "$nv" ] && build/bin/qplot qerr "$nv" -o "$out/fig/qerr.pdf"
/usr/bin/python3 paper/gen_tables.py --study "$sweeps/study" --ablation "$sweeps/ablation" \
  --pipeline "$sweeps/pipeline" --out "$out/generated"
cp paper/qprec.tex "$out/"
if command -v latexmk >/dev/null && kpsewhich booktabs.sty >/dev/null 2>&1; then
  (cd "$out" && latexmk -pdf -interaction=nonstopmode -halt-on-error qprec.tex >latexmk.log 2>&1) || {
    tail -20 "$out/latexmk.log" >&2; exit 1; }
  echo "paper: $out/qprec.pdf"
else
  echo "paper: sources and generated tables in $out/; to build the PDF install TeX:"
  echo "  apt-get install -y latexmk texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended"
fi
