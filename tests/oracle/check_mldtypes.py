#!/usr/bin/python3
"""check_mldtypes.py -- qprec's element codecs E4M3, E2M1, E2M3, E3M2 and the
E8M0 scale codec against ml_dtypes (PyPI: float8_e4m3fn, float4_e2m1fn,
float6_e2m3fn, float6_e3m2fn, float8_e8m0fnu), which implements them from the
OCP specifications independently of CUDA and of qprec.

  check_mldtypes.py CODEC_DUMP

Inputs: every representable value of each format with both signs, its float32
neighbours (nextafter up and down), the midpoints between neighbouring values
and their float32 neighbours (the round-to-nearest-even ties), values beyond
the largest finite one, float32 subnormals, zeros, infinities and NaN.

Checked for every input:
  * round to nearest even: qprec's code and its decoded value equal ml_dtypes'
    cast wherever ml_dtypes' result is finite;
  * where they differ by design (documented in qp_format.h): ml_dtypes turns
    NaN into -0 for the formats without NaN (qprec, like CUDA's cvt: the
    positive maximum) and E4M3 overflow into NaN (qprec saturates, as
    __NV_SATFINITE and the MX spec's conversions do): qprec must give exactly
    the CUDA result there;
  * every code decodes to ml_dtypes' value (bit for bit, NaN as NaN);
  * E8M0: every code's value; qprec's encoders round down (the OCP rule's
    floor) and up (the round-up rule) to the largest ml_dtypes value <= x and
    the smallest >= x, clamped to [2^-127, 2^127], NaN/Inf -> 0xFF.
Exits 1 on any disagreement, 2 if codec_dump cannot run.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import ml_dtypes
except ImportError:
    print("FAIL: ml_dtypes is not installed (scripts/setup.sh installs it)", file=sys.stderr)
    sys.exit(2)

F32 = np.float32
FORMATS = [  # name, ml_dtypes type, bits, qprec's code of NaN, NaN-free (saturating "fn" without NaN)
    ("e4m3", ml_dtypes.float8_e4m3fn, 8, 0x7F, False),
    ("e2m1", ml_dtypes.float4_e2m1fn, 4, 0x7, True),
    ("e2m3", ml_dtypes.float6_e2m3fn, 6, 0x1F, True),
    ("e3m2", ml_dtypes.float6_e3m2fn, 6, 0x1F, True),
]


def grid(t, bits):
    codes = np.arange(1 << bits, dtype=np.uint8)
    return codes, codes.view(t).astype(np.float64)


def neighbourhood(values):
    v = np.unique(np.abs(values[np.isfinite(values)]))
    mids = (v[1:] + v[:-1]) / 2
    with np.errstate(over="ignore"):
        pts = np.concatenate([v, mids, v * 1.5, v[-1:] * 2, v[-1:] * 1e6]).astype(F32)
    up, down = np.nextafter(pts, F32(np.inf)), np.nextafter(pts, F32(0))
    pts = np.concatenate([pts, up, down])
    extra = np.array([0.0, np.inf, np.nan, 1e-45, 1e-40, 1.1754942e-38, 3.4028235e38], F32)
    pts = np.concatenate([pts, extra])
    return np.concatenate([pts, -pts]).astype(F32)


def main(argv):
    dump = argv[1]
    inputs = []
    for _, t, bits, _, _ in FORMATS:
        inputs.append(neighbourhood(grid(t, bits)[1]))
    e8 = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    inputs.append(neighbourhood(e8))
    x = np.concatenate(inputs).astype(F32)
    with tempfile.TemporaryDirectory() as d:
        fin, fout = os.path.join(d, "in.f32"), os.path.join(d, "out.bin")
        x.tofile(fin)
        p = subprocess.run([dump, fin, fout], stderr=subprocess.PIPE, text=True)
        if p.returncode:
            print(f"FAIL: {dump} exited {p.returncode}: {p.stderr}", file=sys.stderr)
            return 2
        raw = np.fromfile(fout, dtype=np.uint8)
    n = x.size
    codes = raw[: 6 * n].reshape(n, 6)
    dec = raw[6 * n:].view(F32).reshape(5, 256).astype(np.float64)
    errors = []
    for k, (name, t, bits, nan_code, nan_free) in enumerate(FORMATS):
        c_q = codes[:, k]
        ml = x.astype(t)
        ml_code = np.array(ml).view(np.uint8) & ((1 << bits) - 1)
        ml_val = ml.astype(np.float64)
        qv = dec[k][c_q]
        fin = np.isfinite(ml_val) & ~np.isnan(x)
        bad = np.nonzero(fin & ((c_q != ml_code) | (np.signbit(qv) != np.signbit(ml_val)) | (qv != ml_val)))[0]
        for i in bad[:5]:
            errors.append(f"{name}: x={x[i]!r} qprec code {c_q[i]:#x} ({qv[i]!r}), ml_dtypes {ml_code[i]:#x} ({ml_val[i]!r})")
        vmax = np.max(grid(t, bits)[1][np.isfinite(grid(t, bits)[1])])
        # by design: NaN -> CUDA's code; overflow (ml_dtypes NaN for E4M3) -> +-max
        nan_in = np.isnan(x)
        if not np.all(c_q[nan_in] == nan_code):
            errors.append(f"{name}: NaN does not encode as {nan_code:#x}")
        over = ~fin & ~nan_in
        if not np.all(np.abs(qv[over]) == vmax) or not np.all(np.signbit(qv[over]) == np.signbit(x[over])):
            errors.append(f"{name}: inputs ml_dtypes cannot represent do not saturate to +-{vmax}")
        # decoding every code
        cs, gv = grid(t, bits)
        dq = dec[k][cs]
        same = (dq == gv) | (np.isnan(dq) & np.isnan(gv))
        same &= (np.signbit(dq) == np.signbit(gv)) | np.isnan(gv)  # NaN: any sign
        if not np.all(same):
            i = int(np.nonzero(~same)[0][0])
            errors.append(f"{name}: code {i:#x} decodes to {dq[i]!r}, ml_dtypes {gv[i]!r}")
        print(f"{name:5s} {n:7d} inputs: {int(np.count_nonzero(fin))} compared with ml_dtypes' RNE cast, "
              f"{int(np.count_nonzero(over))} saturated, {int(np.count_nonzero(nan_in))} NaN; "
              f"{len(cs)} codes decoded")
    # E8M0
    dq = dec[4]
    same = (dq == e8) | (np.isnan(dq) & np.isnan(e8))
    if not np.all(same):
        errors.append(f"e8m0: code {int(np.nonzero(~same)[0][0]):#x} decodes differently from ml_dtypes")
    vals = e8[:255]                                     # codes 0..254, increasing
    fin = np.isfinite(x)
    pos = fin & (x > 0)
    xf = x.astype(np.float64)
    floor_want = np.clip(np.searchsorted(vals, xf, side="right") - 1, 0, 254)
    ceil_want = np.clip(np.searchsorted(vals, xf, side="left"), 0, 254)
    for col, want, what in ((4, floor_want, "down"), (5, ceil_want, "up")):
        got = codes[:, col]
        bad = np.nonzero(pos & (got != want))[0]
        for i in bad[:5]:
            errors.append(f"e8m0 rounded {what}: x={x[i]!r} qprec {got[i]:#x}, ml_dtypes grid {want[i]:#x}")
        if not np.all(got[~fin] == 0xFF) or not np.all(got[fin & ~pos] == 0):
            errors.append(f"e8m0 rounded {what}: NaN/Inf -> 0xFF and x <= 0 -> 0 violated")
    print(f"e8m0  {n:7d} inputs: floor and ceil against ml_dtypes' value grid on {int(np.count_nonzero(pos))}; "
          f"256 codes decoded")
    for e in errors:
        print("DISAGREE:", e)
    print("PASS" if not errors else f"FAIL: {len(errors)} disagreement(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
