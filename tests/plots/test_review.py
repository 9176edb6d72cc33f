#!/usr/bin/env python3
"""test_review.py — every qplot figure kind drawn as PNG from a small sweep, for a person to look at.

    test_review.py QTRAIN QPLOT WORKDIR

Trains a tiny sweep (bf16, fp8, nvfp4, mxfp4 x 2 seeds, 40 steps of a 2-block GPT on a generated
corpus: a few seconds) into WORKDIR/sweep/runs, asks qplot for its figure kinds (`qplot kinds`: the
table qplot draws from, so a new kind is covered without touching this file), draws them all with
`qplot all WORKDIR/sweep`, and checks each WORKDIR/sweep/fig/KIND.png is a whole PNG — signature,
every chunk's CRC, the image data inflating to exactly the size the header promises — that is not
blank: the unfiltered pixels hold ink (at least 0.5% non-background) in more than one colour.
The PNGs stay in WORKDIR/sweep/fig for review. Exit status 1 if any check failed."""
import os
import random
import shutil
import struct
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks  # noqa: E402

QTRAIN, QPLOT, WORK = map(os.path.abspath, sys.argv[1:4])
check = Checks()
SWEEP = os.path.join(WORK, "sweep")
RECIPES = ("bf16", "fp8", "nvfp4", "mxfp4")  # nvfp4 keeps its last block in BF16: the qerr figure's label
SEEDS = (1, 2)


def png_pixels(path):
    """(width, height, rows of RGB(A) tuples' bytes) of an 8-bit truecolour PNG, every chunk checked;
    raises ValueError on anything malformed."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("no PNG signature")
    pos, chunks = 8, []
    while pos < len(b):
        if pos + 12 > len(b):
            raise ValueError("truncated chunk")
        n, kind = struct.unpack(">I4s", b[pos:pos + 8])
        data = b[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", b[pos + 8 + n:pos + 12 + n])
        if len(data) != n or zlib.crc32(kind + data) != crc:
            raise ValueError(f"chunk {kind!r}: bad length or CRC")
        chunks.append((kind, data))
        pos += 12 + n
    if chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        raise ValueError("IHDR not first or IEND not last")
    w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"not 8-bit non-interlaced RGB(A): depth {depth}, colour type {ctype}")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(d for k, d in chunks if k == b"IDAT"))
    stride = w * bpp
    if len(raw) != h * (stride + 1):
        raise ValueError(f"image data {len(raw)} bytes, the header promises {h * (stride + 1)}")
    rows, prev = [], bytearray(stride)
    for y in range(h):  # undo the scanline filters (PNG spec, section 9)
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            c = prev[i - bpp] if i >= bpp else 0
            up = prev[i]
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + up) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + up) // 2) & 255
            elif ft == 4:
                p = a + up - c
                pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
            elif ft != 0:
                raise ValueError(f"row {y}: unknown filter {ft}")
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def ink(path):
    """(share of pixels unlike the corner's background, distinct colours) of a PNG."""
    w, h, bpp, rows = png_pixels(path)
    bg = rows[0][:bpp]
    other, colours = 0, set()
    for r in rows[::2]:  # every other row: plenty for a share, half the time
        for x in range(0, w * bpp, bpp):
            px = r[x:x + bpp]
            if px != bg:
                other += 1
                if len(colours) < 64:
                    colours.add(px)
    return other / (w * ((h + 1) // 2)), len(colours)


def make_sweep():
    shutil.rmtree(WORK, ignore_errors=True)
    runs = os.path.join(SWEEP, "runs")
    os.makedirs(runs)
    rng = random.Random(11)
    words = "the king and queen of a small town said that we shall go to see her father now".split()
    with open(os.path.join(WORK, "corpus.txt"), "w") as f:
        f.write("\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))).capitalize() + "."
                          for _ in range(3000)))
    for r in RECIPES:
        for s in SEEDS:
            cmd = [QTRAIN, "--data", os.path.join(WORK, "corpus.txt"), "--layers", "2", "--heads", "2", "--dim", "32",
                   "--seq", "16", "--batch", "4", "--steps", "40", "--warmup", "5", "--eval-every", "20",
                   "--eval-batches", "2", "--qerr-every", "10", "--threads", "1", "--recipe", r, "--seed", str(s),
                   "--quiet", "--out", os.path.join(runs, f"recipe={r}_seed={s}.h5")]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            check(p.returncode == 0, f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr}")


def main():
    make_sweep()
    p = subprocess.run([QPLOT, "kinds"], capture_output=True, text=True, timeout=30)
    kinds = p.stdout.split()
    check(p.returncode == 0 and p.stderr == "" and "loss" in kinds and len(set(kinds)) == len(kinds),
          f"qplot kinds: exit {p.returncode}, {kinds} {p.stderr!r}")
    p = subprocess.run([QPLOT, "all", SWEEP], capture_output=True, text=True, timeout=300)
    check(p.returncode == 0 and p.stderr == "", f"qplot all: exit {p.returncode}: {p.stderr}")
    for k in kinds:
        png = os.path.join(SWEEP, "fig", f"{k}.png")
        if not check(os.path.exists(png), f"{k}: no {png}"):
            continue
        try:
            share, colours = ink(png)
        except (ValueError, zlib.error) as e:
            check(False, f"{k}.png: not a valid PNG: {e}")
            continue
        check(share >= 0.005 and colours >= 2, f"{k}.png: blank ({100 * share:.2f}% ink, {colours} colour(s))")
        print(f"{k}.png: {os.path.getsize(png)} bytes, {100 * share:.1f}% ink, {colours}+ colours")
    print(f"figures for review: {os.path.join(SWEEP, 'fig')}")
    sys.exit(check.summary("plots_review"))


if __name__ == "__main__":
    main()
