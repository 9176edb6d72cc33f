#!/usr/bin/python3
"""test_python.py — the Python package qprec (python/) against the C tools
and things it did not write.

    test_python.py CASE LIBQPREC WORKDIR QERR TENSOR_DUMP QTRAIN

CASE:
  exact    qprec.errors on every tensor of a generated safetensors file (F32,
           F16, BF16; 1-D, 2-D with ragged blocks, 3-D, all-zero, NaN/Inf,
           outliers), every format of the library and the +rht/+sr variants,
           written as qerr writes JSON: byte-identical to `qerr --json --rht
           --sr --seed 7` on the file. The arrays fed to Python are checked to
           be, bit for bit, the float32 tensor_dump (io/, what qerr reads) gives.
  codes    QTensor's packed layout decoded by an independent numpy decoder
           (element codecs, nibble order, padding, E8M0/UE4M3 scales, 16x16
           tiles) equals qdq and the numpy oracle tests/oracle/ref_formats.py,
           bit for bit, for every format the oracle knows; block_2d, SR and
           RHT properties; bad arguments raise.
  import   `python3 -X importtime -c "import qprec; qprec.formats()"` loads
           neither pandas, nor h5py, nor torch (and does once runfile reads).
  torch    a torch CPU tensor goes in through its .numpy() view without a copy,
           qdq(out=t) writes into the tensor itself, the result comes back with
           torch.from_numpy without one; bf16, non-contiguous, requires_grad.
  doctest  every docstring example of qprec and qprec.runfile (on a run file
           qtrain writes here) and of docs/python.md, and runfile.load against h5py.
  install  `pip install ./python` into a fresh venv from a copy of python/,
           quant/, train/ and io/ alone (no build/, offline: the build backend needs nothing
           from PyPI), and from the sdist it makes; the installed package gives
           the same bytes as the build tree's library.
"""
import json
import re
import os
import shutil
import subprocess
import sys

import numpy as np

CASE = sys.argv[1]
LIB, WORK, QERR, TENSOR_DUMP, QTRAIN = map(os.path.abspath, sys.argv[2:7])
SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ["QPREC_LIBRARY"] = LIB
sys.path.insert(0, os.path.join(SRC, "python"))
sys.path.insert(0, os.path.join(SRC, "tests", "oracle"))
sys.path.insert(0, os.path.join(SRC, "tests"))
from qp_testlib import Checks, write_safetensors  # noqa: E402

check = Checks()
F32 = np.float32


def raises(exc, fn, what):
    try:
        fn()
    except exc:
        return check(True, what)
    except Exception as e:  # noqa: BLE001 - the wrong exception is a failure too
        return check(False, f"{what}: raised {type(e).__name__}: {e}")
    return check(False, f"{what}: did not raise")


def tensors_for_test(rng):
    """name, safetensors dtype, stored array, the float32 values it means."""
    out = []
    w = (rng.standard_normal((37, 50)) * 0.02).astype(F32)                 # ragged: 50 = 1.5625 MX blocks
    out.append(("layer.0.weight", "F32", w, w))
    act = rng.standard_normal((4, 8, 48)).astype(F32)
    act[:, :, 5] *= 60.0                                                  # an outlier channel
    out.append(("layer.0.act", "F32", act, act))
    g = (rng.standard_t(2, (16, 64)) * 1e-4).astype(F32)                  # heavy-tailed gradient
    out.append(("layer.0.grad", "F32", g, g))
    out.append(("bias", "F32", rng.standard_normal(100).astype(F32), None))
    out.append(("zeros", "F32", np.zeros((16, 32), F32), None))
    sp = rng.standard_normal((8, 32)).astype(F32)
    sp[1, 3], sp[5, 30], sp[6, 0] = np.nan, np.inf, -np.inf
    out.append(("specials", "F32", sp, sp))
    tiny = (rng.standard_normal((3, 64)) * 1e-38).astype(F32)             # subnormal range
    out.append(("tiny", "F32", tiny, tiny))
    h = (rng.standard_normal((20, 33)) * 3).astype(np.float16)
    out.append(("half", "F16", h, h.astype(F32)))
    b = (rng.standard_normal((9, 80)) * 10).astype(F32)
    bits = (b.view(np.uint32) >> 16).astype(np.uint16)                  # truncated to BF16
    out.append(("brain", "BF16", bits, (bits.astype(np.uint32) << 16).view(F32)))
    return [(n, d, a, a if v is None else v) for n, d, a, v in out]


def dump(path):
    """tensor_dump: {name: float32 array as io/ read it}."""
    out = os.path.join(WORK, "dump.f32")
    p = subprocess.run([TENSOR_DUMP, path, out], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"tensor_dump: {p.stderr}")
    data = np.fromfile(out, dtype=F32)
    res = {}
    for line in p.stdout.splitlines():
        f = line.split(" ")
        off, numel, ndim = int(f[0]), int(f[1]), int(f[5])
        shape = tuple(int(s) for s in f[6:6 + ndim])
        res[" ".join(f[6 + ndim:])] = data[off:off + numel].reshape(shape)
    return res


def qerr_json_text(file, rows):
    """qerr's JSON layout (tools/qerr_out.c): reals %.17g, non-finite null."""
    def val(v):
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, int):
            return "%d" % v
        return "%.17g" % v if np.isfinite(v) else "null"
    keys = ["file", "tensor", "format", "rows", "cols", "rel_l2", "snr_db", "max_abs", "cosine", "sat_frac",
            "zero_frac", "amax", "scale", "n_blocks", "block_scale_min", "block_scale_max", "block_scale_log2_mean",
            "n_nonfinite", "block_scale_log2_std", "block_scale_saturated_frac", "block_scale_underflow_frac",
            "elems_flushed_frac", "elems_saturated_frac", "block_dynamic_range_max_log2", "block_scale_hist"]

    def hist_text(h):   # qerr's block_scale_hist: the non-empty bins, BIN = zero, nan or floor(log2 scale)
        label = lambda k: "zero" if k == 0 else "nan" if k == 1 else str(k - 151)
        return " ".join(f"{label(k)}:{int(c)}" for k, c in enumerate(h) if c)
    out = "["
    for i, r in enumerate(rows):
        r = dict(r, file=file, block_scale_hist=hist_text(r["block_scale_hist"]))
        out += (",\n  {" if i else "\n  {") + ", ".join(f'"{k}": {val(r[k])}' for k in keys) + "}"
    return out + ("\n]\n" if rows else "]\n")


def case_exact():
    import qprec
    rng = np.random.default_rng(11)
    tens = tensors_for_test(rng)
    path = os.path.join(WORK, "tensors.safetensors")
    write_safetensors(path, [(n, d, a) for n, d, a, _ in tens])
    seen = dump(path)
    for n, _, _, v in tens:
        check(n in seen and seen[n].shape == v.shape and seen[n].tobytes() == v.tobytes(),
              f"{n}: numpy's float32 is tensor_dump's (what qerr reads), bit for bit")
    names = [f["name"] for f in qprec.formats()]
    seed = 7
    p = subprocess.run([QERR, "--json", "--rht", "--sr", "--seed", str(seed), "--threads", "1", "--formats",
                        ",".join(names), path], capture_output=True, text=True)
    check(p.returncode == 0, f"qerr: {p.stderr}")
    rows, skipped = [], 0
    for n, _, _, v in tens:
        for f in names:
            for rht, sr in ((None, None), (seed, None), (None, seed), (seed, seed)):   # qerr's variant order
                if True:
                    try:
                        rows.append(dict(qprec.errors(v, f, rht=rht, sr_seed=sr, sr_stream=n), tensor=n))
                    except ValueError as e:
                        check(rht is not None and v.shape[-1] % 16 and "multiple of 16" in str(e),
                              f"{n} {f}: only the RHT on cols % 16 != 0 is refused ({e})")
                        skipped += 1
    mine = qerr_json_text(path, rows)
    same = mine == p.stdout
    check(same, "Python's report is byte-identical to qerr --json")
    if not same:
        a, b = mine.splitlines(), p.stdout.splitlines()
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                print(f"  first difference, line {i}:\n  python {x}\n  qerr   {y}")
                break
        print(f"  lines: python {len(a)}, qerr {len(b)}")
    print(f"exact: {len(rows)} tensor x format rows ({len(names)} formats x plain/+rht/+sr/+rht+sr; {skipped} RHT "
          f"variants refused as qerr leaves them out), {len(mine)} bytes of JSON compared")


# ---- an independent decoder of the packed layout (qp_quant.h's comment) --------------
def minifloat_table(ebits, mbits, bias, nan_codes=(), inf_codes=()):
    """value of every code of a 1+ebits+mbits-bit float, float64."""
    n = 1 << (1 + ebits + mbits)
    vals = np.empty(n)
    for c in range(n):
        s = -1.0 if c >> (ebits + mbits) else 1.0
        e = (c >> mbits) & ((1 << ebits) - 1)
        m = c & ((1 << mbits) - 1)
        vals[c] = s * (m * 2.0 ** (1 - bias - mbits) if e == 0 else (1 + m / 2 ** mbits) * 2.0 ** (e - bias))
    for c in nan_codes:
        vals[c] = np.nan
    for c, v in inf_codes:
        vals[c] = v
    return vals


E4M3 = minifloat_table(4, 3, 7, nan_codes=(0x7F, 0xFF))
E5M2 = minifloat_table(5, 2, 15, nan_codes=(0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF),
                       inf_codes=((0x7C, np.inf), (0xFC, -np.inf)))
E2M1 = minifloat_table(2, 1, 1)
# (element table or codec name, scale kind) per format the decoder knows
LAYOUT = {"fp32": ("f32", None), "bf16": ("bf16", None), "fp8-e4m3": (E4M3, None), "fp8-e5m2": (E5M2, None),
          "mxfp8": (E4M3, "e8m0"), "mxfp8-e5m2": (E5M2, "e8m0"), "mxfp4": (E2M1, "e8m0"),
          "nvfp4": (E2M1, "ue4m3"), "nvfp4-2d": (E2M1, "ue4m3")}


def decode(q, info):
    """The values a QTensor holds, from its bytes alone."""
    elem, scale = LAYOUT[q.fmt]
    rows, cols = q.rows, q.cols
    if isinstance(elem, str):
        if elem == "f32":
            vals = q.codes.view("<f4")[:, :cols].astype(F32)
        else:
            vals = (q.codes.view("<u2")[:, :cols].astype(np.uint32) << 16).view(F32)
        return vals.reshape(q.shape)
    if info["elem_bits"] == 4:
        lo, hi = q.codes & 0xF, q.codes >> 4
        codes = np.stack([lo, hi], axis=2).reshape(rows, -1)       # even element in the low nibble
    else:
        codes = q.codes
    e = elem[codes[:, :cols]].astype(F32)
    if scale is None:
        y = (e * F32(q.tensor_scale)).astype(F32)
    else:
        br, bc = info["block_rows"], info["block_cols"]
        if scale == "e8m0":
            d = np.where(q.scales == 0xFF, np.nan, np.ldexp(1.0, q.scales.astype(np.int64) - 127)).astype(F32)
        else:
            d = np.abs(E4M3[q.scales & 0x7F]).astype(F32)
        dfull = np.repeat(np.repeat(d, br, axis=0), bc, axis=1)[:rows, :cols]
        y = (e * dfull).astype(F32) * F32(q.tensor_scale)
    return y.astype(F32).reshape(q.shape)


def case_codes():
    import qprec
    import ref_formats
    rng = np.random.default_rng(5)
    shapes = [(1, 16), (7, 50), (33, 96), (2, 3, 40), (100,), (16, 32), (40, 48)]
    fmts = [f for f in qprec.formats() if f["name"] in LAYOUT]
    check(len(fmts) == len(LAYOUT), f"the library has the formats the decoder knows: {[f['name'] for f in fmts]}")
    # formats the decoder does not know (a row quant/ added): the same checks but the decoder's
    for info in qprec.formats():
        if info["name"] in LAYOUT:
            continue
        for shape in shapes:
            x = (rng.standard_normal(shape) * 3).astype(F32)
            q = qprec.quantize(x, info["name"])
            y = qprec.qdq(x, info["name"])
            check(y.tobytes() == q.dequantize().tobytes(), f"{info['name']} {shape}: qdq == quantize().dequantize()")
            if info["name"] in ref_formats.FORMATS:
                ref = ref_formats.qdq(info["name"], x.reshape(q.rows, q.cols))[0].reshape(x.shape)
                check(ref.tobytes() == y.tobytes(), f"{info['name']} {shape}: qdq == ref_formats, bit for bit")
    n = 0
    for info in fmts:
        name = info["name"]
        for shape in shapes:
            x = (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 50.0])).astype(F32)
            x.reshape(-1)[rng.integers(0, x.size)] *= 300.0                 # an outlier
            q = qprec.quantize(x, name)
            rows, cols = q.rows, q.cols
            rb = -(-cols // info["block_cols"]) * info["block_cols"] * info["elem_bits"] // 8
            check(q.codes.shape == (rows, rb) and q.codes.dtype == np.uint8, f"{name} {shape}: codes {q.codes.shape}")
            if info["scale_bytes"]:
                check(q.scales.shape == (-(-rows // info["block_rows"]), -(-cols // info["block_cols"])),
                      f"{name} {shape}: scales {q.scales.shape}")
                pad = q.codes[:, -(-cols * info["elem_bits"] // 8):]
                check(not pad.any() or cols % info["block_cols"] == 0, f"{name} {shape}: padding codes are 0")
            else:
                check(q.scales is None, f"{name}: no block scales")
            y = qprec.qdq(x, name)
            d = q.dequantize()
            mine = decode(q, info)
            ref = ref_formats.qdq(name, x.reshape(rows, cols))[0].reshape(x.shape) if name != "fp32" else x
            check(y.tobytes() == d.tobytes(), f"{name} {shape}: qdq == quantize().dequantize(), bit for bit")
            check(mine.tobytes() == y.tobytes(), f"{name} {shape}: the packed bytes decode (numpy) to qdq's values")
            check(ref.tobytes() == y.tobytes(), f"{name} {shape}: qdq == the numpy oracle ref_formats, bit for bit")
            n += 1
    # block_2d, SR, RHT
    x = rng.standard_normal((40, 48)).astype(F32)
    q2 = qprec.quantize(x, "nvfp4", block_2d=True)
    check(q2.fmt == "nvfp4-2d" and q2.scales.shape == (3, 3), f"block_2d: {q2}")
    raises(ValueError, lambda: qprec.quantize(x, "mxfp8", block_2d=True), "block_2d without a 2D variant")
    a, b = qprec.qdq(x, "nvfp4", sr_seed=3), qprec.qdq(x, "nvfp4", sr_seed=3)
    c = qprec.qdq(x, "nvfp4", sr_seed=4)
    check(a.tobytes() == b.tobytes() and a.tobytes() != c.tobytes(), "SR: same seed same bits, another seed others")
    check(qprec.quantize(x, "nvfp4", sr_seed=3).dequantize().tobytes() == a.tobytes(), "SR: quantize == qdq")
    check(qprec.qdq(x, "nvfp4", sr_seed=3, sr_stream="w").tobytes() != a.tobytes(), "SR: the stream matters")
    xs = np.full((1024, 64), 0.3, F32)
    xs[:, ::16] = 1.0                       # block amax 1: 0.3 scales to 1.8, between E2M1's 1.5 and 2
    ys = qprec.qdq(xs, "nvfp4", sr_seed=9)[:, 1:16]
    check(set(np.unique(ys)) == {F32(0.25), F32(1 / 3)} and abs(ys.mean() - 0.3) < 0.002,
          f"SR rounds 0.3 both ways ({np.unique(ys)}), unbiased on average ({ys.mean()})")
    R = qprec.qdq(np.eye(16, dtype=F32), "fp32", rht=5)                     # rows of R (fp32 is exact)
    check(np.allclose(np.abs(R), 0.25) and np.allclose(R @ R.T, np.eye(16), atol=1e-6),
          "RHT: R is a signed Hadamard matrix / 4, orthogonal")
    xr = qprec.qdq(x, "fp32", rht=5)
    check(np.allclose(xr, (x.reshape(-1, 16) @ R).reshape(x.shape), atol=1e-5), "RHT: x -> x R per 16 columns")
    check(qprec.qdq(x, "nvfp4", rht=5).tobytes() == qprec.qdq(xr, "nvfp4").tobytes(),
          "RHT: qdq(x, rht) == qdq(x R)")
    check(qprec.quantize(x, "nvfp4", rht=True).rht == 1, "rht=True is seed 1 (qerr --rht's default --seed)")
    # bad arguments
    raises(ValueError, lambda: qprec.qdq(x, "nvfp5"), "unknown format")
    raises(TypeError, lambda: qprec.qdq(x, 4), "a format that is not a name")
    raises(ValueError, lambda: qprec.qdq(np.ones((2, 17), F32), "nvfp4", rht=1), "RHT on 17 columns")
    raises(TypeError, lambda: qprec.qdq(x, "nvfp4", sr_seed=-1), "negative seed")
    raises(TypeError, lambda: qprec.qdq(x, "nvfp4", rht="yes"), "rht not a seed")
    raises(TypeError, lambda: qprec.qdq(np.array(["a"]), "bf16"), "strings")
    raises(ValueError, lambda: qprec.qdq(x, "bf16", out=np.empty(3, F32)), "out of the wrong size")
    e = qprec.qdq(np.zeros((0, 16), F32), "nvfp4")
    check(e.shape == (0, 16), "an empty tensor")
    s = qprec.qdq(np.float32(3.3), "fp8-e4m3")
    check(s.shape == () and np.isclose(float(s), 3.3, rtol=1e-6), f"0-d: {s}")   # 3.3 scales onto 448 exactly
    print(f"codes: {n} format x shape cases decoded independently and against ref_formats")


def imported(code):
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(SRC, "python")))
    mods = set()
    for line in p.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            mods.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return p, mods


def case_import():
    p, mods = imported("import qprec; qprec.formats(); qprec.qdq([1.0, 2.0], 'nvfp4')")
    check(p.returncode == 0 and "qprec" in mods and "numpy" in mods, f"import qprec ran: {p.returncode} {p.stderr[-300:]}")
    for heavy in ("pandas", "torch", "h5py"):
        check(heavy not in mods, f"import qprec (and using it) does not load {heavy}")
    # the check can see them: reading a run file loads pandas and h5py
    run = make_run(os.path.join(WORK, "import"))
    p, mods = imported(f"import qprec; qprec.runfile.load({run!r})")
    check(p.returncode == 0 and "pandas" in mods and "h5py" in mods, f"runfile.load loads pandas and h5py: {p.stderr[-300:]}")
    print(f"import: {len(mods)} top-level modules for import qprec")


def case_extras():
    """Without an optional dependency, qprec.runfile.load says which and the extra that brings it
    (python/pyproject.toml's [project.optional-dependencies]), instead of a bare ModuleNotFoundError;
    qprec itself needs neither."""
    run = make_run(os.path.join(WORK, "extras"))
    extras = re.search(r"^runfile\s*=\s*\[([^\]]*)\]", open(os.path.join(SRC, "python", "pyproject.toml")).read(), re.M)
    check(extras and sorted(re.findall(r'"([^"]+)"', extras.group(1))) == ["h5py", "pandas"],
          "pyproject.toml has the runfile extra with h5py and pandas")
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"))
    for hidden in (["h5py"], ["pandas"], ["h5py", "pandas"]):
        # a module set to None in sys.modules cannot be imported: as if it were not installed
        code = ("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in hidden) +
                f"import qprec\nqprec.qdq([1.0], 'nvfp4')\nqprec.runfile.load({run!r})\n")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        want = f"ImportError: qprec.runfile needs {' and '.join(hidden)} (not installed): pip install 'qprec[runfile]'"
        check(p.returncode != 0 and last == want, f"without {hidden}: {last!r}, want {want!r}")
    p = subprocess.run([sys.executable, "-c", f"import qprec; print(len(qprec.runfile.load({run!r}).train))"],
                       capture_output=True, text=True, env=env)
    check(p.returncode == 0 and int(p.stdout) > 0, f"with both, load reads the run: {p.stderr[-300:]}")
    print("extras: a missing h5py or pandas names qprec[runfile]")


def case_torch():
    import qprec
    import torch
    torch.manual_seed(0)
    t = torch.randn(64, 32)
    a = qprec._as_f32(t)
    check(np.shares_memory(a, t.numpy()), "a float32 CPU tensor goes in without a copy")
    y = qprec.qdq(t, "nvfp4")
    ref = qprec.qdq(t.numpy().copy(), "nvfp4")
    check(y.tobytes() == ref.tobytes(), "a tensor quantizes as its numpy array does")
    ty = torch.from_numpy(y)
    check(ty.data_ptr() == y.ctypes.data, "the result comes back to torch without a copy")
    u = t.clone()
    before = u.data_ptr()
    r = qprec.qdq(u, "mxfp8", out=u)
    check(u.data_ptr() == before and u.numpy().tobytes() == qprec.qdq(t, "mxfp8").tobytes()
          and np.shares_memory(r, u.numpy()), "qdq(t, out=t) writes into the tensor itself")
    raises(ValueError, lambda: qprec.qdq(t, "mxfp8", out=t.double()), "out: a float64 tensor (would be a copy)")
    raises(ValueError, lambda: qprec.qdq(t, "mxfp8", out=t.clone().t()), "out: a non-contiguous tensor")
    tb = t.to(torch.bfloat16)
    check(qprec.qdq(tb, "fp8-e4m3").tobytes() == qprec.qdq(tb.float().numpy(), "fp8-e4m3").tobytes(),
          "a bfloat16 tensor (widened exactly: a copy, numpy has no bf16)")
    tt = t.t()
    check(qprec.qdq(tt, "mxfp4").tobytes() == qprec.qdq(np.ascontiguousarray(tt.numpy()), "mxfp4").tobytes(),
          "a non-contiguous tensor (copied)")
    g = t.clone().requires_grad_(True)
    check(qprec.errors(g, "nvfp4") == qprec.errors(t, "nvfp4"), "a tensor that requires grad")
    back = torch.from_numpy(qprec.quantize(t, "nvfp4").dequantize())
    check(torch.equal(back, torch.from_numpy(y)), "QTensor.dequantize() to torch")


def make_run(d, recipe="fp8"):
    os.makedirs(d, exist_ok=True)
    corpus = os.path.join(d, "corpus.txt")
    with open(corpus, "w") as f:
        f.write(("the quick brown fox jumps over the lazy dog. " * 4000))
    run = os.path.join(d, "run.h5")
    if os.path.exists(run):  # written by an older qtrain of this build tree: its columns may differ
        os.unlink(run)
    p = subprocess.run([QTRAIN, "--data", corpus, "--layers", "2", "--heads", "2", "--dim", "32", "--seq", "32",
                        "--batch", "4", "--steps", "30", "--eval-every", "10", "--eval-batches", "2",
                        "--qerr-every", "10", "--ckpt-every", "0", "--threads", "1", "--quiet", "--recipe",
                        recipe, "--out", run], capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise SystemExit(f"qtrain: {p.stderr}")
    return run


def case_doctest():
    import doctest
    import h5py
    import qprec
    import qprec.runfile
    run = make_run(os.path.join(WORK, "doctest"))
    for mod, globs in ((qprec, {}), (qprec.runfile, {"RUN": run, "qprec": qprec})):
        r = doctest.testmod(mod, extraglobs=globs, verbose=False)
        check(r.failed == 0 and r.attempted > 0, f"doctests of {mod.__name__}: {r}")
        print(f"doctest {mod.__name__}: {r.attempted} examples, {r.failed} failed")
    for doc in ("docs/python.md", "README.md"):
        r = doctest.testfile(os.path.join(SRC, doc), module_relative=False)
        check(r.failed == 0 and r.attempted > 0, f"the examples of {doc}: {r}")
    rf = qprec.runfile.load(run)
    with h5py.File(run, "r") as f:
        for k in ("step", "loss", "lr", "grad_norm", "batch_hash"):
            check(np.array_equal(rf.train[k].to_numpy(), f["train/" + k][()]), f"runfile train.{k} is h5py's")
        check(np.array_equal(rf.eval["val_loss"].to_numpy(), f["eval/val_loss"][()]), "runfile eval.val_loss")
        qe = f["quant/error"][()]
        check(len(rf.quant_error) == len(qe) and list(rf.quant_error.gemm) == [g.decode() for g in qe["gemm"]]
              and np.array_equal(rf.quant_error.rel_l2.to_numpy(), qe["rel_l2"]), "runfile quant_error is h5py's")
        qo = f["quant/outliers"][()]
        check(len(qo) > 0 and len(rf.quant_outliers) == len(qo) and
              np.array_equal(rf.quant_outliers["kurtosis"].to_numpy(), qo["kurtosis"]), "runfile quant_outliers is h5py's")
        check(len(rf.events) == len(f["events/recalib"]), "runfile events")
        check(rf.attrs["recipe"] == "fp8" and rf.status.state.iloc[-1] == "done", "runfile attrs and status")
    raises(FileNotFoundError, lambda: qprec.runfile.load(os.path.join(WORK, "nope.h5")), "runfile: a missing file")
    raises(ValueError, lambda: qprec.runfile.load(make_h5(os.path.join(WORK, "other.h5"))), "runfile: not a run file")


def make_h5(path):
    import h5py
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(3)
    return path


def case_install():
    clone = os.path.join(WORK, "clone")
    shutil.rmtree(clone, ignore_errors=True)
    # a fresh clone's python/, quant/ and the trainer's train/ and io/ (the library compiles qtrain's recipe
    # parser, dispatch and run-file writer): the files git knows (as they are in the work tree), no build/
    tops = ("python", "quant", "train", "io")
    files = subprocess.run(["git", "-C", SRC, "ls-files", "--cached", "--others", "--exclude-standard", *tops],
                           capture_output=True, text=True)
    listed = files.stdout.split() if files.returncode == 0 and files.stdout.strip() else None
    if listed is None:  # not a git checkout: the folders as they are, minus caches
        listed = [os.path.relpath(os.path.join(r, n), SRC) for top in tops
                  for r, _, ns in os.walk(os.path.join(SRC, top)) for n in ns if "__pycache__" not in r]
    for rel in listed:
        os.makedirs(os.path.join(clone, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(os.path.join(SRC, rel), os.path.join(clone, rel))
    venv = os.path.join(WORK, "venv")
    shutil.rmtree(venv, ignore_errors=True)
    p = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], capture_output=True, text=True)
    if not check(p.returncode == 0, f"python3 -m venv (Debian: python3-venv): {p.stderr}"):
        return
    py = os.path.join(venv, "bin", "python")
    env = {k: v for k, v in os.environ.items() if k not in ("QPREC_LIBRARY", "PYTHONPATH")}
    env["PIP_NO_INDEX"] = "1"   # offline: nothing may come from PyPI
    p = subprocess.run([py, "-m", "pip", "install", "--no-cache-dir", "-q", os.path.join(clone, "python")],
                       capture_output=True, text=True, env=env, timeout=900)
    check(p.returncode == 0, f"pip install ./python from a fresh copy: {p.stdout[-1500:]} {p.stderr[-1500:]}")
    probe = ("import qprec, numpy as np, os; x = np.linspace(-3, 3, 4096, dtype=np.float32).reshape(64, 64);"
             "print(qprec.__file__); print(os.path.exists(os.path.join(os.path.dirname(qprec.__file__), 'libqprec.so')));"
             "import sys; sys.stdout.buffer.write(b''.join(qprec.qdq(x, f['name'], sr_seed=2).tobytes() "
             "for f in qprec.formats()))")
    p = subprocess.run([py, "-c", probe], capture_output=True, env=env, cwd=WORK)
    out = p.stdout.split(b"\n", 2)
    check(p.returncode == 0 and len(out) == 3 and out[0].decode().startswith(venv) and out[1] == b"True",
          f"the installed package is the venv's, with its library: {p.stdout[:200]} {p.stderr[-500:]}")
    import qprec
    x = np.linspace(-3, 3, 4096, dtype=F32).reshape(64, 64)
    mine = b"".join(qprec.qdq(x, f["name"], sr_seed=2).tobytes() for f in qprec.formats())
    check(len(out) == 3 and out[2] == mine, "the installed library gives the build tree's bytes, every format")
    # the sdist it makes builds on its own too
    sd = os.path.join(WORK, "sdist")
    shutil.rmtree(sd, ignore_errors=True)
    os.makedirs(sd)
    p = subprocess.run([py, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import qprec_build; "
                        "print(qprec_build.build_sdist(sys.argv[2]))", os.path.join(clone, "python", "build_backend"),
                        sd], capture_output=True, text=True, env=env, cwd=os.path.join(clone, "python"))
    tarball = os.path.join(sd, p.stdout.strip())
    check(p.returncode == 0 and os.path.exists(tarball), f"build_sdist: {p.stderr[-500:]}")
    venv2 = os.path.join(WORK, "venv2")
    shutil.rmtree(venv2, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv2], check=True)
    p = subprocess.run([os.path.join(venv2, "bin", "python"), "-m", "pip", "install", "--no-cache-dir", "-q", tarball],
                       capture_output=True, text=True, env=env, timeout=900)
    check(p.returncode == 0, f"pip install of the sdist: {p.stderr[-1500:]}")
    p = subprocess.run([os.path.join(venv2, "bin", "python"), "-c", probe], capture_output=True, env=env, cwd=WORK)
    check(p.returncode == 0 and p.stdout.split(b"\n", 2)[2:] == [mine], "the sdist's build gives the same bytes")


def case_te():
    """rht="te" and the -te Four Over Six rows: Transformer Engine's transform as a dense
    matrix here (TE's get_wgrad_sign_vector signs on H16's rows, / 4), qerr --rht-signs te
    byte-identical to qprec.errors(rht="te"), block_2d naming the 16x16 rows."""
    import qprec
    s = np.array([1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1], dtype=np.float64)
    h = np.ones((1, 1))
    while h.shape[0] < 16:
        h = np.block([[h, h], [h, -h]])
    m = (s[:, None] * h) / 4.0
    rng = np.random.default_rng(5)
    x = rng.integers(-64, 65, size=(8, 48)).astype(np.float32)      # 16-term sums exact in float32
    rot = (x.astype(np.float64).reshape(-1, 16) @ m).reshape(x.shape).astype(np.float32)
    for f in ("nvfp4", "nvfp4-4o6-te", "nvfp4-4o6-te-mse", "mxfp8"):
        a, b = qprec.quantize(x, f, rht="te"), qprec.quantize(rot, f)
        check(np.array_equal(a.codes, b.codes) and np.array_equal(a.scales, b.scales) and a.rht == "te",
              f"{f}: rht='te' quantizes x diag(s) H16 / 4 with TE's signs")
        check(np.array_equal(qprec.qdq(x, f, rht="te"), qprec.qdq(rot, f)), f"{f}: qdq with rht='te'")
    seeded = qprec.quantize(x, "nvfp4", rht=1)
    check(not np.array_equal(seeded.codes, qprec.quantize(rot, "nvfp4").codes), "the seeded RHT is another transform")
    check(qprec.errors(x, "nvfp4", rht="te")["format"] == "nvfp4+rht-te", "errors names the variant nvfp4+rht-te")
    raises(TypeError, lambda: qprec.quantize(x, "nvfp4", rht="TE"), "rht='TE' (not a transform) is refused")
    for f in ("nvfp4-4o6-te", "nvfp4-4o6-te-mse"):
        check(qprec.quantize(x, f, block_2d=True).fmt == f + "-2d", f"{f}: block_2d=True is {f}-2d")
    path = os.path.join(WORK, "te.safetensors")
    tens = [(n, d, a) for n, d, a, _ in tensors_for_test(rng)]
    write_safetensors(path, tens)
    fmts = ["nvfp4", "nvfp4-4o6-te", "nvfp4-4o6-te-mse-2d"]
    p = subprocess.run([QERR, "--json", "--rht", "--rht-signs", "te", "--threads", "1", "--formats", ",".join(fmts),
                        path], capture_output=True, text=True)
    check(p.returncode == 0, f"qerr --rht-signs te: {p.stderr}")
    rows = []
    for n, _, _ in tens:
        v = dump(path)[n]
        for f in fmts:
            rows.append(dict(qprec.errors(v, f), tensor=n))
            if v.shape[-1] % 16 == 0:
                rows.append(dict(qprec.errors(v, f, rht="te"), tensor=n))
    check(qerr_json_text(path, rows) == p.stdout, "qerr --rht --rht-signs te is qprec.errors(rht='te'), byte for byte")
    p = subprocess.run([QERR, "--rht-signs", "tee", path], capture_output=True, text=True)
    check(p.returncode == 2 and "--rht-signs" in p.stderr and p.stderr.count("\n") == 1,
          "qerr --rht-signs tee: one line, exit 2")
    # nvfp4-row, TE's row_scaled_nvfp4: one decode scale per row, 1/S_r with S_r = min(2688/amax_r,
    # FLT_MAX) in float32; each row's bytes are plain nvfp4's of that row alone
    xr = (rng.standard_normal((6, 40)) * np.array([1e-3, 1, 50, 0, 1e4, 7])[:, None]).astype(F32)
    q = qprec.quantize(xr, "nvfp4-row")
    with np.errstate(divide="ignore"):
        S = np.minimum(F32(2688.0) / np.abs(xr).max(axis=1).astype(F32), np.finfo(F32).max).astype(F32)
    check(isinstance(q.tensor_scale, np.ndarray) and q.tensor_scale.tobytes() == (F32(1.0) / S).astype(F32).tobytes(),
          f"nvfp4-row: one decode scale per row, TE's 1/S_r: {q.tensor_scale}")
    for r in (0, 1, 2, 4, 5):
        p1 = qprec.quantize(xr[r:r + 1], "nvfp4")
        check(np.array_equal(p1.codes[0], q.codes[r]) and np.array_equal(p1.scales[0], q.scales[r]) and
              F32(p1.tensor_scale) == q.tensor_scale[r], f"nvfp4-row: row {r} is nvfp4 of that row alone")
    check(not np.array_equal(qprec.quantize(xr, "nvfp4").scales, q.scales), "nvfp4-row: not one scale per tensor")
    check(q.dequantize().tobytes() == qprec.qdq(xr, "nvfp4-row").tobytes(), "nvfp4-row: dequantize == qdq")
    check(qprec.format_info("nvfp4-row")["row_scaled"] and not qprec.format_info("nvfp4")["row_scaled"],
          "format_info: row_scaled")
    p = subprocess.run([QERR, "--json", "--threads", "1", "--formats", "nvfp4-row", path], capture_output=True,
                       text=True)
    check(p.returncode == 0, f"qerr --formats nvfp4-row: {p.stderr}")
    rows = [dict(qprec.errors(dump(path)[n], "nvfp4-row"), tensor=n) for n, _, _ in tens]
    check(qerr_json_text(path, rows) == p.stdout, "qerr --formats nvfp4-row is qprec.errors(..., 'nvfp4-row')")


def ue4m3_e8m0_f32(scales, name):
    """Decoded block scales from the stored ones, written here from qp_quant.h's layout."""
    if scales.dtype == np.float32:
        return scales.astype(np.float64), "f32"
    c = scales.astype(np.int64)
    if name.startswith("mx"):
        return np.where(c == 0xFF, np.nan, np.ldexp(1.0, c - 127)), "e8m0"
    m = c & 0x7F
    v = np.where(m < 8, m / 512.0, np.ldexp(1.0 + (m & 7) / 8.0, (m >> 3) - 7))
    return np.where(m == 0x7F, np.nan, v), "ue4m3"


def case_bstats():
    """errors()' per-block scale statistics equal those recomputed here from the scale
    codes quantize() returns (and the input), for every format with block scales."""
    import qprec
    rng = np.random.default_rng(23)
    xs = {"gauss": rng.standard_normal((48, 160)).astype(np.float32)}
    o = xs["gauss"].copy(); o[7, 9] = 3e7; o[20, 100] = np.nan; o[30, 3] = -np.inf; o[40, :40] = 0.0
    xs["outlier"] = o
    xs["tiny"] = (xs["gauss"] * np.float32(1e-38)).astype(np.float32)
    nfmt = 0
    bins = qprec.block_scale_bins()
    check(len(bins) == 279 and bins[2] == (2.0 ** -149, 2.0 ** -148) and bins[-1] == (2.0 ** 127, 2.0 ** 128),
          "block_scale_bins: zero, NaN, then one bin per binade 2^-149 .. 2^127")
    for f in qprec.formats():
        if f["block_cols"] <= 1:
            continue
        nfmt += 1
        for xn, x in xs.items():
            name = f["name"]
            e, q = qprec.errors(x, name), qprec.quantize(x, name)
            s, kind = ue4m3_e8m0_f32(q.scales, name)
            br, bc = f["block_rows"], f["block_cols"]
            hist = np.zeros(279, dtype=np.int64)
            logs, sat, under, rng_max = [], 0, 0, 0.0
            for i in range(s.shape[0]):
                for j in range(s.shape[1]):
                    v, code = s[i, j], q.scales[i, j]
                    blk = np.abs(x[i * br:(i + 1) * br, j * bc:(j + 1) * bc].astype(np.float64))
                    blk = blk[np.isfinite(blk) & (blk > 0)]
                    amax = blk.max() if blk.size else 0.0
                    if blk.size:
                        rng_max = max(rng_max, float(np.log2(amax / blk.min())))
                    if v == 0:
                        hist[0] += 1
                    elif np.isnan(v):
                        hist[1] += 1
                    else:
                        hist[np.frexp(v)[1] - 1 + 151] += 1
                        logs.append(np.log2(v))
                    sat += (kind == "ue4m3" and code & 0x7F == 0x7E) or (kind == "e8m0" and code == 0xFE)
                    under += amax > 0 and ((kind in ("ue4m3", "e8m0") and code & 0x7F == 0) or
                                           (kind == "f32" and v == np.float32(1.0) / np.float32(3.4028234663852886e38)))
            nb = s.size
            y = qprec.qdq(x, name)
            fin = np.isfinite(x) & (x != 0)
            what = f"{name} {xn}"
            check(e["block_scale_hist"] == hist.tolist() and hist.sum() == e["n_blocks"] == nb,
                  f"{what}: block_scale_hist from the scale codes, summing to n_blocks")
            std = float(np.std(logs)) if logs else float("nan")
            check((np.isnan(std) and np.isnan(e["block_scale_log2_std"])) or
                  abs(std - e["block_scale_log2_std"]) <= 1e-12 * max(1.0, std), f"{what}: block_scale_log2_std")
            check(e["block_scale_saturated_frac"] == sat / nb and e["block_scale_underflow_frac"] == under / nb,
                  f"{what}: saturated {e['block_scale_saturated_frac']} vs {sat / nb}, "
                  f"underflow {e['block_scale_underflow_frac']} vs {under / nb}")
            check(e["elems_flushed_frac"] == np.count_nonzero(fin & (y == 0)) / x.size, f"{what}: elems_flushed_frac")
            check(e["elems_saturated_frac"] == e["sat_frac"], f"{what}: elems_saturated_frac is sat_frac")
            check(abs(e["block_dynamic_range_max_log2"] - rng_max) <= 1e-12 * max(1.0, rng_max),
                  f"{what}: block_dynamic_range_max_log2")
    sat_seen = qprec.errors(xs["outlier"], "nvfp4")["block_scale_saturated_frac"] > 0
    under_seen = qprec.errors(xs["outlier"], "nvfp4")["block_scale_underflow_frac"] > 0
    check(sat_seen and under_seen, "the outlier saturates one NVFP4 scale and zeroes others")
    fp8 = qprec.errors(xs["gauss"], "fp8-e4m3")
    check(fp8["n_blocks"] == 0 and not any(fp8["block_scale_hist"]) and np.isnan(fp8["block_scale_log2_std"]),
          "a per-tensor format has no block statistics")
    print(f"bstats: {nfmt} block formats x {len(xs)} tensors")


def main():
    os.makedirs(WORK, exist_ok=True)
    {"exact": case_exact, "codes": case_codes, "import": case_import, "extras": case_extras, "torch": case_torch,
     "doctest": case_doctest, "install": case_install, "te": case_te, "bstats": case_bstats}[CASE]()
    return check.summary(f"test_python {CASE}")


if __name__ == "__main__":
    sys.exit(main())
