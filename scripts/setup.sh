#!/usr/bin/env bash
# scripts/setup.sh — shared by test.sh and demo.sh: make sure the Debian
# packages qprec needs are installed, then configure and build build/ (Release).
# As root, missing packages are installed with apt-get; otherwise the exact
# apt-get line is printed and the script stops.
set -euo pipefail

QP_PACKAGES=(
  build-essential cmake pkg-config ccache
  libhdf5-dev hdf5-tools        # run logs, checkpoints, qerr --h5; h5dump
  libdnnl-dev                   # oneDNN: the trainer's GEMMs
  libopenmpi-dev openmpi-bin    # data-parallel qtrain (mpirun) and its "mpi" tests
  gnuplot-nox                   # figures
  python3 python3-numpy python3-h5py python3-torch   # independent oracles in tests
  python3-pip                   # ml_dtypes (PyPI, not in Debian 12): the codec cross-check
  python3-venv python3-pandas   # the Python package (pip install ./python into a venv; runfile.load)
  slurm-wlm munge               # qsweep --submit against a real single-node Slurm ("slurm" tests)
  slurmdbd mariadb-server       # Slurm accounting (sacct) on the multi-node test cluster ("cluster" test)
  python3-scipy                 # intervals' reference values, the scaling fit (paper/)
  python3-statsmodels           # Holm / Benjamini-Hochberg reference (multipletests) for the paper's verdicts
  clang libclang-rt-14-dev      # libFuzzer targets
  man-db groff-base             # man -l renders the installed man pages (tests/install)
)

qp_missing_packages() {
  local missing=() p
  local pkgs=("$@")
  [ $# -gt 0 ] || pkgs=("${QP_PACKAGES[@]}")
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  echo "${missing[@]:-}"
}

# paper/build.sh: TeX for the PDF (installed like the rest, as root)
QP_TEX_PACKAGES=(latexmk texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended)

qp_install_deps() {
  local missing
  missing=$(qp_missing_packages "$@")
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "qprec needs these Debian packages; run as root:" >&2
    echo "  apt-get install -y $missing" >&2
    return 1
  fi
  echo "== installing: $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# From PyPI into Debian's python3, which the tests use (Debian 12 packages
# neither): ml_dtypes (the OCP element codecs, independently of CUDA; 0.5.x
# works with Debian's numpy 1.24 and has the FP6/FP4/E8M0 types), and
# transformers (qprec.torch's test converts a Hugging Face GPT-2 and Llama
# built from small configs; 4.44 is the last series whose models run on
# Debian's torch 1.13, and it leaves numpy and torch as Debian has them).
QP_PIP_PACKAGES=("ml_dtypes>=0.5,<0.6" "transformers>=4.40,<4.45")
qp_install_pip_deps() {
  /usr/bin/python3 -c "import ml_dtypes, transformers" 2>/dev/null && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "qprec's tests need ml_dtypes and transformers; run as root:" >&2
    echo "  /usr/bin/python3 -m pip install --break-system-packages ${QP_PIP_PACKAGES[*]@Q}" >&2
    return 1
  fi
  echo "== installing ${QP_PIP_PACKAGES[*]} (PyPI)"
  /usr/bin/python3 -m pip install -q --break-system-packages "${QP_PIP_PACKAGES[@]}"
}

# ccache, where installed, caches compilations across build folders and
# clones (paths taken relative to the checkout), so a rebuild of the same
# sources (test.sh's three builds, a later run) recompiles only what changed.
qp_build() {
  local dir=${1:-build}; shift || true
  local launch=()
  if command -v ccache >/dev/null; then
    export CCACHE_BASEDIR="$PWD"
    launch=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${launch[@]}" "$@" >"$dir.configure.log" 2>&1 || {
    cat "$dir.configure.log" >&2; return 1; }
  cmake --build "$dir" -j"$(nproc)"
}

# The English corpus of the shipped studies (scripts/corpus.py: Debian
# packages' texts, fetched with apt-get download, nothing installed), built
# once into DIR (default data/english) and verified against its pinned
# manifest; prints the corpus path.
qp_corpus() {
  local dir=${1:-data/english}
  if [ -f "$dir/english.txt" ] && /usr/bin/python3 scripts/corpus.py check "$dir" >/dev/null 2>&1; then
    echo "$dir/english.txt"; return 0
  fi
  if ! /usr/bin/python3 scripts/corpus.py build --out "$dir" >&2; then
    # apt-get download needs the package lists
    [ "$(id -u)" -eq 0 ] || exit 1
    apt-get update -qq && /usr/bin/python3 scripts/corpus.py build --out "$dir" >&2 || exit 1
  fi
  echo "$dir/english.txt"
}
