#!/usr/bin/env python3
"""test_model_torch.py — the C models (train/model/qp_model.c, recipe fp32) against
models written here in PyTorch from the published definitions — the GPT
(GPT-2 / llm.c) and the Llama (RMSNorm, rotary embeddings in the GPT-NeoX /
Hugging Face layout, SwiGLU, grouped-query attention, untied head): logits,
losses and every parameter gradient of a training step, for several shapes,
some with accumulated micro-batches; one Llama with Smooth-SwiGLU on, whose
fold must leave the FP32 function unchanged.

gpt_dump (tests/train/gpt_dump.c) runs the C model and writes its tensors;
this script loads them, copies the parameters into float32 and float64 torch
tensors, redoes the step, and requires max|C - torch| / max|torch| <= 1e-4
per tensor against both. It also checks the C initialisation's statistics,
and that the baseline copy of the model kernels (QP_MODEL_ISA=baseline)
writes the very same bytes as the copy the CPU picks (x86-64-v4 on an
AVX-512 machine), and one thread the same as the test's two (which split
attention by sequence or by head, train/model/qp_model_simd.h): every logit,
loss and gradient bit for bit.

usage: test_model_torch.py GPT_DUMP WORKDIR
"""
import math
import os
import struct
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

PARAMS = {
    "gpt": ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
            "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"],
    "llama": ["wte", "ln1w", "qkvw", "attprojw", "ln2w", "gatew", "upw", "downw", "lnfw", "lmhead"],
}
TOL = 1e-4

# (V, maxT, L, NH, C, B, T, accum, seed, arch, KVH, H, smooth): the brief's
# shape; a larger vocabulary with T == maxT and two accumulated micro-batches;
# one head, an odd T. The Llama: grouped-query (2 key/value heads for 4), the
# default MLP width; one key/value head per head, a width given, two
# micro-batches; one key/value head for 4 (multi-query), head size 32 (the
# vector path of the rotation), Smooth-SwiGLU; T of 37 (three query blocks).
# Head sizes 80 (a GPT) and 64 (a grouped-query Llama), T of 37 and 20: the
# attention kernels' paths for four and one 16-float vectors per row, and
# partial query and key blocks. Four sequences of 32 (a GPT, a grouped-query
# Llama): attention tasks of a whole sequence, and the GPT's bias gradient
# summed by them (T a multiple of QP_ROW_BLOCK).
CONFIGS = [
    (64, 16, 2, 2, 32, 3, 8, 1, 1, "gpt", 0, 0, 0),
    (256, 16, 2, 4, 32, 2, 16, 2, 2, "gpt", 0, 0, 0),
    (64, 8, 1, 1, 16, 1, 5, 1, 3, "gpt", 0, 0, 0),
    (256, 12, 3, 2, 16, 2, 7, 3, 4, "gpt", 0, 0, 0),
    (64, 16, 2, 4, 32, 3, 8, 1, 5, "llama", 2, 0, 0),
    (256, 16, 2, 2, 32, 2, 16, 2, 6, "llama", 0, 48, 0),
    (64, 12, 1, 4, 128, 2, 7, 1, 7, "llama", 1, 0, 1),
    (64, 40, 2, 2, 32, 1, 37, 1, 8, "llama", 1, 0, 0),
    (64, 40, 1, 2, 160, 2, 37, 1, 9, "gpt", 0, 0, 0),
    (64, 24, 1, 4, 256, 1, 20, 1, 10, "llama", 2, 0, 0),
    (64, 32, 2, 2, 32, 4, 32, 1, 11, "gpt", 0, 0, 0),
    (64, 32, 1, 4, 64, 4, 32, 1, 12, "llama", 2, 0, 0),
]


def read_dump(path):
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:8] != b"QPGPTD01":
        raise ValueError(f"{path}: bad magic {buf[:8]!r}")
    out, pos = {}, 8
    while pos < len(buf):
        (nl,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        name = buf[pos:pos + nl].decode()
        pos += nl
        dtype, ndim = struct.unpack_from("<II", buf, pos)
        pos += 8
        dims = struct.unpack_from(f"<{ndim}q", buf, pos)
        pos += 8 * ndim
        n = int(np.prod(dims)) if ndim else 1
        arr = np.frombuffer(buf, dtype="<f4" if dtype == 0 else "<i4", count=n, offset=pos)
        pos += 4 * n
        out[name] = arr.reshape(dims).copy()
    return out


def gpt(P, idx, targets, nh):
    """Forward of GPT-2 as nanoGPT writes it; returns logits and per-position losses."""
    B, T = idx.shape
    C = P["wte"].shape[1]
    L = P["qkvw"].shape[0]
    hs = C // nh
    x = P["wte"][idx] + P["wpe"][:T]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        h = F.layer_norm(x, (C,), P["ln1w"][l], P["ln1b"][l], eps=1e-5)
        q, k, v = (h @ P["qkvw"][l].T + P["qkvb"][l]).split(C, dim=2)
        q, k, v = (t.view(B, T, nh, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ P["attprojw"][l].T + P["attprojb"][l]
        h = F.layer_norm(x, (C,), P["ln2w"][l], P["ln2b"][l], eps=1e-5)
        h = F.gelu(h @ P["fcw"][l].T + P["fcb"][l], approximate="tanh")
        x = x + h @ P["fcprojw"][l].T + P["fcprojb"][l]
    x = F.layer_norm(x, (C,), P["lnfw"], P["lnfb"], eps=1e-5)
    logits = x @ P["wte"].T  # tied head
    losses = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1), reduction="none")
    return logits, losses.view(B, T)


def rope(x):
    """Rotary embedding of x (B, heads, T, hs): pairs (i, i + hs/2) rotated by t * 10000^(-2i/hs)."""
    T, hs = x.shape[2], x.shape[3]
    half = hs // 2
    inv = 10000.0 ** (-2.0 * torch.arange(half, dtype=torch.float64) / hs)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def rmsnorm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w


def llama(P, idx, targets, nh, kvh):
    """Forward of a Llama (Touvron et al. 2023) without biases; returns logits and per-position losses."""
    B, T = idx.shape
    C = P["wte"].shape[1]
    L = P["qkvw"].shape[0]
    hs = C // nh
    x = P["wte"][idx]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        h = rmsnorm(x, P["ln1w"][l])
        q, k, v = (h @ P["qkvw"][l].T).split([C, kvh * hs, kvh * hs], dim=2)
        q = rope(q.view(B, T, nh, hs).transpose(1, 2))
        k = rope(k.view(B, T, kvh, hs).transpose(1, 2)).repeat_interleave(nh // kvh, dim=1)
        v = v.view(B, T, kvh, hs).transpose(1, 2).repeat_interleave(nh // kvh, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ P["attprojw"][l].T
        h = rmsnorm(x, P["ln2w"][l])
        x = x + (F.silu(h @ P["gatew"][l].T) * (h @ P["upw"][l].T)) @ P["downw"][l].T
    logits = rmsnorm(x, P["lnfw"]) @ P["lmhead"].T  # untied head
    losses = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1), reduction="none")
    return logits, losses.view(B, T)


def replay(d, dtype, arch, nh, kvh, accum):
    P = {n: torch.tensor(d["param." + n], dtype=dtype, requires_grad=True) for n in PARAMS[arch]}
    outs, total = [], 0.0
    for k in range(accum):
        idx = torch.tensor(d[f"inputs.{k}"], dtype=torch.long)
        tgt = torch.tensor(d[f"targets.{k}"], dtype=torch.long)
        logits, losses = gpt(P, idx, tgt, nh) if arch == "gpt" else llama(P, idx, tgt, nh, kvh)
        loss = losses.mean()
        total = total + loss / accum
        outs.append((logits.detach(), losses.detach(), loss.detach()))
    total.backward()
    return outs, {n: P[n].grad for n in PARAMS[arch]}


def rel(a, ref):
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    diff = float(np.max(np.abs(a - ref))) if a.size else 0.0
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    return diff, scale, diff / scale if scale > 0 else diff


def check_init(d, L, arch, failures):
    """GPT-2's init: N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), norm weights 1, biases 0
    (the Llama's residual projections are attprojw and downw)."""
    for n in PARAMS[arch]:
        w = d["init." + n].astype(np.float64)
        if n in ("ln1w", "ln2w", "lnfw"):
            ok, what = np.all(w == 1.0), "not all ones"
        elif n in ("ln1b", "qkvb", "attprojb", "ln2b", "fcb", "fcprojb", "lnfb"):
            ok, what = np.all(w == 0.0), "not all zeros"
        else:
            std = 0.02 / math.sqrt(2 * L) if n in ("attprojw", "fcprojw", "downw") else 0.02
            # 5 standard errors: the std of a sample std is std/sqrt(2n)
            tol = 5 * std / math.sqrt(2 * w.size)
            ok = abs(w.std() - std) < tol and abs(w.mean()) < 5 * std / math.sqrt(w.size)
            what = f"mean {w.mean():+.2e} std {w.std():.5f} (want {std:.5f} +- {tol:.5f})"
        if not ok:
            failures.append(f"init {n}: {what}")


def run_config(gpt_dump, workdir, cfg):
    V, maxT, L, NH, C, B, T, accum, seed, arch, KVH, H, smooth = cfg
    path = os.path.join(workdir, f"{arch}_{V}_{maxT}_{L}_{NH}_{C}_{B}_{T}_{accum}.bin")
    subprocess.run([gpt_dump, path] + [str(v) for v in cfg], check=True)
    subprocess.run([gpt_dump, path + ".baseline"] + [str(v) for v in cfg], check=True,
                   env=dict(os.environ, QP_MODEL_ISA="baseline"))
    subprocess.run([gpt_dump, path + ".v3"] + [str(v) for v in cfg], check=True,
                   env=dict(os.environ, QP_MODEL_ISA="x86-64-v3"))
    subprocess.run([gpt_dump, path + ".1thread"] + [str(v) for v in cfg], check=True,
                   env=dict(os.environ, OMP_NUM_THREADS="1"))
    d = read_dump(path)
    failures = []
    for other, what in ((".baseline", "the baseline kernels'"), (".v3", "the x86-64-v3 kernels'"),
                        (".1thread", "one thread's")):
        with open(path, "rb") as f, open(path + other, "rb") as g:
            if f.read() != g.read():
                o = read_dump(path + other)
                differ = [n for n in d if not np.array_equal(d[n].view(np.uint32), o[n].view(np.uint32))]
                failures.append(f"{what} tensors differ in their bits from the default run's: {differ}")
    kvh = KVH or NH
    hidden = H or ((8 * C + 2) // 3 + 63) // 64 * 64
    want = [V, maxT, L, NH, C, B, T, accum, seed, int(arch == "llama"),
            kvh if arch == "llama" else 0, hidden if arch == "llama" else 0, smooth]
    if list(d["config"]) != want:
        failures.append(f"config echoed as {list(d['config'])}, want {want}")
    if arch == "llama" and d["param.gatew"].shape != (L, hidden, C):
        failures.append(f"gatew shape {d['param.gatew'].shape}: the MLP width is not {hidden}")
    check_init(d, L, arch, failures)
    o32, g32 = replay(d, torch.float32, arch, NH, kvh, accum)
    o64, g64 = replay(d, torch.float64, arch, NH, kvh, accum)

    rows = []
    for k in range(accum):
        for j, name in enumerate(("logits", "losses", "loss")):
            rows.append((f"{name}.{k}", d[f"{name}.{k}"], o32[k][j].numpy(), o64[k][j].numpy()))
    for n in PARAMS[arch]:
        rows.append(("grad." + n, d["grad." + n], g32[n].numpy(), g64[n].numpy()))

    print(f"\n{arch} V={V} maxT={maxT} L={L} NH={NH} KVH={kvh} C={C} B={B} T={T} accum={accum} smooth={smooth}: "
          f"loss C {float(d['loss.0']):.6f} torch64 {float(o64[0][2]):.6f}")
    print(f"  {'tensor':<16}{'max|ref|':>11}{'C-t64':>11}{'t32-t64':>11}{'C-t32':>11}{'rel':>10}")
    for name, c, t32, t64 in rows:
        if c.shape != t64.shape:
            failures.append(f"{name}: shape {c.shape} vs torch {t64.shape}")
            continue
        d64, scale, r64 = rel(c, t64)
        d3264, _, _ = rel(t32, t64)
        d32, _, r32 = rel(c, t32)
        worst = max(r64, r32)
        flag = "" if worst <= TOL else "  FAIL"
        print(f"  {name:<16}{scale:11.3e}{d64:11.2e}{d3264:11.2e}{d32:11.2e}{worst:10.1e}{flag}")
        if not np.all(np.isfinite(c)):
            failures.append(f"{name}: non-finite values from C")
        elif worst > TOL:
            failures.append(f"{name}: max|C - torch| / max|torch| = {worst:.2e} > {TOL:g}")
    # A gradient that is identically zero would make its row test nothing.
    for n in PARAMS[arch]:
        if not np.any(g64[n].numpy() != 0):
            failures.append(f"grad.{n}: torch's gradient is all zero (the test shape does not exercise it)")
    return failures


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    gpt_dump, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    torch.set_num_threads(1)
    failures = []
    for cfg in CONFIGS:
        failures += [f"config {cfg}: {f}" for f in run_config(gpt_dump, workdir, cfg)]
    for f in failures:
        print("FAIL", f)
    print(f"test_model_torch: {len(CONFIGS)} configs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
