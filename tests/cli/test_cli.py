#!/usr/bin/env python3
"""test_cli.py — the four tools' command lines agree with each other.

  test_cli.py CASE BUILD_BIN WORK LIBQPREC CMAKE_VERSION

CASE:
  version  one version everywhere: quant/qp_version.h, CMake's project
           version, every tool's --version, the 'version' attribute of a
           run file, qprec.__version__ and the pip version the build backend
           writes
  syntax   --opt value and --opt=value give the same result in every tool; a
           typo'd option names the nearest; a value out of range reads
           "--opt expects ..., not 'x'" in every tool
  man      every tool's --man is a man page (NAME, SYNOPSIS, DESCRIPTION,
           OPTIONS, EXIT STATUS, SEE ALSO) that `man -l` renders, listing
           every option its --help lists; so are build/share/man/man1/TOOL.1
  ini      qsweep: a trailing '# comment' / '; comment', the example of
           docs/qsweep.md as printed, a bare recipe modifier as a grid value
           refused, and options no run could start with refused before any
           run starts (--dry-run included)
  ckpt     qplot leaves checkpoints among its run files out (by the
           checkpoint's marker attribute, whatever the name) with a note, and
           fails when only checkpoints are left
"""
import os
import re
import shutil
import subprocess
import sys

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests"))
from qp_testlib import Checks  # noqa: E402

CASE, BIN, WORK, LIBQPREC, CMAKE_VERSION = sys.argv[1:6]
BIN, WORK = os.path.abspath(BIN), os.path.abspath(WORK)
TOOLS = ["qtrain", "qsweep", "qplot", "qerr"]
check = Checks()


def tool(name):
    return os.path.join(BIN, name)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)


def corpus(d):
    path = os.path.join(d, "corpus.txt")
    with open(path, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 2000)
    return path


TINY = ["--layers", "1", "--heads", "2", "--dim", "16", "--seq", "16", "--batch", "2", "--eval-every", "0",
        "--qerr-every", "0", "--threads", "1", "--quiet"]


def tiny_run(d, extra=()):
    out = os.path.join(d, "run.h5")
    for p in (out, out[:-3] + ".ckpt.h5"):
        if os.path.exists(p):
            os.unlink(p)
    p = run([tool("qtrain"), "--data", corpus(d), *TINY, "--steps", "3", "--out", out, *extra])
    if p.returncode:
        raise SystemExit(f"qtrain: {p.stderr}")
    return out


def case_version():
    text = open(os.path.join(SRC, "quant", "qp_version.h")).read()
    m = re.search(r'^#define QP_VERSION "([0-9]+\.[0-9]+\.[0-9]+)"$', text, re.M)
    check(m is not None, "quant/qp_version.h defines QP_VERSION")
    want = m.group(1)
    check(CMAKE_VERSION == want, f"CMake's project version {CMAKE_VERSION} is qp_version.h's {want}")
    for t in TOOLS:
        p = run([tool(t), "--version"])
        check(p.returncode == 0 and p.stdout == f"{t} {want}\n", f"{t} --version: {p.returncode} {p.stdout!r}")
    import h5py
    with h5py.File(tiny_run(WORK), "r") as f:
        v = f.attrs["version"]
        v = v.decode() if isinstance(v, bytes) else str(v)
        check(v == want, f"the run file's version attribute {v!r}")
        check("schema_version" in f.attrs or any("schema" in k for k in f.attrs), "the run file keeps a schema version")
    env = dict(os.environ, QPREC_LIBRARY=LIBQPREC, PYTHONPATH=os.path.join(SRC, "python"))
    if os.environ.get("QP_ASAN_PRELOAD"):   # a sanitized library: its runtime first; the interpreter's own
        env.update(LD_PRELOAD=os.environ["QP_ASAN_PRELOAD"], ASAN_OPTIONS="detect_leaks=0")  # leaks are not ours
    p = run([sys.executable, "-c", "import qprec; print(qprec.__version__)"], env=env)
    check(p.returncode == 0 and p.stdout.strip() == want, f"qprec.__version__: {p.stdout!r} {p.stderr[-300:]}")
    p = run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import qprec_build; "
             "print(qprec_build._version()); print(qprec_build._metadata().splitlines()[2])",
             os.path.join(SRC, "python", "build_backend")])
    check(p.returncode == 0 and p.stdout.splitlines() == [want, f"Version: {want}"],
          f"the pip version (build backend): {p.stdout!r} {p.stderr[-300:]}")
    print(f"version: {want} everywhere")


def both_forms(name, args_space, args_eq, **kw):
    a, b = run(args_space, **kw), run(args_eq, **kw)
    check((a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr),
          f"{name}: '--opt value' and '--opt=value' differ: {a.returncode} {b.returncode} {a.stderr!r} {b.stderr!r}")
    return a


def case_syntax():
    d = WORK
    os.makedirs(d, exist_ok=True)
    data = corpus(d)
    # --opt value and --opt=value
    p = both_forms("qtrain", [tool("qtrain"), "--explain", "--recipe", "nvfp4,bf16-last=1", "--layers", "3"],
                   [tool("qtrain"), "--explain", "--recipe=nvfp4,bf16-last=1", "--layers=3"])
    check(p.returncode == 0 and "L2" in p.stdout, f"qtrain --explain: {p.returncode} {p.stderr}")
    ini = os.path.join(d, "s.ini")
    with open(ini, "w") as f:
        f.write("[base]\nsteps = 5\n[grid]\nrecipe = bf16, fp8\n")
    out = os.path.join(d, "sweep")
    p = both_forms("qsweep", [tool("qsweep"), ini, "--out", out, "--data", data, "--jobs", "2", "--dry-run"],
                   [tool("qsweep"), ini, "--out=" + out, "--data=" + data, "--jobs=2", "--dry-run"])
    check(p.returncode == 0 and p.stdout.count("--recipe") == 2, f"qsweep --dry-run: {p.returncode} {p.stderr}")
    p = both_forms("qsweep -j", [tool("qsweep"), ini, "--out", out, "--data", data, "-j", "2", "--dry-run"],
                   [tool("qsweep"), ini, "--out", out, "--data", data, "-j2", "--dry-run"])
    check(p.returncode == 0, f"qsweep -j2: {p.stderr}")
    raw = os.path.join(d, "x.bin")
    with open(raw, "wb") as f:
        f.write(bytes(range(64)) * 4)  # 256 bytes: 4 x 16 float32
    p = both_forms("qerr", [tool("qerr"), "--formats", "bf16,nvfp4", "--raw", "f32:4x16", raw, "--json"],
                   [tool("qerr"), "--formats=bf16,nvfp4", "--raw=f32:4x16", raw, "--json"])
    check(p.returncode == 0 and p.stdout.count('"format"') == 2, f"qerr: {p.returncode} {p.stderr}")
    run_h5 = tiny_run(d)
    fig = os.path.join(d, "loss.png")
    p = both_forms("qplot", [tool("qplot"), "loss", run_h5, "-o", fig, "--smooth", "0.5", "--baseline", "bf16"],
                   [tool("qplot"), "loss", run_h5, "--output=" + fig, "--smooth=0.5", "--baseline=bf16"])
    check(p.returncode == 0 and os.path.getsize(fig) > 0, f"qplot: {p.returncode} {p.stderr}")
    # typos name the nearest option
    for t, args, typo, near in [("qtrain", ["--step", "5"], "--step", "--steps"),
                                ("qtrain", ["--grad_accum", "2"], "--grad_accum", "--grad-accum"),
                                ("qtrain", ["--recpie=bf16"], "--recpie", "--recipe"),
                                ("qsweep", [ini, "--dryrun"], "--dryrun", "--dry-run"),
                                ("qsweep", ["--verison"], "--verison", "--version"),
                                ("qplot", ["loss", run_h5, "--smoth", "0.5"], "--smoth", "--smooth"),
                                ("qerr", ["--formts", "bf16", raw], "--formts", "--formats")]:
        p = run([tool(t), *args])
        want = f"{t}: unknown option '{typo}' (did you mean {near}?)\n"
        check(p.returncode == 2 and p.stderr == want, f"{t} {args}: {p.returncode} {p.stderr!r}, want {want!r}")
    for t in TOOLS:
        p = run([tool(t), "--frobnicate"])
        want = f"{t}: unknown option '--frobnicate' (see --help)\n"
        check(p.returncode == 2 and p.stderr == want, f"{t} --frobnicate: {p.stderr!r}")
    # the same range wording in every tool
    for t, args, want in [
            ("qtrain", ["--seed=-1"], "--seed expects an integer >= 0, not '-1'"),
            ("qtrain", ["--threads", "2000"], "--threads expects 'auto' or an integer in 1..1024, not '2000'"),
            ("qtrain", ["--val-frac", "x"], "--val-frac expects a number in (0, 1), not 'x'"),
            ("qsweep", [ini, "--out", out, "--jobs", "0"], "--jobs expects an integer in 1..1024, not '0'"),
            ("qplot", ["loss", run_h5, "-o", fig, "--smooth", "1"], "--smooth expects a number in [0, 1), not '1'"),
            ("qplot", ["loss", run_h5, "-o", fig, "--interval=0"],
             "--interval expects a number in (0, 86400], not '0'"),
            ("qerr", ["--threads", "0", raw], "--threads expects an integer in 1..256, not '0'"),
            ("qerr", ["--top=-1", raw], "--top expects an integer >= 0, not '-1'")]:
        p = run([tool(t), *args])
        check(p.returncode == 2 and p.stderr == f"{t}: {want}\n", f"{t} {args}: {p.returncode} {p.stderr!r}")
    # a flag given a value, an option without its value
    for t in TOOLS:
        p = run([tool(t), "--help=1"])
        check(p.returncode == 2 and p.stderr == f"{t}: --help takes no value (see --help)\n", f"{t}: {p.stderr!r}")
    for t, opt in [("qtrain", "--steps"), ("qsweep", "--out"), ("qplot", "--smooth"), ("qerr", "--formats")]:
        p = run([tool(t), opt])
        check(p.returncode == 2 and p.stderr == f"{t}: {opt} needs a value (see --help)\n", f"{t} {opt}: {p.stderr!r}")
    print("syntax: both forms, typos and ranges agree across the four tools")


def help_options(text):
    """The options --help lists: the long names at the start of its option lines."""
    opts = set()
    for line in text.splitlines():
        m = re.match(r"^  (?:-\w, )?(--[a-z][a-z0-9-]*)", line)
        if m:
            opts.add(m.group(1))
    return opts


def case_man():
    os.makedirs(WORK, exist_ok=True)
    have_man = shutil.which("man") is not None
    built = os.path.join(os.path.dirname(BIN), "share", "man", "man1")
    for t in TOOLS:
        h = run([tool(t), "--help"])
        m = run([tool(t), "--man"])
        check(h.returncode == 0 and m.returncode == 0 and m.stderr == "", f"{t} --help / --man: {m.stderr}")
        page = m.stdout
        check(page.startswith(f".TH {t.upper()} 1 "), f"{t}.1 starts with .TH")
        for sec in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"):
            check(f"\n.SH {sec}\n" in page, f"{t}.1 has {sec}")
        listed = set("--" + o.replace("\\-", "-") for o in re.findall(r"^(?:\\fB\\-\w\\fR, )?\\fB\\-\\-(\S+?)\\fR",
                                                                        page, re.M))
        opts = help_options(h.stdout)
        check(len(opts) >= 8, f"{t} --help lists options: {sorted(opts)}")
        missing = sorted(opts - listed)
        check(not missing and {"--help", "--version", "--man"} <= listed,
              f"{t}.1 lists every option of --help: missing {missing}")
        if have_man:
            path = os.path.join(WORK, f"{t}.1")
            with open(path, "w") as f:
                f.write(page)
            r = run(["man", "-l", path], env={k: v for k, v in dict(os.environ, MANWIDTH="100", PAGER="cat").items() if k != "MAN_KEEP_FORMATTING"})
            check(r.returncode == 0 and "OPTIONS" in r.stdout and "--version" in r.stdout.replace("\u2010", "-"),
                  f"man -l {t}.1: {r.returncode} {r.stderr[-300:]}")
            w = run(["groff", "-man", "-ww", "-z", path]) if shutil.which("groff") else None
            check(w is None or (w.returncode == 0 and w.stderr == ""), f"groff warns on {t}.1: {w and w.stderr}")
        f = os.path.join(built, f"{t}.1")
        check(os.path.exists(f) and open(f).read() == page, f"the build wrote {f} from {t} --man")
    print(f"man: four pages{'' if have_man else ' (man not installed: not rendered)'}")


def sweep(d, text, *args):
    ini = os.path.join(d, "e.ini")
    with open(ini, "w") as f:
        f.write(text)
    out = os.path.join(d, "out")
    shutil.rmtree(out, ignore_errors=True)
    p = run([tool("qsweep"), ini, "--out", out, "--data", os.path.join(d, "corpus.txt"), *args])
    return p, out


def case_ini():
    d = WORK
    os.makedirs(d, exist_ok=True)
    corpus(d)
    # trailing comments, after a blank; a '#' inside a word stays
    p, _ = sweep(d, "; a comment line\n# another\n[base]   # shared\nsteps = 7   # seven\nlr = 0.002\t; tab\n"
                    "[grid] ; axes\nrecipe = bf16, fp8|bf16-last=1   # two recipes\nseed = 1,2 ; two seeds\n",
                 "--dry-run")
    check(p.returncode == 0, f"trailing comments: {p.returncode} {p.stderr}")
    lines = [line for line in p.stdout.splitlines() if "--recipe" in line]
    check(len(lines) == 4 and all("--steps 7 " in line and "--lr 0.002 " in line for line in lines),
          f"the values without their comments: {lines}")
    check(any("--recipe fp8,bf16-last=1 " in line or "--recipe 'fp8,bf16-last=1'" in line for line in lines),
          f"a recipe without its comment: {lines}")
    p, _ = sweep(d, "[base]\nsteps = 7#x\n[grid]\nrecipe = bf16\n", "--dry-run")
    check(p.returncode == 2 and "steps" in p.stderr and "7#x" in p.stderr, f"'#' inside a word: {p.stderr!r}")
    # a typo'd key names the nearest, as a typo'd option does
    p, _ = sweep(d, "[base]\nstpes = 5\n[grid]\nrecipe = bf16\n", "--dry-run")
    check(p.returncode == 2 and p.stderr.endswith("e.ini:2: unknown qtrain option 'stpes' in [base] (did you mean "
                                                  "steps?)\n"), f"a typo'd key: {p.stderr!r}")
    p, _ = sweep(d, "[base]\nsteps = 5\n[grid]\ngrad-acum = 1, 2\n", "--dry-run")
    check(p.returncode == 2 and "(did you mean grad_accum?)" in p.stderr, f"a typo'd axis: {p.stderr!r}")
    # the example of docs/qsweep.md, as printed
    doc = open(os.path.join(SRC, "docs", "qsweep.md")).read()
    m = re.search(r"## The experiment file.*?```ini\n(.*?)```", doc, re.S)
    check(m is not None, "docs/qsweep.md has an example .ini")
    p, _ = sweep(d, m.group(1), "--dry-run")
    check(p.returncode == 0 and p.stdout.count("--recipe") > 10,
          f"docs/qsweep.md's example parses and expands: {p.returncode} {p.stderr}")
    # a bare recipe modifier as a grid value: the recipe cut in two at a comma
    for bad, k in [("bf16, fp8, nvfp4,bf16-last=0", 4), ("nvfp4, bf16-first=2", 2), ("fp8,smooth-swiglu", 2)]:
        p, out = sweep(d, f"[base]\nsteps = 5\n[grid]\nrecipe = {bad}\n", "--dry-run")
        check(p.returncode == 2 and p.stderr.count("\n") == 1 and f"value {k}," in p.stderr and
              "join it to its recipe with '|'" in p.stderr and not os.path.exists(out),
              f"recipe = {bad}: {p.returncode} {p.stderr!r}")
    p, _ = sweep(d, "[base]\nsteps = 5\n[grid]\nrecipe = bf16, nvfp4|bf16-last=0, nvfp4-sr\n", "--dry-run")
    check(p.returncode == 0, f"a joined modifier and a named ablation are recipes: {p.stderr}")
    p, _ = sweep(d, "[base]\nsteps = 5\n[grid]\nrecipe = bf16\n[sweep]\nnoise_floor = bf16, bf16-last=1\n",
                 "--dry-run")
    check(p.returncode == 2 and "noise_floor" in p.stderr, f"noise_floor with a bare modifier: {p.stderr!r}")
    # options no run could start with: refused before any run starts, --dry-run too
    conflict = "[base]\nsteps = 5\ntokens_per_param = 2\n[grid]\nrecipe = bf16, fp8\n"
    for args in (["--dry-run"], ["-j", "2"]):
        p, out = sweep(d, conflict, *args)
        check(p.returncode == 2 and p.stderr.count("\n") == 1 and
              "give --steps or --tokens-per-param, not both" in p.stderr and not os.path.exists(out),
              f"steps with tokens_per_param {args}: {p.returncode} {p.stderr!r}")
    p, out = sweep(d, "[base]\nsteps = 5\nheads = 3\n[grid]\ndim = 24, 32\n", "--dry-run")
    check(p.returncode == 2 and "--heads 3 does not divide --dim 32" in p.stderr, f"heads/dim: {p.stderr!r}")
    p, out = sweep(d, "[base]\nsteps = 5\narch = llama\nheads = 4\n[grid]\nkv_heads = 2, 3\n", "--dry-run")
    check(p.returncode == 2 and "--kv-heads 3 does not divide --heads 4" in p.stderr,
          f"the architecture's own rules: {p.stderr!r}")
    p, out = sweep(d, "[base]\nsteps = 5\nlayers = 2\n[grid]\nrecipe = bf16, bf16|gate=nvfp4\n", "--dry-run")
    check(p.returncode == 2 and p.stderr.count("\n") == 1 and "recipe=bf16+gate=nvfp4" in p.stderr and
          "gate" in p.stderr, f"a recipe naming another architecture's GEMM: {p.stderr!r}")
    p, out = sweep(d, "[base]\nsteps = 5\nlayers = 2\n[grid]\nrecipe = bf16, bf16|L5=fp8-e4m3\n", "--dry-run")
    check(p.returncode == 2 and "recipe=bf16+L5=fp8-e4m3" in p.stderr, f"a block the model lacks: {p.stderr!r}")
    print("ini: comments, the docs' example, bare modifiers, whole-run checks")


def case_ckpt():
    d = WORK
    os.makedirs(d, exist_ok=True)
    run_h5 = tiny_run(d, ["--ckpt-every", "2"])
    ckpt = run_h5[:-3] + ".ckpt.h5"
    check(os.path.exists(ckpt), "qtrain wrote a checkpoint")
    other = os.path.join(d, "renamed.h5")  # a checkpoint by its marker, not by its name
    shutil.copyfile(ckpt, other)
    fig = os.path.join(d, "loss.png")
    p = run([tool("qplot"), "loss", run_h5, ckpt, "-o", fig])
    check(p.returncode == 0 and p.stderr == f"qplot: note: {ckpt} left out: a qtrain checkpoint, not a run file\n" and
          os.path.getsize(fig) > 0, f"qplot loss RUN RUN.ckpt.h5: {p.returncode} {p.stderr!r}")
    os.unlink(fig)
    p = run([tool("qplot"), "loss", ckpt, run_h5, other, "-o", fig])
    check(p.returncode == 0 and p.stderr == f"qplot: note: 2 qtrain checkpoints left out, not run files ({ckpt}, ...)\n"
          and os.path.getsize(fig) > 0, f"two checkpoints, one note: {p.returncode} {p.stderr!r}")
    none = os.path.join(d, "none.png")
    p = run([tool("qplot"), "loss", ckpt, other, "-o", none])
    check(p.returncode == 2 and p.stderr == "qplot: loss: no run file to draw: the files given are each a qtrain "
          "checkpoint\n" and not os.path.exists(none), f"only checkpoints: {p.returncode} {p.stderr!r}")
    p = run([tool("qplot"), "loss", other, "-o", none])
    check(p.returncode == 2 and p.stderr == f"qplot: loss: no run file to draw: {other} is a qtrain checkpoint\n" and
          not os.path.exists(none), f"one checkpoint: {p.returncode} {p.stderr!r}")
    # a file that is neither still fails
    junk = os.path.join(d, "junk.h5")
    import h5py
    with h5py.File(junk, "w") as f:
        f.attrs["x"] = 1
    p = run([tool("qplot"), "loss", run_h5, junk, "-o", fig])
    check(p.returncode == 2 and "junk.h5" in p.stderr, f"a non-run HDF5 file still fails: {p.stderr!r}")
    print("ckpt: checkpoints left out with a note")


def main():
    os.makedirs(WORK, exist_ok=True)
    {"version": case_version, "syntax": case_syntax, "man": case_man, "ini": case_ini, "ckpt": case_ckpt}[CASE]()
    return check.summary(f"test_cli {CASE}")


if __name__ == "__main__":
    sys.exit(main())
