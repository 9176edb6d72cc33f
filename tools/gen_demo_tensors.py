#!/usr/bin/python3
"""gen_demo_tensors.py -- write a safetensors file of realistic transformer-like
tensors (deterministic for a seed), for qerr demos and the oracle test.

  gen_demo_tensors.py --out demo.safetensors [--seed 0]

Contents (a one-block GPT, d_model 128, vocab 256, MLP 512):
  gpt.wte                   256x128  embedding, N(0, 0.02)
  gpt.h0.ln_1.weight/bias   128      layernorm, ~1 / ~0
  gpt.h0.attn.c_attn.weight 384x128  N(0, 0.02)
  gpt.h0.attn.c_proj.weight 128x128  N(0, 0.02/sqrt(2*n_layer))
  gpt.h0.mlp.c_fc.weight    512x128  N(0, 0.02)
  gpt.h0.mlp.c_proj.weight  128x512  N(0, 0.02/sqrt(2*n_layer))
  act.h0.ln_2.out           4x64x128 residual-stream activations with a few
                                     outlier channels 20-100x (LLM.int8()'s
                                     emergent features) and a large first token
  act.h0.mlp.gelu           256x512  post-GELU activations (skewed, many ~0)
  act.h0.attn.padded        64x128   activations whose padding rows are ~1e-9
  grad.h0.mlp.c_fc.weight   512x128  Student-t(3) x 1e-5 weight gradient
  grad.h0.ln_2.out          256x128  Student-t(3) x 1e-6 activation gradient,
                                     a few rows (dropped tokens) exactly zero
  misc.odd_shape            100x50   N(0,1): cols not a multiple of 16 or 32
  misc.tiny                 3x7      N(0,1)
  misc.zeros                64x64    all zero
  *.f16 / *.bf16                     F16 / BF16 copies of some of the above

The safetensors layout is written here directly: an 8-byte little-endian
header length, a JSON header (padded with spaces to 8-byte alignment), then
the tensors' little-endian data, contiguous, in header order.
"""
import argparse
import json
import struct
import sys

import numpy as np


def to_bf16_bits(x):
    """float32 -> bfloat16 bit patterns, round to nearest even."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    nan = np.isnan(x)
    r[nan] = 0x7FC0
    return r.astype(np.uint16)


def make_tensors(seed):
    rng = np.random.default_rng(seed)
    d, vocab, hid, n_layer = 128, 256, 512, 12
    f32 = np.float32
    t = {}

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(f32)

    t["gpt.wte"] = normal((vocab, d), 0.02)
    t["gpt.h0.ln_1.weight"] = (1.0 + rng.standard_normal(d) * 0.05).astype(f32)
    t["gpt.h0.ln_1.bias"] = normal((d,), 0.01)
    t["gpt.h0.attn.c_attn.weight"] = normal((3 * d, d), 0.02)
    t["gpt.h0.attn.c_proj.weight"] = normal((d, d), 0.02 / np.sqrt(2 * n_layer))
    t["gpt.h0.mlp.c_fc.weight"] = normal((hid, d), 0.02)
    t["gpt.h0.mlp.c_proj.weight"] = normal((d, hid), 0.02 / np.sqrt(2 * n_layer))

    # residual stream activations: batch 4, seq 64, d 128
    a = rng.standard_normal((4, 64, d))
    outl = rng.choice(d, size=4, replace=False)
    a[:, :, outl] *= rng.uniform(20, 100, size=4)       # emergent outlier channels
    a[:, 0, :] *= 8.0                                    # attention-sink first token
    t["act.h0.ln_2.out"] = a.astype(f32)

    # post-GELU MLP activations
    h = rng.standard_normal((256, hid)) * 1.5
    gelu = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
    t["act.h0.mlp.gelu"] = gelu.astype(f32)

    # attention output with padding tokens: the last 24 rows are ~1e-9
    p = rng.standard_normal((64, d))
    p[40:, :] *= 1e-9
    t["act.h0.attn.padded"] = p.astype(f32)

    # gradients: heavy tailed, tiny
    t["grad.h0.mlp.c_fc.weight"] = (rng.standard_t(3, size=(hid, d)) * 1e-5).astype(f32)
    g = rng.standard_t(3, size=(256, d)) * 1e-6
    g[rng.choice(256, size=20, replace=False), :] = 0.0   # dropped tokens
    t["grad.h0.ln_2.out"] = g.astype(f32)

    t["misc.odd_shape"] = normal((100, 50), 1.0)
    t["misc.tiny"] = normal((3, 7), 1.0)
    t["misc.zeros"] = np.zeros((64, 64), dtype=f32)

    out = [(k, "F32", v) for k, v in t.items()]
    # half- and bfloat16 copies (F16 only where the values fit its range)
    for k in ("gpt.wte", "act.h0.ln_2.out", "misc.odd_shape"):
        out.append((k + ".f16", "F16", t[k].astype(np.float16)))
    for k in ("gpt.h0.attn.c_attn.weight", "grad.h0.mlp.c_fc.weight", "act.h0.mlp.gelu"):
        out.append((k + ".bf16", "BF16", to_bf16_bits(t[k])))
    return out


def write_safetensors(path, tensors, metadata):
    header = {}
    blobs = []
    off = 0
    for name, dtype, arr in tensors:
        data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((-(8 + len(h))) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Minimal reader: {name: float32 ndarray}, plus the metadata dict."""
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        raw = buf[base + b:base + e]
        dt = info["dtype"]
        if dt == "F32":
            a = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif dt == "F16":
            a = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif dt == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f"{name}: unsupported dtype {dt}")
        out[name] = a.reshape(info["shape"])
    return out, meta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output .safetensors file")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    tensors = make_tensors(args.seed)
    write_safetensors(args.out, tensors,
                      {"generator": "qprec tools/gen_demo_tensors.py", "seed": args.seed,
                       "format": "pt"})
    n = sum(a.size for _, _, a in tensors)
    print(f"wrote {args.out}: {len(tensors)} tensors, {n} elements (seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
