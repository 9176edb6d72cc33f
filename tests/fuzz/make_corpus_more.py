#!/usr/bin/python3
"""make_corpus_more.py -- write the seed corpora of fuzz_experiment,
fuzz_shard, fuzz_h5 and fuzz_args (next to this file). Rerun after changing
the list; commit the output.

fuzz_h5 inputs are descriptions, not HDF5 bytes (see fuzz_h5.c): a dataset
count, then per dataset (name, type, space, layout, write, crc[, dims...]),
an attribute count, per attribute (name, kind, value), then the cut byte.
"""
import glob
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def put(target, name, data):
    d = os.path.join(HERE, "corpus_" + target)
    os.makedirs(d, exist_ok=True)
    os.makedirs(os.path.join(HERE, "crashes_" + target), exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- experiment files
for p in sorted(glob.glob(os.path.join(ROOT, "experiments", "*.ini"))):
    with open(p, "rb") as f:
        put("experiment", os.path.basename(p), f.read())
put("experiment", "grid_recipes.ini",
    "[base]\ndata = corpus.txt\nsteps = 10\n[grid]\nrecipe = bf16, nvfp4|bf16-last=0, fp8\nseed = 1, 2\n"
    "[sweep]\nbaseline = bf16\ntarget_loss = 2.5\nthreads_per_run = 2\n")
put("experiment", "dash_keys.ini", "[base]\ndata=/abs/x.bin\ngrad-accum = 2\nmin_lr=1e-5\n[grid]\nlr = 1e-3,3e-4\n")
put("experiment", "bad_key.ini", "[base]\ndata = x\nfoo = 1\n")
put("experiment", "empty_grid.ini", "[base]\ndata = x\n[grid]\nseed =\n")
put("experiment", "no_data.ini", "[grid]\nrecipe = bf16\n")
put("experiment", "grid_rules.ini",
    "[base]\ndata = corpus.txt\nlayers = 4\n[grid]\nrecipe = bf16, nvfp4|bf16-last=0|~L0=bf16, fp8-current|w=nvfp4, "
    "bf16|fprop.x+w=nvfp4:sr\n[sweep]\nbaseline = bf16\n")
put("experiment", "slurm.ini",
    "[base]\ndata = corpus.txt\ndevice = cuda\n[grid]\nseed = 1, 2\n[slurm]\npartition = gpu,long\naccount = p-1\n"
    "time = 1-02:30:00\ncpus-per-task = 4\ngpus_per_task = 0\nntasks = 2\nmpi = pmix\n")

# ---- token shards and byte files
MAGIC = 20240520


def shard(tokens, version=1, count=None):
    h = [MAGIC, version, len(tokens) if count is None else count] + [0] * 253
    return struct.pack("<256i", *h) + struct.pack("<%dH" % len(tokens), *tokens)


put("shard", "ok_100", shard([(i * 37) % 50257 for i in range(100)]))
put("shard", "ok_4", shard([1, 2, 3, 50256]))
put("shard", "bad_version", shard([1, 2, 3, 4], version=2))
put("shard", "count_mismatch", shard([1, 2, 3, 4], count=9))
put("shard", "negative_count", shard([1, 2], count=-1))
put("shard", "token_range", shard([1, 2, 50257, 4, 5, 6]))
put("shard", "truncated_header", shard([1, 2])[:700])
put("shard", "text", "First Citizen:\nBefore we proceed any further, hear me speak.\n")
put("shard", "magic_only", struct.pack("<i", MAGIC))


# ---- HDF5 descriptions
def ds(name, typ, space, layout=0, write=1, crc=0, dims=()):
    return bytes([name, typ, space, layout, write, crc] + list(dims))


def desc(dsets, attrs, cut=0):
    return bytes([len(dsets)]) + b"".join(dsets) + bytes([len(attrs)]) + b"".join(bytes(a) for a in attrs) + bytes([cut])


ckpt = desc([ds(0, 0, 10, 0, 1, 0, (4, 5)), ds(2, 0, 2, 1, 1, 0, (6,))], [(0, 0, 0), (1, 0, 5), (8, 5, 3)])
put("h5", "ckpt_ok", ckpt)
put("h5", "ckpt_torn", ckpt[:-1] + bytes([250]))
put("h5", "ckpt_bad_crc", desc([ds(0, 0, 10, 0, 1, 3, (4, 5))], [(0, 0, 0)]))
put("h5", "ckpt_crc_array", desc([ds(0, 0, 2, 0, 1, 5, (3,))], [(0, 0, 0), (1, 2, 5), (8, 7, 1)]))
put("h5", "ckpt_huge_unwritten", desc([ds(0, 0, 2, 0, 0, 0, (8,)), ds(1, 0, 2, 1, 0, 0, (9,))], [(0, 0, 0)]))
put("h5", "ckpt_wrong_types", desc([ds(0, 7, 2, 0, 1, 0, (5,)), ds(3, 9, 0, 0, 1, 6)], [(0, 4, 0), (1, 9, 3), (2, 10, 1)]))
put("h5", "tensors_mixed", desc([ds(3, 3, 10, 0, 1, 4, (2, 3)), ds(17, 4, 2, 1, 1, 4, (5,)), ds(1, 5, 0, 0, 1, 4),
                                 ds(2, 2, 1, 0, 1, 4), ds(0, 1, 7, 0, 1, 4, (1, 1, 1, 1, 1, 1, 1, 1, 2))], []))
run = [ds(4, 7, 2, 0, 1, 4, (4,))] + [ds(n, 2, 2, 0, 1, 4, (4,)) for n in (5, 6, 7, 8, 9, 10)] + \
      [ds(11, 7, 2, 0, 1, 4, (4,)), ds(12, 7, 2, 0, 1, 4, (2,)), ds(13, 2, 2, 0, 1, 4, (2,)),
       ds(14, 11, 2, 1, 1, 4, (3,)), ds(16, 12, 2, 0, 1, 4, (2,))]
put("h5", "run_ok", desc(run, [(8, 5, 3), (6, 0, 10), (9, 8, 7)]))
put("h5", "run_events", desc(run[:8] + [ds(15, 12, 2, 0, 1, 4, (3,))], [(8, 5, 3), (11, 7, 0), (10, 9, 0)]))
full = run + [ds(15, 12, 2, 0, 1, 4, (3,)), ds(18, 12, 2, 1, 1, 4, (1,))]
put("h5", "run_full", desc(full, [(8, 5, 3), (1, 6, 3), (6, 0, 10)]))
put("h5", "run_full_layers_huge", desc(full, [(8, 5, 3), (1, 6, 93)]))
put("h5", "run_full_layers_array", desc(full, [(8, 5, 3), (1, 7, 3)]))
put("h5", "run_empty", desc([ds(n, 2, 2, 1, 0, 4, (0,)) for n in range(4, 12)], [(8, 5, 3)]))
put("h5", "run_huge", desc([ds(n, 2, 2, 1, 0, 4, (8,)) for n in range(4, 12)], [(8, 5, 3), (8, 7, 0)]))

# ---- qtrain command lines (newline-separated words)
put("args", "defaults", "--data\nx.txt")
put("args", "model", "--data\nx.txt\n--layers\n2\n--heads\n3\n--dim\n64\n--seq\n16\n--batch\n0")
put("args", "recipe", "--data\nx\n--recipe\nnvfp4,nvfp4-rht,bf16-last=2,bf16-first=1")
put("args", "recipe_rules", "--data\nx\n--layers\n6\n--recipe\n"
    "fp8-current,w=nvfp4:2d,L1-2+last1.fc+fcproj.wgrad=bf16:rht=16,~first2.dgrad.dy:sr,dy=fp8-e4m3:delayed:hist=64")
put("args", "recipe_owner", "--recipe\nbf16,wgrad=fp8-e4m3:delayed:amax=most-recent\n--layers\n3\n--explain")
put("args", "recipe_bad", "--recipe\nnvfp4,wgrad.x=bf16\nx=mxfp8:delayed\nL3-1=bf16\nfprop.dy=nvfp4\n~x=fp32:sr")
put("args", "numbers", "--data\nx\n--lr\nnan\n--weight-decay\n-0\n--val-frac\n1e-300\n--steps\n-1")
put("args", "eval", "--eval-only\n--resume-from\nc.h5\n--recipe\nmxfp4\n--device\ncuda\n--grad-comm\nfp8")
put("args", "missing_value", "--data\nx\n--dim")
put("args", "unknown", "--data\nx\n--frobnicate\n1\n--help")
put("args", "qsweep_ok", "exp.ini\n--out\ns\n-j4\n--dry-run")
put("args", "qsweep_bad", "--summarize\nd\n--jobs\n0")
put("args", "qerr_ok", "w.safetensors\n--formats=nvfp4,mxfp4,nvfp4\n--rht\n--sr\n--raw\nf32:2x3\nr.bin\n--match\n^a\n"
    "--sort\nrel_l2\n--top\n3")
put("args", "qerr_bad_regex", "--match\n(\nx")
