"""qp_testlib.py — what the Python tests of qtrain share: counting checks,
and the text corpus they train on.

    sys.path.insert(0, <tests/>); from qp_testlib import Checks, write_corpus
"""
import os

import numpy as np


class Checks:
    """check(cond, what): count it; print a FAIL line when cond is false."""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL:", what, flush=True)
        return cond


def write_corpus(path, corpus, nbytes=200000):
    """Write the first nbytes of the shared corpus to path, or, when it is not
    there (the product must work without it), nbytes of seeded random words."""
    if corpus and os.path.exists(corpus):
        with open(corpus, "rb") as f:
            text = f.read()[:nbytes]
    else:
        rng = np.random.default_rng(0)
        words = [b"the", b"quick", b"brown", b"fox", b"jumps", b"over", b"lazy", b"dog", b"and", b"cat"]
        text = b" ".join(words[i] for i in rng.integers(0, len(words), nbytes // 5))
    with open(path, "wb") as f:
        f.write(text)
    return path


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
