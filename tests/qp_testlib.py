"""qp_testlib.py — what the Python tests share: counting checks, the text
corpora they train on and the tiny model's [base] lines, a case's own folder,
text and safetensors files they write, and readers of the files qtrain and
qsweep write (as an independent reader sees them).

    sys.path.insert(0, <tests/>); from qp_testlib import Checks, write_corpus

Imports nothing outside the standard library until a function needs it, so a
test can import it before it knows it will SKIP.
"""
import csv
import json
import os
import struct


class Checks:
    """check(cond, what): count it; print a FAIL line (stdout, flushed, so it
    stands next to the test's own output) when cond is false. Returns cond."""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL:", what, flush=True)
        return cond

    def summary(self, name, note=""):
        """Print `name: P passed, F failed<note>`; the exit status: 1 when a
        check failed or none ran (a test that checked nothing proved nothing)."""
        print(f"{name}: {self.passed} passed, {self.failed} failed{note}", flush=True)
        return 1 if self.failed or not self.passed else 0


def write_corpus(path, corpus, nbytes=200000):
    """Write the first nbytes of the shared corpus to path, or, when it is not
    there (the product must work without it), nbytes of seeded random words."""
    if corpus and os.path.exists(corpus):
        with open(corpus, "rb") as f:
            text = f.read()[:nbytes]
    else:
        import numpy as np
        rng = np.random.default_rng(0)
        words = [b"the", b"quick", b"brown", b"fox", b"jumps", b"over", b"lazy", b"dog", b"and", b"cat"]
        text = b" ".join(words[i] for i in rng.integers(0, len(words), nbytes // 5))
    with open(path, "wb") as f:
        f.write(text)
    return path


def write_verse_corpus(path, nbytes=120000):
    """A corpus that needs nothing from outside, the same bytes every time:
    seeded lines of 4 to 12 words from 18, until at least nbytes (byte tokens,
    enough for --seq 32 batches; the qsweep tests' target losses are set for
    these bytes)."""
    import random
    r = random.Random(7)
    words = ["the", "king", "queen", "of", "and", "to", "my", "lord", "thou", "art", "what", "is", "love",
             "night", "day", "sweet", "death", "crown"]
    lines, n = [], 0
    while n < nbytes:
        line = " ".join(r.choice(words) for _ in range(r.randint(4, 12))) + "\n"
        lines.append(line)
        n += len(line)
    with open(path, "w") as f:
        f.write("".join(lines))
    return path


def write_text(path, text):
    """Write text to path (a study's .ini, a table's row); the path."""
    with open(path, "w") as f:
        f.write(text)
    return path


def case_folder(work, name):
    """A test case's own folder, work/name: emptied, made again and given the
    verse corpus as corpus.txt (the data = line of the tests' study files)."""
    import shutil
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    write_verse_corpus(os.path.join(d, "corpus.txt"))
    return d


# The [base] lines of the tiny model the qsweep tests train on the verse corpus
# (byte tokens; a few ms a step on one thread): each test's study text starts so.
TINY_BASE = """[base]
data = corpus.txt
layers = 2
heads = 2
dim = 32
seq = 32
"""


def write_safetensors(path, tensors, metadata=None):
    """A safetensors file, written here byte by byte from the format's spec:
    tensors is [(name, dtype as safetensors spells it, numpy array already in
    that dtype's little-endian layout)], in file order; metadata, when given,
    is the header's __metadata__ (string to string)."""
    header, blobs, off = ({"__metadata__": metadata} if metadata is not None else {}), [], 0
    for name, dtype, arr in tensors:
        b = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    return path


def open_run(path):
    """A run file opened with h5py as qsweep and qplot read it: SWMR, and
    without HDF5's flock (a reader holding it while qtrain creates or resumes
    the file would fail that run with EAGAIN)."""
    import h5py
    return h5py.File(path, "r", libver="latest", swmr=True, locking=False)


def read_csv(path):
    """A CSV file with a header row: a list of {column: text}."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ckpt_ok(path):
    """A qprec checkpoint checked independently of qtrain: it opens, its
    `complete` marker counts every tensor, and each tensor's CRC-32 (zlib's)
    matches its bytes. False for anything else, a file that does not open too."""
    import zlib

    import h5py
    try:
        with h5py.File(path, "r") as f:
            n, bad = 0, []

            def visit(name, obj):
                nonlocal n
                if isinstance(obj, h5py.Dataset):
                    n += 1
                    if zlib.crc32(obj[...].astype("<f4").tobytes()) != int(obj.attrs["crc32"]):
                        bad.append(name)
            f.visititems(visit)
            return "complete" in f.attrs and int(f.attrs["complete"]) == n and not bad
    except Exception:
        return False
