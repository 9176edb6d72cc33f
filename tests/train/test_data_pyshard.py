"""test_data_pyshard.py — an llm.c shard written the way llm.c's own Python
writes one (numpy: a 256 x int32 header, then uint16 tokens), read back by
the C library (test_data_pyshard.c) and compared with the tokens numpy wrote.

usage: test_data_pyshard.py TEST_BINARY WORKDIR"""
import os
import subprocess
import sys

import numpy as np


def main():
    binary, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    rng = np.random.default_rng(20240520)
    tokens = rng.integers(0, 50257, size=12345, dtype=np.int64)
    tokens[:4] = [0, 255, 256, 50256]  # both bytes of a uint16 matter
    tokens[-1] = 50256

    header = np.zeros(256, dtype="<i4")
    header[0], header[1], header[2] = 20240520, 1, len(tokens)
    shard = os.path.join(workdir, "numpy_shard.bin")
    with open(shard, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.astype("<u2").tobytes())
    # The expected tokens by another route: int32, not uint16.
    expected = os.path.join(workdir, "numpy_tokens.i32")
    tokens.astype("<i4").tofile(expected)

    rc = subprocess.run([binary, shard, expected]).returncode
    for p in (shard, expected):
        os.remove(p)
    sys.exit(rc)


if __name__ == "__main__":
    main()
