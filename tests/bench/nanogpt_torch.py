#!/usr/bin/env python3
"""nanogpt_torch.py — the reference point for bench_train: nanoGPT's baby
Shakespeare model (4 layers, 4 heads, 128 wide, context 64, batch 12, no
dropout, AdamW lr 1e-3) written with PyTorch (Debian's python3-torch, CPU),
timed the same way: median ms per training iteration after warm-up.
Prints one line: "torch ms/step <median> threads <n> torch <version> blas
<path>": the BLAS library the process mapped (Debian's python3-torch calls
whatever libblas.so.3 the loader finds: the reference BLAS of libblas3
unless an optimized one is installed or put first on LD_LIBRARY_PATH; its
matrix products run on it)."""
import os
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
torch.set_num_threads(threads)
torch.manual_seed(1337)
V, T, L, NH, C, B = 256, 64, 4, 4, 128, 12


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        shape = (x.size(0), x.size(1), NH, C // NH)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
        mask = torch.tril(torch.ones(x.size(1), x.size(1), dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(x.shape)
        x = x + self.proj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.lnf = nn.LayerNorm(C)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1)))
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))


model = GPT()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
data = torch.randint(0, V, (B * T * 64,))
times = []
for it in range(steps + 3):
    off = torch.randint(0, len(data) - T - 1, (B,))
    x = torch.stack([data[o:o + T] for o in off])
    y = torch.stack([data[o + 1:o + T + 1] for o in off])
    t0 = time.perf_counter()
    loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if it >= 3:
        times.append((time.perf_counter() - t0) * 1e3)
times.sort()


def blas_library():
    """The file whose sgemm_ this process's libblas.so.3 resolves to (the
    one the products above ran on), found with dladdr."""
    import ctypes

    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]

    try:
        sgemm = ctypes.cast(ctypes.CDLL("libblas.so.3").sgemm_, ctypes.c_void_p)
        info = DlInfo()
        if ctypes.CDLL("libc.so.6").dladdr(sgemm, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode())
    except (OSError, AttributeError):
        pass
    return "unknown"


print(f"torch ms/step {times[len(times) // 2]:.1f} threads {threads} torch {torch.__version__} blas {blas_library()}")
