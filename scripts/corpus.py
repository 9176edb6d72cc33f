#!/usr/bin/env python3
"""corpus.py — the English corpus of the shipped studies, assembled from
texts that Debian packages ship, with a manifest and the sha256 of every part.

    scripts/corpus.py build [--out DIR] [--cache DIR] [--any-version]
    scripts/corpus.py check [DIR]

build: fetches the packages below with `apt-get download` (nothing is
installed; the .deb files land in --cache, default DIR/debs), extracts them
with dpkg-deb, turns each into plain UTF-8 text (DIR/parts/NAME.txt), and
writes DIR/english.txt: the first 90% of every part (cut after a newline),
then the last 10% of every part — so qtrain's validation split (the last 10%
of the file, --val-frac 0.1) holds a tenth of each part, not of the last
one — and
writes DIR/MANIFEST.tsv: per part the package, its version, the bytes and the
sha256 of the part; the last row is the joined corpus. The parts' hashes must
equal the pinned ones in scripts/english_corpus.tsv (the corpus every shipped
number was measured on): a different package version that changes a part is
an error unless --any-version is given.

check: recomputes the sha256 of every part and of english.txt and compares
them with DIR/MANIFEST.tsv and with the pinned manifest. Exit 0 when all
agree; 2 with one line naming the first part that does not.

Parts (about 12.5 MB of running English, byte tokens):
  austen    r-cran-janeaustenr  Jane Austen's six novels (Project Gutenberg
                                texts, stored as R character vectors: read
                                here from R's serialization format)
  kjv       bible-kjv-text      the King James Bible, printed by the
            + bible-kjv         package's own reader (80 columns)
  jargon    jargon-text         the Jargon File 4.4.7
  fortunes  fortunes-min,       fortune(6)'s collections (text files only)
            fortunes
"""
import argparse
import glob
import gzip
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
PINNED = os.path.join(HERE, "english_corpus.tsv")
CORPUS = "english.txt"
VAL_FRAC = 0.1  # qtrain's default --val-frac
COLUMNS = ["part", "packages", "versions", "bytes", "sha256"]


def die(msg, code=2):
    print(f"corpus.py: {msg}", file=sys.stderr)
    sys.exit(code)


# ---- R's serialization format (only what a character vector needs) ------------
def r_strings(blob):
    """The elements of a serialized R character vector (XDR format, version 2
    or 3), as a list of str ('' for NA)."""
    if blob[:2] != b"X\n":
        raise ValueError("not an XDR-serialized R object")
    p = 2
    version, _, _ = struct.unpack(">iii", blob[p:p + 12])
    p += 12
    if version == 3:
        (n,) = struct.unpack(">i", blob[p:p + 4])
        p += 4 + n  # native encoding name
    elif version != 2:
        raise ValueError(f"R serialization version {version}")
    flags, length = struct.unpack(">ii", blob[p:p + 8])
    p += 8
    if flags & 0xFF != 16:  # STRSXP
        raise ValueError(f"object type {flags & 0xFF}, not a character vector")
    out = []
    for _ in range(length):
        f, n = struct.unpack(">ii", blob[p:p + 8])
        p += 8
        if f & 0xFF != 9:  # CHARSXP
            raise ValueError(f"element type {f & 0xFF}, not a string")
        if n < 0:
            out.append("")
            continue
        out.append(blob[p:p + n].decode("utf-8"))
        p += n
    return out


def r_lazyload_objects(rdb):
    """Every object of an R lazy-load database (.rdb): 4-byte big-endian
    length, then a zlib stream, one after the other."""
    pos, objs = 0, []
    while pos < len(rdb):
        (ulen,) = struct.unpack(">I", rdb[pos:pos + 4])
        d = zlib.decompressobj()
        out = d.decompress(rdb[pos + 4:])
        if len(out) != ulen:
            raise ValueError(f"object at {pos}: {len(out)} bytes, header says {ulen}")
        pos = len(rdb) - len(d.unused_data)
        objs.append(out)
    return objs


# ---- the parts ------------------------------------------------------------------------
def part_austen(root):
    rdb = os.path.join(root, "usr/lib/R/site-library/janeaustenr/data/Rdata.rdb")
    with open(rdb, "rb") as f:
        objs = r_lazyload_objects(f.read())
    return "\n\n".join("\n".join(r_strings(o)) for o in objs) + "\n"


def part_kjv(root):
    env = dict(os.environ, COLUMNS="80", LC_ALL="C")
    out = subprocess.run([os.path.join(root, "usr/bin/bible"), "-p", os.path.join(root, "usr/lib"), "-l80",
                          "Gen1:1-Rev22:21"], stdin=subprocess.DEVNULL, capture_output=True, env=env, check=True)
    return out.stdout.decode("utf-8")


def part_jargon(root):
    with gzip.open(os.path.join(root, "usr/share/doc/jargon-text/jargon.txt.gz")) as f:
        return f.read().decode("latin-1")


def part_fortunes(root):
    files = sorted(p for p in glob.glob(os.path.join(root, "usr/share/games/fortunes/*"))
                   if os.path.isfile(p) and not os.path.islink(p) and not p.endswith((".dat", ".u8")))
    texts = []
    for p in files:
        with open(p, "rb") as f:
            texts.append(f.read().decode("utf-8", errors="replace"))
    return "".join(texts)


PARTS = [  # name, packages, maker
    ("austen", ["r-cran-janeaustenr"], part_austen),
    ("kjv", ["bible-kjv-text", "bible-kjv"], part_kjv),
    ("jargon", ["jargon-text"], part_jargon),
    ("fortunes", ["fortunes-min", "fortunes"], part_fortunes),
]


def stratified_split(texts, frac):
    """Train and validation pieces of every part: the validation piece of a
    part is its last `frac` (cut after a newline), the last part's cut makes
    the pieces add up to exactly floor(frac * total) bytes, so qtrain's
    split (the last floor(val_frac * n) tokens) falls exactly between the
    training pieces of all parts and the validation pieces of all parts."""
    total = sum(len(t) for t in texts)
    want = int(frac * total)  # qtrain: n_val = floor(val_frac * n)
    train, val, have = [], [], 0
    for i, t in enumerate(texts):
        if i + 1 < len(texts):
            cut = t.rfind(b"\n", 0, len(t) - int(frac * len(t))) + 1
            cut = cut if cut > 0 else len(t) - int(frac * len(t))
        else:
            cut = len(t) - (want - have)
        train.append(t[:cut])
        val.append(t[cut:])
        have += len(t) - cut
    assert have == want
    return train, val


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_manifest(path):
    rows = {}
    with open(path) as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    if not lines or lines[0].split("\t") != COLUMNS:
        die(f"{path}: not a corpus manifest (header {COLUMNS})")
    for ln in lines[1:]:
        cells = ln.split("\t")
        if len(cells) != len(COLUMNS):
            die(f"{path}: bad row '{ln}'")
        rows[cells[0]] = dict(zip(COLUMNS, cells))
    return rows


def write_manifest(path, rows):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("# the English corpus (scripts/corpus.py): parts from Debian packages, sha256 of each\n")
        f.write("\t".join(COLUMNS) + "\n")
        for r in rows:
            f.write("\t".join(str(r[c]) for c in COLUMNS) + "\n")
    os.replace(tmp, path)


def deb_version(deb):
    return subprocess.run(["dpkg-deb", "-f", deb, "Version"], capture_output=True, text=True,
                          check=True).stdout.strip()


def fetch(pkgs, cache):
    """The .deb of each package in cache (apt-get download when missing)."""
    os.makedirs(cache, exist_ok=True)
    debs = []
    for p in pkgs:
        have = sorted(glob.glob(os.path.join(cache, f"{p}_*.deb")))
        if not have:
            r = subprocess.run(["apt-get", "download", p], cwd=cache, capture_output=True, text=True)
            if r.returncode != 0:
                die(f"apt-get download {p} failed: {(r.stderr.strip().splitlines() or ['?'])[-1]} "
                    f"(as root run apt-get update first)")
            have = sorted(glob.glob(os.path.join(cache, f"{p}_*.deb")))
        if not have:
            die(f"apt-get download {p} left no {p}_*.deb in {cache}")
        debs.append(have[-1])
    return debs


def compare(rows, ref, what):
    for r in rows:
        want = ref.get(r["part"])
        if want is None:
            return f"part {r['part']} is not in {what}"
        if want["sha256"] != r["sha256"]:
            return (f"part {r['part']}: sha256 {r['sha256'][:16]}... differs from {what} "
                    f"({want['sha256'][:16]}..., packages {want['versions']}; this one {r['versions']})")
    return None


def build(args):
    out = os.path.abspath(args.out)
    cache = os.path.abspath(args.cache or os.path.join(out, "debs"))
    os.makedirs(os.path.join(out, "parts"), exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="qp-corpus-") as tmp:
        for name, pkgs, maker in PARTS:
            root = os.path.join(tmp, name)
            os.makedirs(root)
            debs = fetch(pkgs, cache)
            for d in debs:
                subprocess.run(["dpkg-deb", "-x", d, root], check=True)
            text = maker(root)
            path = os.path.join(out, "parts", name + ".txt")
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
            rows.append({"part": name, "packages": ",".join(pkgs),
                         "versions": ",".join(deb_version(d) for d in debs),
                         "bytes": os.path.getsize(path), "sha256": sha256(path)})
    corpus = os.path.join(out, CORPUS)
    texts = []
    for r in rows:
        with open(os.path.join(out, "parts", r["part"] + ".txt"), "rb") as p:
            texts.append(p.read())
    train, val = stratified_split(texts, VAL_FRAC)
    with open(corpus + ".tmp", "wb") as f:
        f.write(b"".join(train) + b"".join(val))
    os.replace(corpus + ".tmp", corpus)
    rows.append({"part": CORPUS, "packages": "-", "versions": "-", "bytes": os.path.getsize(corpus),
                 "sha256": sha256(corpus)})
    write_manifest(os.path.join(out, "MANIFEST.tsv"), rows)
    if os.path.exists(PINNED) and not args.any_version:
        bad = compare(rows, read_manifest(PINNED), PINNED)
        if bad:
            die(bad + " — the shipped numbers were measured on the pinned corpus; --any-version accepts this one",
                1)
    for r in rows:
        print(f"{r['part']:10s} {int(r['bytes']):>10d} bytes  {r['sha256']}  {r['versions']}")
    print(f"corpus: {corpus}")


def check(args):
    d = os.path.abspath(args.dir)
    mpath = os.path.join(d, "MANIFEST.tsv")
    if not os.path.exists(mpath):
        die(f"{mpath}: no manifest (scripts/corpus.py build --out {args.dir})")
    man = read_manifest(mpath)
    rows = []
    for name, r in man.items():
        path = os.path.join(d, CORPUS if name == CORPUS else os.path.join("parts", name + ".txt"))
        if not os.path.exists(path):
            die(f"{path}: missing (part {name} of {mpath})")
        got = sha256(path)
        if got != r["sha256"] or os.path.getsize(path) != int(r["bytes"]):
            die(f"{path}: sha256 {got[:16]}... ({os.path.getsize(path)} bytes) differs from the manifest's "
                f"{r['sha256'][:16]}... ({r['bytes']} bytes)")
        rows.append(dict(r, sha256=got))
    pinned = args.pinned or PINNED
    if os.path.exists(pinned):
        bad = compare(rows, read_manifest(pinned), pinned)
        if bad:
            die(bad)
    print(f"corpus.py: {len(rows)} files of {mpath} verified")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", default=os.path.join(HERE, "..", "data", "english"))
    b.add_argument("--cache")
    b.add_argument("--any-version", action="store_true")
    c = sub.add_parser("check")
    c.add_argument("dir", nargs="?", default=os.path.join(HERE, "..", "data", "english"))
    c.add_argument("--pinned", help="pinned manifest to compare with (default scripts/english_corpus.tsv)")
    args = ap.parse_args()
    build(args) if args.cmd == "build" else check(args)


if __name__ == "__main__":
    main()
