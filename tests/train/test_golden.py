#!/usr/bin/env python3
"""test_golden.py — qtrain's results, bit for bit, against checked-in values.

Same seed, config and threads give the same bits (qprec's determinism rule);
this test holds those bits still across changes to the code: the run loop, the
pass order, the model kernels, the precision dispatch. A change that moves
any result by one ulp fails it.

What it runs: both architectures (gpt; llama with grouped-query attention,
head size 32 so the rotation takes its vector path) under bf16, fp8, nvfp4
and mxfp4, and the Llama under fp8 with Smooth-SwiGLU: 2 blocks of width 64, 6 steps of batch 4 x 32 tokens, validation
every 3 steps, quantization error and outlier statistics every 3 steps, seed
1337, 2 threads, on a text generated here (no shared corpus needed).

What it compares: every column of every dataset of the run file (h5py reads
it: /train, /eval, /quant/error, /quant/outliers, /events/*, /status) except
the timing and host ones (MEASURED below: wall times, throughput, GPU power,
energy and utilization), plus the root attributes init_param_hash,
num_params and recipe_plan. Floats are compared as their 64-bit patterns. A
dataset or column the golden file does not know is a failure too: a new
column gets its golden values by --update.

The instruction set: qprec's quantization (QP_SIMD), its model kernels
(QP_MODEL_ISA) and its transposes give the same bits on every path, but the
BF16/FP32 products come from oneDNN, whose kernels (and so the order of each
sum) follow the CPU. So each run goes twice:
  portable: QP_SIMD=scalar QP_MODEL_ISA=baseline QP_GEMM=f32 and oneDNN held
            to SSE4.1 (ONEDNN_MAX_CPU_ISA), paths every x86-64 CPU takes
            alike: compared with golden["portable"] on every machine;
  native:   the paths the CPU chooses: compared with golden["native"][SIG],
            SIG = simd/model_kernels/gemm_bf16 (the run file's attributes),
            where the golden file has that signature; on a CPU it lacks, the
            native run is compared with a third run on QP_SIMD=scalar and
            QP_MODEL_ISA=baseline under the same GEMM choice (the SIMD and
            model-kernel paths must agree bit for bit), and the note says so.

usage: test_golden.py QTRAIN GOLDEN.json [--update]
  --update rewrites GOLDEN.json's portable values and this CPU's native
  signature (others are kept); run it on the code whose results are right.
"""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks  # noqa: E402

QTRAIN, GOLDEN = sys.argv[1], sys.argv[2]
UPDATE = "--update" in sys.argv[3:]

ARCHS = {"gpt": ["--arch", "gpt"], "llama": ["--arch", "llama", "--kv-heads", "1"]}
RECIPES = ["bf16", "fp8", "nvfp4", "mxfp4"]
RUNS = [(arch, recipe) for arch in ARCHS for recipe in RECIPES] + [("llama", "fp8,smooth-swiglu")]
SHAPE = ["--layers", "2", "--heads", "2", "--dim", "64", "--seq", "32", "--batch", "4", "--steps", "6",
         "--warmup", "2", "--eval-every", "3", "--eval-batches", "2", "--qerr-every", "3", "--seed", "1337",
         "--threads", "2", "--ckpt-every", "0", "--quiet"]
# measured, not computed: wall times, throughput and the GPU's sensors
MEASURED = {"step_ms", "data_wait_ms", "tokens_per_s", "comm_ms", "power_w", "energy_j", "gpu_util", "gemm_ms",
            "quant_ms", "attn_ms", "rowops_ms", "optim_ms"}
RESULT_ATTRS = ["init_param_hash", "num_params", "recipe_plan"]
PORTABLE_ENV = {"QP_SIMD": "scalar", "QP_MODEL_ISA": "baseline", "QP_GEMM": "f32", "ONEDNN_MAX_CPU_ISA": "SSE41"}
SCALAR_ENV = {"QP_SIMD": "scalar", "QP_MODEL_ISA": "baseline"}
ENV_UNSET = list(PORTABLE_ENV) + ["QP_PRODUCER_ROUNDING", "DNNL_MAX_CPU_ISA", "OMP_NUM_THREADS"]

check = Checks()
tmp = tempfile.mkdtemp(prefix="qtrain_golden_")


def write_text(path, nbytes=60000):
    """Words drawn by a fixed linear congruential generator: the same bytes on
    every machine and Python, with no corpus file."""
    words = [b"the", b"quick", b"brown", b"fox", b"jumps", b"over", b"a", b"lazy", b"dog", b"and", b"cat",
             b"sat", b"on", b"mat", b"while", b"it", b"rained", b"\n"]
    state, out = 12345, bytearray()
    while len(out) < nbytes:
        state = (state * 1103515245 + 12345) % (1 << 31)
        out += words[(state >> 16) % len(words)] + b" "
    with open(path, "wb") as f:
        f.write(bytes(out[:nbytes]))


def column_bits(a):
    """One column as JSON: floats as their 64-bit patterns in hex, integers as
    numbers, byte strings as text."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return [format(int(v), "016x") for v in a.astype(np.float64).view(np.uint64)]
    if a.dtype.kind in "iu":
        return [int(v) for v in a]
    if a.dtype.kind == "S":
        return [v.decode("utf-8", "replace") for v in a]
    raise TypeError(f"column of dtype {a.dtype}")


def read_results(path):
    """{dataset/column: values} of every computed column, plus the result attributes."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset):
                return
            data = obj[:]
            if data.dtype.names:
                for col in data.dtype.names:
                    if col not in MEASURED:
                        out[f"{name}.{col}"] = column_bits(data[col])
            elif name.rsplit("/", 1)[-1] not in MEASURED:
                out[name] = column_bits(data)
        f.visititems(visit)
        for a in RESULT_ATTRS:
            out["@" + a] = str(f.attrs[a])
        sig = "/".join(str(f.attrs[k]) for k in ("simd", "model_kernels", "gemm_bf16"))
    return out, sig


def train(name, arch, recipe, env):
    out = os.path.join(tmp, name + ".h5")
    e = {k: v for k, v in os.environ.items() if k not in ENV_UNSET}
    e.update(env)
    p = subprocess.run([QTRAIN, "--data", data, "--out", out, "--recipe", recipe] + ARCHS[arch] + SHAPE,
                       capture_output=True, text=True, env=e, timeout=300)
    if not check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr.strip()[-300:]}"):
        return None, None
    return read_results(out)


def compare(what, got, want):
    """Every column of want in got, bit for bit, and no column beyond."""
    for key in sorted(set(got) | set(want)):
        if key not in want:
            check(False, f"{what}: {key} is not in the golden file (a new column? run --update)")
        elif key not in got:
            check(False, f"{what}: {key} is missing from the run file")
        elif got[key] != want[key]:
            g, w = got[key], want[key]
            i = next((i for i, (x, y) in enumerate(zip(g, w)) if x != y), min(len(g), len(w))) \
                if isinstance(g, list) and isinstance(w, list) else 0
            check(False, f"{what}: {key} differs (first at row {i}: got {g[i] if isinstance(g, list) and i < len(g) else g}"
                         f", want {w[i] if isinstance(w, list) and i < len(w) else w})")
        else:
            check(True, f"{what}: {key}")


def dump(obj, depth=0):
    """JSON with one line per column (diffs stay readable), nested tables indented."""
    if not isinstance(obj, dict):
        return json.dumps(obj, separators=(",", ":"))
    pad = " " * (depth + 1)
    items = [f"{pad}{json.dumps(k)}: {dump(obj[k], depth + 1)}" for k in sorted(obj)]
    return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"


data = os.path.join(tmp, "text.txt")
write_text(data)

golden = {"portable": {}, "native": {}}
if os.path.exists(GOLDEN):
    with open(GOLDEN) as f:
        golden = json.load(f)
elif not UPDATE:
    print(f"{GOLDEN}: no such golden file (make it with --update)")
    sys.exit(1)

note = ""
native_sig = None
new_portable, new_native = {}, {}
for arch, recipe in RUNS:
    run = f"{arch}-{recipe}".replace(",", "-")
    port, _ = train(run + "-portable", arch, recipe, PORTABLE_ENV)
    nat, sig = train(run + "-native", arch, recipe, {})
    if port is None or nat is None:
        continue
    check(native_sig in (None, sig), f"{run}: one signature for every run ({native_sig}, {sig})")
    native_sig = sig
    new_portable[run], new_native[run] = port, nat
    if UPDATE:
        continue
    compare(f"{run} portable", port, golden["portable"].get(run, {}))
    if sig in golden["native"]:
        compare(f"{run} native {sig}", nat, golden["native"][sig].get(run, {}))
    else:
        scalar, _ = train(run + "-scalar", arch, recipe, SCALAR_ENV)
        if scalar is not None:
            compare(f"{run} native {sig} against QP_SIMD=scalar QP_MODEL_ISA=baseline", nat, scalar)
        note = f" (no golden values for {sig}: its native runs compared with the scalar paths)"

if UPDATE:
    if check.failed:
        sys.exit(check.summary("test_golden --update", " (golden file left as it was)"))
    golden["portable"] = new_portable
    golden["native"][native_sig] = new_native
    with open(GOLDEN, "w") as f:
        f.write(dump(golden) + "\n")
    print(f"{GOLDEN}: portable values and native {native_sig} written ({len(new_portable)} runs)")
    sys.exit(0)
sys.exit(check.summary("test_golden", note))
