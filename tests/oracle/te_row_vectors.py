#!/usr/bin/env python3
"""te_row_vectors.py — derives, from the arithmetic of Transformer Engine's
row-scaled NVFP4 reference (transformer_engine/pytorch/custom_recipes/
reference_nvfp4.py at d0067d0; read, not copied: row amax lines 879-888,
second-level scale lines 708-730, block scale and encode lines 744-769, the
E2M1 bins of cast_to_fp4x2 lines 49-71), the bytes tests/te_row_vectors.h
holds for test_te_parity.c's row-scaled inputs. Every step is one float32
operation in TE's order (numpy float32 scalars, no fused multiply-add):

  amax_r = max |x| over row r, NaN and Inf included (torch.max propagates NaN)
  S_r    = min(6*448 / amax_r, FLT_MAX), 1 where that is 0   (NaN stays NaN)
  Sinv_r = 1 / S_r
  t      = amax_b * (S_r * fl(1/6))        amax_b over the 1x16 block, NaN/Inf in
  d_b    = e4m3(clamp(min(t, FLT_MAX), -448, 448))   round to nearest even
  e_b    = min(1 / (d_b * Sinv_r), FLT_MAX)
  code   = TE's bins of clamp(x * e_b, -6, 6); NaN falls in no bin: 0

Run it to print the header's body: python3 tests/oracle/te_row_vectors.py;
with --check FILE it exits 1 unless FILE (after its opening comment) is that
body (the oracle_te_row_vectors test).
"""
import sys

import numpy as np

F32 = np.float32
FMAX = F32(np.finfo(F32).max)
ROWS, COLS = 8, 32


def inputs():
    """The rows (see te_row_vectors.h's comment for what each one tests)."""
    x = np.zeros((ROWS, COLS), dtype=F32)
    base = [6.0, -3.0, 1.5, 0.7, -0.3, 2.2, 4.6, -5.2, 0.1, -1.1, 3.3, 0.55, -2.7, 1.9, 0.26, -0.8]
    small = [0.75, -0.5, 0.3, 0.12, -0.6, 0.05, 0.2, -0.7, 0.44, 0.33, -0.21, 0.66, 0.01, -0.09, 0.5, 0.38]
    x[0, :16], x[0, 16:] = base, small                              # amax 6: S = 448
    x[1] = x[0] * F32(1024.0)                                       # the same row 2^10 larger
    x[2, 5] = -0.0                                                  # a zero row (one -0.0)
    x[3, :16], x[3, 16:] = base, small
    x[3, 3] = F32(2.0 ** 40)                                        # one huge outlier
    x[4, :16], x[4, 16:] = base, small
    x[4, 5] = np.nan                                                # NaN
    x[5, :16], x[5, 16:] = base, small
    x[5, 2], x[5, 20] = np.inf, -np.inf                             # +Inf, -Inf
    x[6, :16], x[6, 16:] = small, base                              # amax 6 in the second block
    x[6] *= F32(5.0 / 6.0)
    x[7, :16] = [v * 1e-3 for v in base]                            # amax 6e-3, second block zero
    return x.astype(F32)


def e4m3(t):
    """Round a finite t in [0, 448] to E4M3, nearest even (subnormal step 2^-9)."""
    if t == 0:
        return F32(0.0)
    e = max(int(np.floor(np.log2(t))), -6)
    ulp = F32(2.0 ** (e - 3))
    return F32(np.round(t / ulp) * ulp)


def e4m3_code(d):
    if np.isnan(d):
        return 0x7F
    for c in range(0x7F):
        e, m = c >> 3, c & 7
        v = m * 2.0 ** -9 if e == 0 else (8 + m) * 2.0 ** (e - 10)
        if v == d:
            return c
    raise ValueError(d)


def fp4_bin(v):
    """TE's cast_to_fp4x2 bins (lines 49-71), one value; NaN: no bin, 0."""
    if v >= 0.0 and v <= 0.25: return 0
    if v > 0.25 and v < 0.75: return 1
    if v >= 0.75 and v <= 1.25: return 2
    if v > 1.25 and v < 1.75: return 3
    if v >= 1.75 and v <= 2.5: return 4
    if v > 2.5 and v < 3.5: return 5
    if v >= 3.5 and v <= 5.0: return 6
    if v > 5.0: return 7
    if v >= -0.25 and v < -0.0: return 8
    if v < -0.25 and v > -0.75: return 9
    if v <= -0.75 and v >= -1.25: return 10
    if v < -1.25 and v > -1.75: return 11
    if v <= -1.75 and v >= -2.5: return 12
    if v < -2.5 and v > -3.5: return 13
    if v <= -3.5 and v >= -5.0: return 14
    if v < -5.0: return 15
    return 0


def quantize_row(row):
    with np.errstate(all="ignore"):
        amax = F32(np.max(np.abs(row)))                    # NaN propagates
        S = F32(F32(6.0 * 448.0) / amax)
        S = S if np.isnan(S) else min(S, FMAX)
        S = F32(1.0) if S == 0 else S
        Sinv = F32(F32(1.0) / S)
        mult = F32(S * F32(F32(1.0) / F32(6.0)))
        codes, scales = [], []
        for b in range(COLS // 16):
            blk = row[16 * b:16 * b + 16]
            ab = F32(np.max(np.abs(blk)))
            t = F32(ab * mult)
            t = t if np.isnan(t) else min(t, FMAX)
            t = t if np.isnan(t) else F32(min(max(t, F32(-448.0)), F32(448.0)))
            d = F32(np.nan) if np.isnan(t) else e4m3(t)
            scales.append(e4m3_code(d))
            e = F32(F32(1.0) / F32(d * Sinv))
            e = e if np.isnan(e) else min(e, FMAX)
            for v in blk:
                s = F32(v * e)
                s = s if np.isnan(s) else F32(min(max(s, F32(-6.0)), F32(6.0)))
                codes.append(fp4_bin(s))
    packed = bytes(codes[i] | codes[i + 1] << 4 for i in range(0, COLS, 2))
    return packed, bytes(scales), Sinv


def body():
    x = inputs()
    out = ["#define TE_ROW_ROWS %d\n#define TE_ROW_COLS %d" % (ROWS, COLS),
           "static const uint32_t te_row_x[TE_ROW_ROWS * TE_ROW_COLS] = {"]
    bits = x.view(np.uint32).reshape(-1)
    for r in range(ROWS):
        out.append("    " + ", ".join("0x%08Xu" % b for b in bits[r * COLS:(r + 1) * COLS]) + ",")
    out.append("};")
    cs, ss, inv = [], [], []
    for r in range(ROWS):
        c, s, i = quantize_row(x[r])
        cs.append(c.hex()), ss.append(s.hex()), inv.append(i)
    out.append("static const char *const te_row_codes[TE_ROW_ROWS] = {" + ", ".join('"%s"' % c for c in cs) + "};")
    out.append("static const char *const te_row_scales[TE_ROW_ROWS] = {" + ", ".join('"%s"' % s for s in ss) + "};")
    out.append("static const uint32_t te_row_scale_inv[TE_ROW_ROWS] = {" +
               ", ".join("0x%08Xu" % int(np.array(i, dtype=F32).view(np.uint32)) for i in inv) + "};")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) == 3 and argv[1] == "--check":
        text = open(argv[2]).read()
        held = text[text.index("*/\n") + 3:]
        if held != body():
            print(f"te_row_vectors.py: {argv[2]} is not what the derivation gives (rerun it)", file=sys.stderr)
            return 1
        print("te_row_vectors: the header is the derivation's")
        return 0
    sys.stdout.write(body())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
