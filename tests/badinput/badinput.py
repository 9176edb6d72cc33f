#!/usr/bin/env python3
"""badinput.py — every tool against bad input, table-style.

    badinput.py TOOL TOOL_PATH WORKDIR [QTRAIN_PATH]

TOOL is qtrain, qerr, qsweep or qplot; QTRAIN_PATH (for qplot and qsweep)
makes the one real run file and checkpoint some cases need. Each row of a
table is (name, argv, files to create, expected exit code, expected
substring of the message). Every case runs in a fresh folder (its working
directory) and must:
  - exit with the expected code (2: bad input, as every tool defines it);
  - print exactly one line on stderr, starting with "TOOL: ", containing
    the expected text, and nothing on stdout;
  - leave the folder as it was: no file created (no half-written --out),
    none changed or removed.
{d} in an argument is the case's folder. Files: NAME -> bytes, str, a
function making the file from its path, or DIR for a folder.
Exit status 1 if any case failed; the failures are listed."""
import hashlib
import os
import shutil
import struct
import subprocess
import sys

TOOL, EXE, WORK = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
QTRAIN = os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 else None
DIR = object()  # a folder, in a case's files

TEXT = ("First Citizen: Before we proceed any further, hear me speak. All: Speak, speak. " * 40).encode()


def shard(tokens, version=1, count=None, magic=20240520):
    h = [magic, version, len(tokens) if count is None else count] + [0] * 253
    return struct.pack("<256i", *h) + struct.pack("<%dH" % len(tokens), *tokens)


def safetensors(header_json, data=b""):
    h = header_json.encode()
    return struct.pack("<Q", len(h)) + h + data


GOOD_ST = safetensors('{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', struct.pack("<4f", 1, 2, 3, 4))


def h5_with(datasets=None, attrs=None):
    """A maker of an HDF5 file holding the given datasets and root attributes."""
    def make(path):
        import h5py
        import numpy as np
        with h5py.File(path, "w") as f:
            for k, v in (datasets or {}).items():
                f.create_dataset(k, data=np.asarray(v))
            for k, v in (attrs or {}).items():
                f.attrs[k] = v
    return make


def truncated_copy(src, keep=0.5):
    def make(path):
        with open(src, "rb") as f:
            b = f.read()
        with open(path, "wb") as f:
            f.write(b[: int(len(b) * keep)])
    return make


def copy_of(src):
    return lambda path: shutil.copyfile(src, path)


# ---- the real files some cases need (made once, with qtrain) ----------------
FIX = os.path.join(WORK, "fixture")
RUN = os.path.join(FIX, "run.h5")
CKPT = os.path.join(FIX, "run.ckpt.h5")


def make_fixture():
    os.makedirs(FIX, exist_ok=True)
    with open(os.path.join(FIX, "corpus.txt"), "wb") as f:
        f.write(TEXT)
    if not QTRAIN:
        return False
    r = subprocess.run([QTRAIN, "--data", os.path.join(FIX, "corpus.txt"), "--layers", "1", "--heads", "1", "--dim",
                        "16", "--seq", "8", "--batch", "2", "--steps", "2", "--eval-every", "1", "--eval-batches", "1",
                        "--ckpt-every", "1", "--qerr-every", "1", "--threads", "1", "--quiet", "--out", RUN],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or not os.path.exists(RUN) or not os.path.exists(CKPT):
        print("fixture: qtrain failed:", r.returncode, r.stderr.strip())
        sys.exit(1)
    return True


# ---- the tables -------------------------------------------------------------
DATA = {"data.txt": TEXT}
SMALL = ["--layers", "1", "--heads", "1", "--dim", "16", "--seq", "8", "--batch", "2", "--steps", "1", "--quiet",
         "--threads", "1"]


def qtrain_cases():
    D = "{d}/data.txt"
    return [
        ("no arguments", [], {}, 2, "--data is required"),
        ("missing data file", ["--data", "nope.txt"], {}, 2, "nope.txt: No such file"),
        ("data is a directory", ["--data", "sub"] + SMALL, {"sub": DIR}, 2, "not a regular file"),
        ("empty data file", ["--data", "e.txt"] + SMALL, {"e.txt": b""}, 2, "too few tokens"),
        ("truncated shard header", ["--data", "t.bin"] + SMALL, {"t.bin": shard(list(range(100)))[:600]}, 2,
         "truncated shard header"),
        ("truncated shard body", ["--data", "t.bin"] + SMALL, {"t.bin": shard(list(range(100)))[:1100]}, 2,
         "truncated shard"),
        ("shard bad version", ["--data", "v.bin"] + SMALL, {"v.bin": shard(list(range(100)), version=7)}, 2,
         "unsupported shard version"),
        ("shard bad magic", ["--data", "m.bin"] + SMALL, {"m.bin": shard(list(range(100)), magic=1)}, 2, "bad magic"),
        ("shard token out of range", ["--data", "r.bin"] + SMALL, {"r.bin": shard([1, 2, 60000] * 40)}, 2,
         "out of range"),
        ("--dim 0", ["--data", D, "--dim", "0"], DATA, 2, "--dim must be"),
        ("--dim -4", ["--data", D, "--dim", "-4"], DATA, 2, "--dim must be"),
        ("--heads 3 --dim 64", ["--data", D, "--heads", "3", "--dim", "64"], DATA, 2, "does not divide"),
        ("--heads 0", ["--data", D, "--heads", "0"], DATA, 2, "--heads must be"),
        ("--layers huge", ["--data", D, "--layers", "99999999999999"], DATA, 2, "--layers expects an integer"),
        ("--seq above the corpus", ["--data", D, "--layers", "1", "--heads", "1", "--dim", "16", "--seq", "100000",
                                    "--batch", "1"], DATA, 2, "longer than"),
        ("--batch 0", ["--data", D, "--batch", "0"], DATA, 2, "--batch must be"),
        ("--batch x --seq huge", ["--data", D, "--batch", "1000000", "--seq", "1000000"], DATA, 2, "too large"),
        ("--steps -1", ["--data", D, "--steps", "-1"], DATA, 2, "--steps must be"),
        ("--grad-accum 0", ["--data", D, "--grad-accum", "0"], DATA, 2, "--grad-accum must be"),
        ("--lr not a number", ["--data", D, "--lr", "fast"], DATA, 2, "--lr expects a number"),
        ("--lr 0", ["--data", D, "--lr", "0"], DATA, 2, "--lr must be"),
        ("--lr inf", ["--data", D, "--lr", "inf"], DATA, 2, "--lr must be"),
        ("--weight-decay nan", ["--data", D, "--weight-decay", "nan"], DATA, 2, "--weight-decay"),
        ("--min-lr nan", ["--data", D, "--min-lr", "nan"], DATA, 2, "--min-lr"),
        ("--val-frac 1.5", ["--data", D, "--val-frac", "1.5"], DATA, 2, "--val-frac"),
        ("--threads 0", ["--data", D, "--threads", "0"], DATA, 2, "--threads expects 'auto' or an integer in 1..1024"),
        ("--threads many", ["--data", D, "--threads", "many"], DATA, 2, "--threads expects 'auto' or an integer"),
        ("--seed negative", ["--data", D, "--seed", "-3"], DATA, 2, "--seed expects"),
        ("--seed with junk", ["--data", D, "--seed", "12abc"], DATA, 2, "--seed expects"),
        ("--tokens-per-param 0", ["--data", D, "--tokens-per-param", "0"], DATA, 2, "--tokens-per-param expects"),
        ("--tokens-per-param junk", ["--data", D, "--tokens-per-param", "lots"], DATA, 2, "--tokens-per-param"),
        ("--steps with --tokens-per-param", ["--data", D, "--steps", "5", "--tokens-per-param", "2"], DATA, 2,
         "not both"),
        ("--data-seed negative", ["--data", D, "--data-seed", "-1"], DATA, 2, "--data-seed expects"),
        ("--val-tokens 0", ["--data", D, "--val-tokens", "0"], DATA, 2, "--val-tokens expects"),
        ("--val-tokens junk", ["--data", D, "--val-tokens", "most"], DATA, 2, "--val-tokens expects"),
        ("unknown recipe", ["--data", D, "--recipe", "nvfp5"], DATA, 2, "nvfp4"),
        ("unknown recipe modifier", ["--data", D, "--recipe", "nvfp4,bf16-last=x"], DATA, 2, "bf16-last"),
        ("recipe rule, unknown format", ["--data", D, "--recipe", "bf16,fprop=nvfp5"], DATA, 2,
         "unknown format 'nvfp5'"),
        ("recipe rule, unknown target", ["--data", D, "--recipe", "bf16,fprp=nvfp4"], DATA, 2,
         "unknown target 'fprp'"),
        ("recipe rule, unknown option", ["--data", D, "--recipe", "bf16,x=nvfp4:stoch"], DATA, 2,
         "unknown option 'stoch'"),
        ("recipe rule, kinds mixed", ["--data", D, "--recipe", "bf16,x+fc=nvfp4"], DATA, 2, "mixes"),
        ("recipe option on a format without it", ["--data", D, "--recipe", "mxfp8,x:delayed"], DATA, 2,
         "per-tensor scale"),
        ("recipe RHT on one operand only", ["--data", D, "--recipe", "nvfp4,wgrad.x=bf16"], DATA, 2,
         "rht=16 on dy but rht=0 on x"),
        ("recipe delayed use without its owner", ["--data", D, "--recipe", "fp8,wgrad.x=fp8-e5m2:delayed"], DATA, 2,
         "owning use"),
        ("recipe block past the model", ["--data", D, "--recipe", "nvfp4,L9=bf16", "--batch", "2", "--seq", "8"], DATA,
         2, "blocks 0..3"),
        ("recipe RHT the shapes refuse", ["--data", D, "--dim", "24", "--heads", "2", "--batch", "2", "--seq",
                                          "8", "--recipe", "bf16,fprop=nvfp4:rht=16"], DATA, 2, "multiple of 16"),
        ("recipe RHT of a size quant/ lacks", ["--data", D, "--recipe", "nvfp4,wgrad:rht=256"], DATA, 2,
         "16, 32, 64, 128"),
        ("recipe RHT with TE's signs on one operand", ["--data", D, "--recipe", "te-nvfp4,wgrad.x:rht=16"], DATA, 2,
         "rht=te on dy but rht=16 on x"),
        ("recipe RHT of two kinds in one rule", ["--data", D, "--recipe", "nvfp4,wgrad:rht=te:rht=16"], DATA, 2,
         "contradicts an earlier one"),
        ("recipe 128-point RHT over 64 dims", ["--data", D, "--dim", "64", "--heads", "2", "--batch", "2",
                                               "--seq", "8", "--recipe", "bf16,fprop=nvfp4:rht=128"], DATA, 2,
         "multiple of 128"),
        ("recipe too long", ["--data", D, "--recipe", "bf16," + ",".join(["x:rn"] * 300)], DATA, 2,
         "--recipe value too long"),
        ("--explain, bad recipe", ["--recipe", "nvfp5", "--explain"], {}, 2, "'nvfp5'"),
        ("--explain, block past --layers", ["--recipe", "nvfp4,L2=bf16", "--layers", "2", "--explain"], {}, 2,
         "blocks 0..1"),
        ("unknown option", ["--data", D, "--frobnicate", "1"], DATA, 2, "unknown option '--frobnicate'"),
        ("stray argument", ["--data", D, "extra"], DATA, 2, "unexpected argument 'extra'"),
        ("missing option value", ["--data", D, "--dim"], DATA, 2, "--dim needs a value"),
        ("--device unknown", ["--data", D, "--device", "tpu"], DATA, 2, "--device must be"),
        ("--eval-only without checkpoint", ["--data", D, "--eval-only"], DATA, 2, "--resume-from"),
        ("--eval-only, checkpoint missing", ["--data", D, "--eval-only", "--resume-from", "c.h5"], DATA, 2,
         "c.h5: cannot open"),
        ("--eval-only, checkpoint is a directory", ["--data", D, "--eval-only", "--resume-from", "sub"],
         dict(DATA, sub=DIR), 2, "sub"),
        ("--eval-only, text as checkpoint", ["--data", D, "--eval-only", "--resume-from", "c.h5"],
         dict(DATA, **{"c.h5": b"not a checkpoint\n"}), 2, "not a whole HDF5 file"),
        ("--eval-only, HDF5 without datasets", ["--data", D, "--eval-only", "--resume-from", "c.h5"],
         dict(DATA, **{"c.h5": h5_with({"x": [1.0, 2.0]})}), 2, "incomplete checkpoint"),
        ("--eval-only, absurd model size", ["--data", D, "--eval-only", "--resume-from", "c.h5"],
         dict(DATA, **{"c.h5": h5_with({}, {"complete": 0, "layers": -4, "heads": 1, "dim": 8, "seq": 8,
                                            "vocab": 256, "seed": 1})}), 2, "not a model size"),
        ("--eval-only, checkpoint of an unknown architecture", ["--data", D, "--eval-only", "--resume-from", "c.h5"],
         dict(DATA, **{"c.h5": h5_with({}, {"complete": 0, "layers": 1, "heads": 1, "dim": 8, "seq": 8, "vocab": 256,
                                            "seed": 1, "arch": "rwkv", "kv_heads": 0,
                                            "mlp_hidden": 0})}), 2, "architecture 'rwkv'"),
        ("--arch unknown", ["--data", D, "--arch", "rwkv"], DATA, 2, "--arch must be gpt or llama, not 'rwkv'"),
        ("--arch missing value", ["--data", D, "--arch"], DATA, 2, "--arch needs a value"),
        ("--kv-heads not dividing --heads", ["--data", D, "--arch", "llama", "--heads", "4", "--dim", "64",
                                              "--kv-heads", "3"], DATA, 2, "--kv-heads 3 does not divide --heads 4"),
        ("--kv-heads 0", ["--data", D, "--arch", "llama", "--kv-heads", "0"], DATA, 2, "--kv-heads expects"),
        ("--kv-heads on the gpt", ["--data", D, "--kv-heads", "2"], DATA, 2, "llama architecture's"),
        ("--mlp-hidden huge", ["--data", D, "--arch", "llama", "--mlp-hidden", "99999999"], DATA, 2,
         "--mlp-hidden expects"),
        ("--mlp-hidden junk", ["--data", D, "--arch", "llama", "--mlp-hidden", "wide"], DATA, 2, "--mlp-hidden expects"),
        ("smooth-swiglu on the gpt", ["--data", D, "--recipe", "fp8,smooth-swiglu", "--batch", "2", "--seq", "8"],
         DATA, 2, "smooth-swiglu scales the input of a SwiGLU block's down GEMM"),
        ("--smooth-swiglu is a recipe modifier now", ["--data", D, "--smooth-swiglu"], DATA, 2, "--smooth-swiglu"),
        ("a gpt GEMM on the llama", ["--data", D, "--arch", "llama", "--recipe", "bf16,fc=fp8-e4m3", "--batch", "2",
                                     "--seq", "8"], DATA, 2, "names GEMM fc, which this model's blocks do not have"),
        ("a llama GEMM on the gpt", ["--data", D, "--recipe", "bf16,down.fprop=fp8-e4m3", "--batch", "2", "--seq",
                                     "8"], DATA, 2, "names GEMM down"),
        ("--explain, a llama GEMM on the gpt", ["--recipe", "bf16,gate=mxfp8", "--explain"], {}, 2, "GEMM gate"),
        ("--arch llama, odd head size", ["--data", D, "--arch", "llama", "--heads", "2", "--dim", "18"], DATA, 2,
         "even head size"),
        ("--inject a gpt tensor into the llama", ["--data", D, "--arch", "llama", "--inject", "nan:grad:fcw@1"], DATA,
         2, "unknown tensor 'fcw'"),
        ("--out under a missing folder", ["--data", D, "--out", "nodir/run.h5"] + SMALL, DATA, 2, "nodir/run.h5"),
        ("--out through a regular file", ["--data", D, "--out", "data.txt/run.h5"] + SMALL, DATA, 2,
         "data.txt/run.h5"),
        ("--out unwritable (/proc)", ["--data", D, "--out", "/proc/qprec-run.h5"] + SMALL, DATA, 2,
         "/proc/qprec-run.h5"),
        ("--out is a directory", ["--data", D, "--out", "sub"] + SMALL, dict(DATA, sub=DIR), 2, "sub"),
        ("existing --out kept on bad input", ["--data", D, "--out", "run.h5", "--dim", "-4"],
         dict(DATA, **{"run.h5": b"an earlier run\n"}), 2, "--dim must be"),
        ("existing --out kept on bad data", ["--data", "e.txt", "--out", "run.h5"] + SMALL,
         {"e.txt": b"", "run.h5": b"an earlier run\n"}, 2, "too few tokens"),
        ("--data through a regular file", ["--data", "data.txt/x"] + SMALL, DATA, 2, "data.txt/x"),
        ("--steps huge", ["--data", D, "--steps", "1e99"], DATA, 2, "--steps expects"),
        ("--val-frac leaves one token", ["--data", "s.txt", "--val-frac", "0.01"] + SMALL, {"s.txt": b"0123456789"},
         2, "too few tokens"),
    ]


def qerr_cases():
    G = {"w.safetensors": GOOD_ST}
    return [
        ("no arguments", [], {}, 2, "no input files"),
        ("missing file", ["nope.safetensors"], {}, 2, "nope.safetensors"),
        ("directory", ["sub"], {"sub": DIR}, 2, "sub"),
        ("empty file", ["e.safetensors"], {"e.safetensors": b""}, 2, "e.safetensors"),
        ("truncated safetensors", ["t.safetensors"], {"t.safetensors": GOOD_ST[:-5]}, 2, "t.safetensors"),
        ("header length absurd", ["h.safetensors"], {"h.safetensors": struct.pack("<Q", 1 << 60) + b"{}"}, 2,
         "h.safetensors"),
        ("text as HDF5", ["t.h5"], {"t.h5": b"just text\n"}, 2, "not an HDF5 file"),
        ("truncated HDF5", ["t.h5"], {"t.h5": lambda p: (h5_with({"w": [[1.0, 2.0]] * 64})(p + ".full"),
                                                         truncated_copy(p + ".full")(p), os.remove(p + ".full"))},
         2, "t.h5"),
        ("unknown format", ["--formats", "fp7", "w.safetensors"], G, 2, "fp7"),
        ("empty format list", ["--formats", "", "w.safetensors"], G, 2, "formats"),
        ("missing option value", ["w.safetensors", "--formats"], G, 2, "needs a value"),
        ("value on a flag", ["--csv=1", "w.safetensors"], G, 2, "takes no value"),
        ("unknown option", ["--frobnicate", "w.safetensors"], G, 2, "unknown option '--frobnicate'"),
        ("--seed not a number", ["--seed", "abc", "w.safetensors"], G, 2, "--seed"),
        ("--seed negative", ["--seed", "-1", "w.safetensors"], G, 2, "--seed"),
        ("--threads 0", ["--threads", "0", "w.safetensors"], G, 2, "--threads"),
        ("--threads huge", ["--threads", "100000", "w.safetensors"], G, 2, "--threads"),
        ("--top negative", ["--top", "-1", "w.safetensors"], G, 2, "--top"),
        ("--sort unknown", ["--sort", "speed", "w.safetensors"], G, 2, "unknown --sort key 'speed'"),
        ("--match bad regex", ["--match", "(", "w.safetensors"], G, 2, "--match"),
        ("--csv with --json", ["--csv", "--json", "w.safetensors"], G, 2, "exclude each other"),
        ("--raw bad spec", ["--raw", "f32:0x4", "r.bin"], {"r.bin": b"\0" * 16}, 2, "r"),
        ("--raw wrong size", ["--raw", "f32:3x3", "r.bin"], {"r.bin": b"\0" * 16}, 2, "r.bin"),
        ("--raw without file", ["--raw", "f32:2x2"], {}, 2, "needs a FILE"),
        ("--h5 under a missing folder", ["--h5", "nodir/o.h5", "w.safetensors"], G, 2, "nodir/o.h5"),
        ("--h5 through a regular file", ["--h5", "w.safetensors/o.h5", "w.safetensors"], G, 2, "o.h5"),
        ("--h5 unwritable (/proc)", ["--h5", "/proc/qprec-o.h5", "w.safetensors"], G, 2, "/proc/qprec-o.h5"),
        ("--h5 is a directory", ["--h5", "sub", "w.safetensors"], dict(G, sub=DIR), 2, "sub"),
        ("existing --h5 kept on bad input", ["--h5", "o.h5", "w.safetensors", "t.safetensors"],
         dict(G, **{"t.safetensors": b"xx", "o.h5": b"an earlier report\n"}), 2, "t.safetensors"),
        ("one bad file among good ones", ["w.safetensors", "t.safetensors", "--h5", "o.h5"],
         dict(G, **{"t.safetensors": GOOD_ST[:20]}), 2, "t.safetensors"),
        ("HDF5 dataset with absurd shape", ["x.h5"],
         {"x.h5": lambda p: __import__("h5py").File(p, "w").create_dataset("w", shape=(1 << 40,), dtype="f4",
                                                                          chunks=(1024,))}, 2, "does not hold"),
    ]


GOOD_INI = "[base]\ndata = data.txt\nlayers = 1\nheads = 1\ndim = 16\nseq = 8\nbatch = 2\nsteps = 1\n" \
           "[grid]\nrecipe = bf16, fp8\n"


def qsweep_cases():
    E = dict(DATA, **{"e.ini": GOOD_INI})
    P = dict(DATA, **{"p.ini": GOOD_INI.split("[grid]")[0] + "[plan]\nbase = nvfp4\nfallback = bf16\ngranularity = block\nbudget = 1\n"
                                         "seeds = 1, 2\nverify_seeds = 3, 4\nmax_runs = 20\n"})
    return [
        ("no arguments", [], {}, 2, "qsweep"),
        ("missing experiment", ["nope.ini", "--out", "s"], {}, 2, "nope.ini"),
        ("experiment is a directory", ["sub", "--out", "s"], {"sub": DIR}, 2, "sub"),
        ("empty experiment", ["x.ini", "--out", "s"], {"x.ini": ""}, 2, "no data"),
        ("binary experiment", ["x.ini", "--out", "s"], {"x.ini": b"[base]\x00\x01\x02"}, 2, "NUL byte"),
        ("unknown key", ["x.ini", "--out", "s"], dict(DATA, **{"x.ini": "[base]\ndata = data.txt\nfoo = 1\n"}), 2,
         "unknown qtrain option 'foo'"),
        ("unknown section", ["x.ini", "--out", "s"], dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[extra]\n"}), 2,
         "unknown section [extra]"),
        ("key before any section", ["x.ini", "--out", "s"], dict(DATA, **{"x.ini": "dim = 3\n"}), 2,
         "before any [section]"),
        ("empty grid axis", ["x.ini", "--out", "s"], dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nseed =\n"}),
         2, "has no values"),
        ("empty grid value", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nseed = 1,,2\n"}), 2, "is empty"),
        ("bad value", ["x.ini", "--out", "s"], dict(DATA, **{"x.ini": "[base]\ndata = data.txt\ndim = -4\n"}), 2,
         "dim expects"),
        ("non-number", ["x.ini", "--out", "s"], dict(DATA, **{"x.ini": "[base]\ndata = data.txt\nlr = fast\n"}), 2,
         "lr expects"),
        ("unknown recipe", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nrecipe = bf16, nvfp5\n"}), 2, "nvfp5"),
        ("recipe rule with an unknown format", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nrecipe = bf16, nvfp4|w=nvfp5\n"}), 2,
         "unknown format 'nvfp5'"),
        ("recipe rule refused as a baseline", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[sweep]\nbaseline = nvfp4|wgrad.x=bf16\n"}), 2,
         "rht=16 on dy"),
        ("reserved key", ["x.ini", "--out", "s"], dict(DATA, **{"x.ini": "[base]\ndata = data.txt\nout = x.h5\n"}), 2,
         "cannot be set"),
        ("data file missing", ["x.ini", "--out", "s"], {"x.ini": "[base]\ndata = nope.txt\n"}, 2, "nope.txt"),
        ("data is a directory", ["x.ini", "--out", "s"], {"x.ini": "[base]\ndata = sub\n", "sub": DIR}, 2,
         "not a regular file"),
        ("bad [sweep] value", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[sweep]\nthreads_per_run = 0\n"}), 2, "threads_per_run"),
        ("no --out", ["e.ini"], E, 2, "--out"),
        ("missing option value", ["e.ini", "--out"], E, 2, "--out"),
        ("unknown option", ["e.ini", "--out", "s", "--frobnicate"], E, 2, "--frobnicate"),
        ("-j 0", ["e.ini", "--out", "s", "-j", "0"], E, 2, "-j"),
        ("-j not a number", ["e.ini", "--out", "s", "-j", "many"], E, 2, "many"),
        ("--data missing", ["e.ini", "--out", "s", "--data", "nope.txt"], E, 2, "nope.txt"),
        ("--qtrain missing", ["e.ini", "--out", "s", "--qtrain", "nope/qtrain"], E, 2, "nope/qtrain"),
        ("--out through a regular file", ["e.ini", "--out", "data.txt/s"], E, 2, "data.txt/s"),
        ("--out unwritable (/proc)", ["e.ini", "--out", "/proc/qprec-sweep"], E, 2, "/proc/qprec-sweep"),
        ("--out is a file", ["e.ini", "--out", "data.txt"], E, 2, "data.txt"),
        ("--plan: --out through a regular file", ["--plan", "p.ini", "--out", "data.txt/s"], P, 2,
         "data.txt/s: Not a directory"),
        ("--plan: --out unwritable (/proc)", ["--plan", "p.ini", "--out", "/proc/qprec-plan"], P, 2,
         "cannot create /proc/qprec-plan"),
        ("duplicate key", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\ndim = 8\ndim = 16\n"}), 2, "set twice"),
        ("line too long", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n# " + "x" * 9000 + "\n"}), 2, "longer than"),
        ("grid too large", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nseed = " + ", ".join(map(str, range(400))) +
                       "\nsteps = " + ", ".join(map(str, range(300))) + "\n"}), 2, "over 100000 runs"),
        ("unknown model size", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nmodel = nano, gigantic\n"}), 2, "preset"),
        ("model with dim", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\ndim = 64\n[grid]\nmodel = nano\n"}), 2, "model sets"),
        ("model count without layers", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nmodel = 100k\n"}), 2, "needs 'layers'"),
        ("exclude of no axis", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nseed = 1, 2\nexclude = lr=3\n"}), 2,
         "not a grid axis"),
        ("exclude of no value", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nseed = 1, 2\nexclude = seed=7\n"}), 2,
         "not a value"),
        ("noise_floor of a recipe not run", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nrecipe = bf16, fp8\n[sweep]\nnoise_floor = nvfp4\n"}),
         2, "noise_floor"),
        ("contrast of no axis", ["x.ini", "--out", "s"], dict(DATA, **{"x.ini": GOOD_INI + "[sweep]\ncontrast = arch\n"}),
         2, "contrast: 'arch' is not a grid axis"),
        ("contrast of the seed axis", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": GOOD_INI + "seed = 1, 2\n[sweep]\ncontrast = seed\n"}), 2, "contrast: 'seed' pairs"),
        ("contrast of the baseline's axis", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": GOOD_INI + "[sweep]\ncontrast = recipe\n"}), 2, "contrast: 'recipe' holds the baseline"),
        ("contrast of a one-value axis", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": GOOD_INI.replace("dim = 16\n", "") + "dim = 16\n[sweep]\ncontrast = dim\n"}), 2,
         "has one value"),
        ("attribution on too many blocks", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\nlayers = 643\n[grid]\nrecipe = bf16, nvfp4, mxfp4\n"
                                "[sweep]\nattribute = blocks\n"}), 2, "block plans"),
        ("contrast on --summarize", ["--summarize", "sub"],
         {"sub": DIR, "sub/qsweep.ini": GOOD_INI + "[sweep]\ncontrast = layers\n"}, 2, "not a grid axis"),
        ("baseline not on the recipe axis", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\n[grid]\nrecipe = fp8, nvfp4\n"}), 2, "baseline"),
        ("existing sweep folder kept on a bad file", ["x.ini", "--out", "s"],
         dict(DATA, **{"x.ini": "[base]\ndata = data.txt\nfoo = 1\n", "s": DIR, "s/qsweep.ini": GOOD_INI}), 2,
         "unknown qtrain option"),
        ("--summarize missing folder", ["--summarize", "nope"], {}, 2, "nope"),
        ("--summarize a broken qsweep.ini", ["--summarize", "sub"], {"sub": DIR, "sub/qsweep.ini": "[base\n"}, 2,
         "section header"),
        ("--summarize an empty folder", ["--summarize", "sub"], {"sub": DIR}, 2, "sub"),
        # Slurm: [slurm], --submit, --status
        ("[slurm] unknown key", ["x.ini", "--out", "s", "--slurm"],
         dict(DATA, **{"x.ini": GOOD_INI + "[slurm]\nqueue = gpu\n"}), 2, "unknown key 'queue' in [slurm]"),
        ("[slurm] key twice", ["x.ini", "--out", "s", "--slurm"],
         dict(DATA, **{"x.ini": GOOD_INI + "[slurm]\ntime = 10\ntime = 20\n"}), 2, "'time' set twice"),
        ("[slurm] bad time", ["x.ini", "--out", "s", "--slurm"],
         dict(DATA, **{"x.ini": GOOD_INI + "[slurm]\ntime = 2 hours\n"}), 2, "time expects Slurm's format"),
        ("[slurm] time with too many fields", ["x.ini", "--out", "s", "--slurm"],
         dict(DATA, **{"x.ini": GOOD_INI + "[slurm]\ntime = 1:2:3:4\n"}), 2, "time expects"),
        ("[slurm] ntasks 0", ["x.ini", "--out", "s", "--slurm"],
         dict(DATA, **{"x.ini": GOOD_INI + "[slurm]\nntasks = 0\n"}), 2, "ntasks expects an integer"),
        ("[slurm] cpus not a number", ["x.ini", "--out", "s", "--slurm"],
         dict(DATA, **{"x.ini": GOOD_INI + "[slurm]\ncpus-per-task = all\n"}), 2, "cpus_per_task expects"),
        ("[slurm] negative gpus", ["x.ini", "--out", "s", "--slurm"],
         dict(DATA, **{"x.ini": GOOD_INI + "[slurm]\ngpus_per_task = -1\n"}), 2, "gpus_per_task expects"),
        ("[slurm] partition with a blank", ["x.ini", "--out", "s", "--slurm"],
         dict(DATA, **{"x.ini": GOOD_INI + "[slurm]\npartition = gpu long\n"}), 2, "partition expects a Slurm name"),
        ("[slurm] account with a quote", ["x.ini", "--out", "s", "--slurm"],
         dict(DATA, **{"x.ini": GOOD_INI + "[slurm]\naccount = o'neil\n"}), 2, "account expects"),
        ("[slurm] empty mpi", ["x.ini", "--out", "s", "--slurm"],
         dict(DATA, **{"x.ini": GOOD_INI + "[slurm]\nmpi =\n"}), 2, "'mpi' has no value"),
        ("unknown device", ["x.ini", "--out", "s"], dict(DATA, **{"x.ini": GOOD_INI.replace("[grid]", "device = gpu\n[grid]")}),
         2, "device must be cpu or cuda, not 'gpu'"),
        ("--submit with --dry-run", ["e.ini", "--out", "s", "--submit", "--dry-run"], E, 2, "--dry-run and --submit"),
        ("--slurm into a folder with a blank", ["e.ini", "--out", "a b", "--slurm"], E, 2, "must not contain blanks"),
        ("--status missing folder", ["--status", "nope"], {}, 2, "nope"),
        ("--status an empty folder", ["--status", "sub"], {"sub": DIR}, 2, "not a qsweep folder"),
        ("--status with an experiment file", ["e.ini", "--status", "s"], E, 2, "--status DIR takes no experiment"),
        ("--status and --summarize", ["--status", "s", "--summarize", "s"], E, 2, "exclude each other"),
        ("--status with a foreign slurm.jobs", ["--status", "sub"],
         {"sub": DIR, "sub/qsweep.ini": GOOD_INI, "sub/slurm.jobs": "JOB 12 is running\n"}, 2, "not a qsweep record"),
        ("--status with a task outside the sweep", ["--status", "sub"],
         {"sub": DIR, "sub/qsweep.ini": GOOD_INI, "sub/slurm.jobs": "12 0-7\n"}, 2, "not a qsweep record"),
    ]


def qplot_cases(have_run):
    R = {"r.h5": copy_of(RUN)} if have_run else {}
    rows = {"train/" + k: [1.0, 2.0] for k in ("step", "loss", "lr", "grad_norm", "step_ms", "data_wait_ms",
                                                "tokens_per_s", "batch_hash")}
    cases = [
        ("no arguments", [], {}, 2, "qplot"),
        ("unknown kind", ["pie", "r.h5", "-o", "f.png"], R, 2, "pie"),
        ("missing run file", ["loss", "nope.h5", "-o", "f.png"], {}, 2, "nope.h5"),
        ("run file is a directory", ["loss", "sub", "-o", "f.png"], {"sub": DIR}, 2, "sub"),
        ("empty run file", ["loss", "e.h5", "-o", "f.png"], {"e.h5": b""}, 2, "e.h5"),
        ("text as run file", ["loss", "t.h5", "-o", "f.png"], {"t.h5": b"text\n"}, 2, "not an HDF5 file"),
        ("HDF5 without the datasets", ["loss", "x.h5", "-o", "f.png"], {"x.h5": h5_with({"x": [1.0]})}, 2,
         "not a qprec run file"),
        ("run file without recipe", ["loss", "x.h5", "-o", "f.png"], {"x.h5": h5_with(rows)}, 2, "recipe"),
        ("run file with 2-D series", ["loss", "x.h5", "-o", "f.png"],
         {"x.h5": h5_with(dict(rows, **{"train/loss": [[1.0, 2.0]]}), {"recipe": "bf16"})}, 2, "1-D"),
        ("a checkpoint as run file", ["loss", "c.h5", "-o", "f.png"], {"c.h5": copy_of(CKPT)} if have_run else {}, 2,
         "c.h5"),
        ("no -o", ["loss", "r.h5"], R, 2, "-o"),
        ("missing option value", ["loss", "r.h5", "-o"], R, 2, "-o"),
        ("unknown option", ["loss", "r.h5", "-o", "f.png", "--frobnicate"], R, 2, "--frobnicate"),
        ("unknown figure format", ["loss", "r.h5", "-o", "f.xyz"], R, 2, "xyz"),
        ("--smooth 1.5", ["loss", "r.h5", "-o", "f.png", "--smooth", "1.5"], R, 2, "--smooth"),
        ("--smooth not a number", ["loss", "r.h5", "-o", "f.png", "--smooth", "abc"], R, 2, "--smooth"),
        ("--interval 0", ["loss", "r.h5", "-o", "f.png", "--interval", "0"], R, 2, "--interval"),
        ("-o under a missing folder", ["loss", "r.h5", "-o", "nodir/f.png"], R, 2, "nodir/f.png"),
        ("-o through a regular file", ["loss", "r.h5", "-o", "r.h5/f.png"], R, 2, "r.h5/f.png"),
        ("-o unwritable (/proc)", ["loss", "r.h5", "-o", "/proc/qprec-f.png"], R, 2, "/proc/qprec-f.png"),
        ("existing figure kept on a bad run file", ["loss", "t.h5", "-o", "f.png"],
         {"t.h5": b"text\n", "f.png": b"an earlier figure"}, 2, "not an HDF5 file"),
        ("existing figure kept on a bad option", ["loss", "r.h5", "-o", "f.png", "--smooth", "2"],
         dict(R, **{"f.png": b"an earlier figure"}), 2, "--smooth"),
        ("all on a missing folder", ["all", "nope"], {}, 2, "nope"),
        ("all on a folder without runs", ["all", "sub"], {"sub": DIR}, 2, "sub"),
    ]
    if not have_run:  # cases needing the real run file are left out without qtrain
        cases = [c for c in cases if not any(a.startswith(("r.h5", "c.h5")) for a in c[1])]
    return cases


# ---- the driver -------------------------------------------------------------
def snapshot(root):
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames:
            snap[os.path.relpath(os.path.join(dirpath, n), root)] = "dir"
        for n in filenames:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as f:
                snap[os.path.relpath(p, root)] = hashlib.sha256(f.read()).hexdigest()
    return snap


def run_case(i, case, failures):
    name, argv, files, want_rc, want_msg = case
    d = os.path.join(WORK, "%s_%02d" % (TOOL, i))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for rel, content in files.items():
        p = os.path.join(d, rel)
        if content is DIR:
            os.makedirs(p, exist_ok=True)
        elif callable(content):
            content(p)
        else:
            with open(p, "wb") as f:
                f.write(content.encode() if isinstance(content, str) else content)
    before = snapshot(d)
    args = [a.replace("{d}", d) for a in argv]
    try:
        r = subprocess.run([EXE] + args, cwd=d, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
    except subprocess.TimeoutExpired:
        failures.append((name, args, "timed out"))
        return
    problems = []
    if r.returncode != want_rc:
        problems.append("exit %d, expected %d" % (r.returncode, want_rc))
    lines = r.stderr.splitlines()
    if len(lines) != 1:
        problems.append("%d lines on stderr, expected 1" % len(lines))
    elif not lines[0].startswith(TOOL + ": "):
        problems.append("stderr does not start with '%s: '" % TOOL)
    if want_msg not in r.stderr:
        problems.append("message lacks '%s'" % want_msg)
    if r.stdout:
        problems.append("output on stdout")
    after = snapshot(d)
    made = sorted(set(after) - set(before))
    changed = sorted(k for k in before if after.get(k) != before[k])
    if made:
        problems.append("left behind: " + ", ".join(made))
    if changed:
        problems.append("changed or removed: " + ", ".join(changed))
    for extra in ("/proc/qprec-run.h5", "/proc/qprec-o.h5", "/proc/qprec-sweep", "/proc/qprec-f.png"):
        if os.path.exists(extra):
            problems.append("created " + extra)
    if problems:
        failures.append((name, args, "; ".join(problems) + "\n      stderr: " + r.stderr.strip().replace("\n", "\n              ")))
    else:
        shutil.rmtree(d, ignore_errors=True)


def main():
    os.makedirs(WORK, exist_ok=True)
    have_run = make_fixture() if TOOL in ("qplot",) else False
    cases = {"qtrain": qtrain_cases, "qerr": qerr_cases, "qsweep": qsweep_cases,
             "qplot": lambda: qplot_cases(have_run)}[TOOL]()
    failures = []
    for i, c in enumerate(cases):
        run_case(i, c, failures)
    for name, args, why in failures:
        print("FAIL %s: %s %s\n      %s" % (TOOL, name, " ".join(args), why))
    print("badinput %s: %d cases, %d passed, %d failed" % (TOOL, len(cases), len(cases) - len(failures),
                                                           len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
