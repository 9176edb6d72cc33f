#!/usr/bin/env python3
"""test_review.py — every qplot figure kind drawn as PNG from a small sweep, for a person to look at.

    test_review.py QTRAIN QPLOT WORKDIR

Trains a tiny sweep (bf16, fp8, nvfp4, mxfp4 x 2 seeds, 40 steps of a 2-block GPT on a generated
corpus: a few seconds) into WORKDIR/sweep/runs, asks qplot for its figure kinds (`qplot kinds`: the
table qplot draws from, so a new kind is covered without touching this file), draws them all with
`qplot all WORKDIR/sweep`, and checks each WORKDIR/sweep/fig/KIND.png is a whole PNG — signature,
every chunk's CRC, the image data inflating to exactly the size the header promises, valid
scanline filters — that is not blank: at least 5% of its rows hold ink, in more than one colour;
and that QP_PNG_DPI sets the PNG's resolution (a bad value: one line, exit 2).
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


def png_check(path):
    """(inked share of rows, distinct colours seen) of an 8-bit truecolour PNG, every chunk checked;
    raises ValueError on anything malformed. The image data must inflate to exactly the size the
    header promises, every scanline naming a valid filter (PNG spec, section 9). Ink without
    decoding every pixel (pure Python would take seconds per figure): a one-colour image filters
    to constant scanlines — past the first pixel every filter's residue is one value — so a row
    whose residues vary holds ink. Colours: rows filtered with None or Sub decode on their own (no
    previous row needed), exactly."""
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
    inked, colours, decoded = 0, set(), 0
    for y in range(h):
        ft, line = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        if ft > 4:
            raise ValueError(f"row {y}: unknown filter {ft}")
        inked += len(set(line[bpp:])) > 1
        if ft in (0, 1) and decoded < 40 and len(colours) < 64:
            px = bytearray(line)
            if ft == 1:
                for i in range(bpp, stride):
                    px[i] = (px[i] + px[i - bpp]) & 255
            colours.update(bytes(px[i:i + bpp]) for i in range(0, stride, bpp))
            decoded += 1
    return inked / h, len(colours)


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
            share, colours = png_check(png)
        except (ValueError, zlib.error) as e:
            check(False, f"{k}.png: not a valid PNG: {e}")
            continue
        check(share >= 0.05 and colours >= 2,
              f"{k}.png: blank ({100 * share:.1f}% of rows inked, {colours} colour(s))")
        print(f"{k}.png: {os.path.getsize(png)} bytes, {100 * share:.0f}% of rows inked, {colours} colours seen")
    print(f"figures for review: {os.path.join(SWEEP, 'fig')}")
    # QP_PNG_DPI (a web page's figure, scripts/readme_figure.sh): half the dots of the default 300 each way
    runs = sorted(os.path.join(SWEEP, "runs", f) for f in os.listdir(os.path.join(SWEEP, "runs"))
                  if not f.endswith(".ckpt.h5"))
    half = os.path.join(WORK, "half", "loss.png")
    os.makedirs(os.path.dirname(half), exist_ok=True)
    p = subprocess.run([QPLOT, "loss"] + runs + ["-o", half], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, QP_PNG_DPI="150"))
    if check(p.returncode == 0 and p.stderr == "", f"QP_PNG_DPI=150: exit {p.returncode}: {p.stderr}"):
        size = {}
        for f in (half, os.path.join(SWEEP, "fig", "loss.png")):
            with open(f, "rb") as fh:
                size[f] = struct.unpack(">II", fh.read(24)[16:24])
        (w1, h1), (w2, h2) = size[half], size[os.path.join(SWEEP, "fig", "loss.png")]
        check(abs(2 * w1 - w2) <= 1 and abs(2 * h1 - h2) <= 1, f"QP_PNG_DPI=150: {w1}x{h1}, at 300 dpi {w2}x{h2}")
    p = subprocess.run([QPLOT, "loss"] + runs + ["-o", half], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, QP_PNG_DPI="96x"))
    check(p.returncode == 2 and p.stderr.count("\n") == 1 and "QP_PNG_DPI '96x'" in p.stderr,
          f"QP_PNG_DPI=96x: exit {p.returncode}, {p.stderr!r}")
    sys.exit(check.summary("plots_review"))


if __name__ == "__main__":
    main()
