#!/usr/bin/python3
"""test_convert.py -- io/ conversions to float32 against numpy, bit for bit.

  test_convert.py TENSOR_DUMP WORKDIR

Writes a safetensors file (every F16 and every BF16 bit pattern, F32 and
F64 specials, 0-d/1-d/3-d shapes) and an HDF5 file (float16 of every
pattern in both byte orders, float32, float64, a scalar, nested groups,
integer and string datasets), reads each with tensor_dump (the io/ readers),
and compares the float32 it produced with numpy:
  F16  -> numpy float16.astype(float32)   (exact, NaN payloads included)
  BF16 -> bits << 16                      (exact)
  F32  -> unchanged bits
  F64  -> numpy float64.astype(float32)   (round to nearest, overflow to inf)
Prints "N passed, M failed"; exit status 1 on any failure.
"""
import os
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks, write_safetensors  # noqa: E402

check = Checks()


def dump(tool, path, workdir):
    out = os.path.join(workdir, os.path.basename(path) + ".f32")
    p = subprocess.run([tool, path, out], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"tensor_dump {path} failed: {p.stderr}")
    data = np.fromfile(out, dtype="<u4")
    tensors = {}
    for line in p.stdout.splitlines():
        f = line.split(" ")
        off, numel, rows, cols, dtype, ndim = int(f[0]), int(f[1]), int(f[2]), int(f[3]), f[4], int(f[5])
        shape = tuple(int(x) for x in f[6:6 + ndim])
        name = " ".join(f[6 + ndim:])
        tensors[name] = dict(bits=data[off:off + numel], rows=rows, cols=cols, dtype=dtype, shape=shape)
    return tensors, p.stderr


def f32_bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).reshape(-1).view(np.uint32)


def same_bits(got, want, what):
    bad = np.count_nonzero(got != want) if got.shape == want.shape else -1
    check(bad == 0, f"{what}: {bad} of {want.size} values differ (-1: size {got.size} vs {want.size})")


def main():
    tool, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    patterns = np.arange(65536, dtype=np.uint16)
    rng = np.random.default_rng(7)

    f32 = np.concatenate([rng.standard_normal(1000).astype(np.float32),
                          np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4028235e38], np.float32)])
    f64 = np.concatenate([rng.standard_normal(1000) * 10.0 ** rng.integers(-50, 50, 1000),
                          [1e39, -1e39, 3.4028235677973366e38, 3.4028235677973362e38, 1e-46, 7e-46,
                           1.4e-45, 0.5 + 2.0 ** -25, 1.0 + 2.0 ** -24, 1.0 + 3 * 2.0 ** -24, np.inf, -0.0]])

    # --- safetensors ---
    st = os.path.join(workdir, "convert.safetensors")
    write_safetensors(st, [
        ("f16_all", "F16", patterns.view("<f2").reshape(256, 256)),
        ("bf16_all", "BF16", patterns.astype("<u2").reshape(16, 64, 64)),
        ("f32", "F32", f32.astype("<f4")),
        ("f64", "F64", f64.astype("<f8")),
        ("scalar", "F32", np.array(2.5, "<f4")),
        ("ids", "I64", np.arange(3, dtype="<i8")),
    ])
    got, notes = dump(tool, st, workdir)
    check(sorted(got) == ["bf16_all", "f16_all", "f32", "f64", "scalar"], f"safetensors tensors {sorted(got)}")
    check("tensor 'ids': dtype I64 is not read, skipped" in notes, f"I64 note: {notes!r}")
    with np.errstate(over="ignore"):
        want = {
            "f16_all": f32_bits(patterns.view(np.float16).astype(np.float32)),
            "bf16_all": (patterns.astype(np.uint32) << 16),
            "f32": f32_bits(f32),
            "f64": f32_bits(f64.astype(np.float32)),
            "scalar": f32_bits(np.float32(2.5)),
        }
    shapes = {"f16_all": (256, 256, 65536, "F16"), "bf16_all": (1024, 64, 16 * 64 * 64, "BF16"),
              "f32": (1, f32.size, f32.size, "F32"), "f64": (1, f64.size, f64.size, "F64"),
              "scalar": (1, 1, 1, "F32")}
    for name, w in want.items():
        if name in got:
            same_bits(got[name]["bits"], w, f"safetensors {name}")
            rows, cols, numel, dt = shapes[name]
            g = got[name]
            check((g["rows"], g["cols"], g["bits"].size, g["dtype"]) == (rows, cols, numel, dt),
                  f"{name}: rows/cols/numel/dtype {g['rows'], g['cols'], g['bits'].size, g['dtype']}")
    check(got.get("bf16_all", {}).get("shape") == (16, 64, 64), "3-d shape kept")
    check(got.get("scalar", {}).get("shape") == (), "0-d shape kept")

    # --- HDF5 ---
    h5 = os.path.join(workdir, "convert.h5")
    with h5py.File(h5, "w") as f:
        f["f16_le"] = patterns.view("<f2").reshape(256, 256)
        f["f16_be"] = patterns.view("<f2").astype(">f2")
        f["grp/sub/f32_be"] = f32.astype(">f4").reshape(1, -1)
        f["grp/f64"] = f64
        f["scalar"] = np.float64(-1.25)
        f["ints"] = np.arange(4, dtype=np.int32)
        f["strs"] = np.array([b"ab", b"cd"])
        f["empty"] = np.zeros((0, 3), np.float32)
        f.attrs["ignored"] = 1
    got, notes = dump(tool, h5, workdir)
    check(list(got) == ["/empty", "/f16_be", "/f16_le", "/grp/f64", "/grp/sub/f32_be", "/scalar"],
          f"HDF5 tensors in name order: {list(got)}")
    check("dataset '/ints' is not floating point (integer), skipped" in notes, f"int note: {notes!r}")
    check("dataset '/strs' is not floating point (string), skipped" in notes, f"string note: {notes!r}")
    with np.errstate(over="ignore"):
        f16_want = f32_bits(patterns.view(np.float16).astype(np.float32))
        if "/f16_le" in got:
            same_bits(got["/f16_le"]["bits"], f16_want, "HDF5 float16 LE")
            check(got["/f16_le"]["dtype"] == "F16", "HDF5 float16 dtype")
        if "/f16_be" in got:
            same_bits(got["/f16_be"]["bits"], f16_want, "HDF5 float16 BE")
        if "/grp/sub/f32_be" in got:
            same_bits(got["/grp/sub/f32_be"]["bits"], f32_bits(f32), "HDF5 float32 BE")
            check(got["/grp/sub/f32_be"]["rows"] == 1 and got["/grp/sub/f32_be"]["cols"] == f32.size, "2-d shape")
        if "/grp/f64" in got:
            same_bits(got["/grp/f64"]["bits"], f32_bits(f64.astype(np.float32)), "HDF5 float64")
            check(got["/grp/f64"]["dtype"] == "F64", "HDF5 float64 dtype")
        if "/scalar" in got:
            s = got["/scalar"]
            check(s["shape"] == () and s["rows"] == 1 and s["cols"] == 1, "HDF5 scalar is 1 x 1")
            same_bits(s["bits"], f32_bits(np.float32(-1.25)), "HDF5 scalar")
        if "/empty" in got:
            check(got["/empty"]["bits"].size == 0 and got["/empty"]["rows"] == 0 and got["/empty"]["cols"] == 3,
                  "HDF5 empty dataset")

    return check.summary("test_convert")


if __name__ == "__main__":
    sys.exit(main())
