#!/usr/bin/python3
"""make_corpus.py -- write the seed corpus of fuzz_safetensors.

  make_corpus.py [DIR]    (default: corpus_safetensors next to this file)

Seeds are tiny and cover each branch family of the parser: every converted
dtype, skipped dtypes, metadata, escapes, 0-d and empty tensors, padding,
overlap, and a few broken files. Rerun after changing the list; commit the
output.
"""
import json
import os
import struct
import sys


def image(header, data=b"", raw_header=None):
    h = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def tensor(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


SEEDS = {
    "f32": image({"w": tensor("F32", [2], 0, 8)}, struct.pack("<2f", 1.5, -2.0)),
    "f16_bf16": image({"h": tensor("F16", [2, 1], 0, 4), "b": tensor("BF16", [2], 4, 8)},
                      bytes([0x00, 0x3C, 0x01, 0x00, 0x80, 0x3F, 0xC0, 0x7F])),
    "f64": image({"d": tensor("F64", [1], 0, 8)}, struct.pack("<d", 1e300)),
    "meta": image({"__metadata__": {"format": "pt", "k": "v\u00e9"}, "x": tensor("F32", [], 0, 4)},
                  struct.pack("<f", 3.0)),
    "skipped": image({"i": tensor("I64", [1], 0, 8), "f4": tensor("F4", [3], 8, 10),
                      "f": tensor("F32", [1], 0, 4)}, bytes(10)),
    "escapes": image(None, struct.pack("<f", 1.0),
                     raw_header=b'{"a\\"b\\u00e9\\ud83d\\ude00":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    "empty_tensor": image({"e": tensor("F32", [0, 7], 0, 0)}),
    "empty_header": image({}),
    "padded": image(None, struct.pack("<f", 1.0),
                    raw_header=b' {"p" : {"dtype":"F32", "shape":[1], "data_offsets":[0,4]}}    '),
    "overlap": image({"a": tensor("F32", [1], 0, 4), "b": tensor("BF16", [2], 0, 4)}, bytes(4)),
    "rank8": image({"r": tensor("F16", [1] * 8, 0, 2)}, bytes(2)),
    "bad_truncated": b"\x05\x00\x00",
    "bad_past_eof": struct.pack("<Q", 99) + b"{}",
    "bad_json": image(None, raw_header=b'{"w":{"dtype":"F32",}}'),
    "bad_offsets": image({"w": tensor("F32", [4], 0, 16)}, bytes(8)),
    "bad_dtype": image({"w": tensor("F31", [1], 0, 4)}, bytes(4)),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                             "corpus_safetensors")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} seeds in {out}")


if __name__ == "__main__":
    main()
