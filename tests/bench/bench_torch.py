#!/usr/bin/env python3
"""bench_torch.py — a training step of nanoGPT's baby Shakespeare model (4
layers, 4 heads, 128 wide, context 64, batch 12, vocabulary 256: qtrain's
default shape) timed in one run under:

  torch fp32            plain PyTorch
  torch bf16 autocast   torch.autocast(cpu, bfloat16)
  torch compile ...     torch.compile of the fp32 and the bf16-autocast step
                        (PyTorch 2 with a C++ compiler; left out otherwise)
  torch fake nvfp4      every GEMM operand of the blocks' linear layers (x, w
                        forward; dy, w dgrad; dy, x wgrad) fake-quantized to
                        NVFP4 in torch ops (1x16 blocks, E4M3 block scales,
                        FP32 tensor scale, E2M1 round-to-nearest), what a user
                        without qprec would write
  qprec.torch nvfp4     the model converted with qprec.torch.convert(model,
                        "nvfp4") (NVIDIA's recipe: RHT, SR, 16x16 weights,
                        BF16 end blocks)
  qtrain bf16 / nvfp4   qtrain's own step on the same shape (train/step_ms of
                        its run file)

Median CPU ms per step after warm-up (the process's CPU time, which a
machine shared with other work does not inflate as it does wall time; on one
thread, the default, a quiet machine's wall time), and wall ms beside it.
qtrain's CPU ms per step is the difference of two runs' CPU time (4 and
4 + 4 x STEPS steps) over their difference in steps, so its start-up and
final evaluation cancel. Prints a markdown table with the ratios to torch fp32 and, for
qtrain, to the fastest PyTorch mode and to torch's fake quantization.

usage: bench_torch.py QTRAIN [STEPS] [THREADS]   (PYTHONPATH=python
QPREC_LIBRARY=build/lib/libqprec.so; the data is random tokens)
"""
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import torch
import torch.nn as nn
import torch.nn.functional as F

import qprec.torch as qt

QTRAIN = os.path.abspath(sys.argv[1])
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
THREADS = int(sys.argv[3]) if len(sys.argv) > 3 else 1
V, T, L, NH, C, B = 256, 64, 4, 4, 128, 12
torch.set_num_threads(THREADS)


# ---- NVFP4 fake quantization in torch ops ----------------------------------------------
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1_MID = (E2M1[1:] + E2M1[:-1]) / 2


def round_e4m3(s):
    """s (>= 0) to the nearest E4M3 value (3 mantissa bits, min normal 2^-6, max 448)."""
    s = s.clamp(max=448.0)
    e = torch.floor(torch.log2(s.clamp(min=2.0 ** -9))).clamp(min=-6)
    q = 2.0 ** (e - 3)
    return torch.round(s / q) * q


def fake_nvfp4(x):
    """x (rows x K) through NVFP4: 1x16 blocks along K, E4M3 block scales, FP32 tensor scale."""
    shape = x.shape
    xb = x.reshape(-1, 16)
    amax = x.abs().max().clamp(min=1e-30)
    ts = amax / (6.0 * 448.0)                                   # tensor decode scale
    bs = round_e4m3(xb.abs().amax(dim=1, keepdim=True) / 6.0 / ts)
    scale = (bs * ts).clamp(min=1e-30)
    v = (xb / scale).clamp(-6.0, 6.0)
    mag = E2M1[torch.bucketize(v.abs(), E2M1_MID)]
    return (torch.sign(v) * mag * scale).reshape(shape)


class FakeQLinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        x2 = x.reshape(-1, x.shape[-1])
        ctx.save_for_backward(x2, w)
        ctx.shape = x.shape
        return F.linear(fake_nvfp4(x2), fake_nvfp4(w), b).reshape(*x.shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx, dy):
        x2, w = ctx.saved_tensors
        dy2 = dy.reshape(-1, dy.shape[-1])
        dx = fake_nvfp4(dy2) @ fake_nvfp4(w.t().contiguous()).t()       # dgrad: contraction over OC
        dw = fake_nvfp4(dy2.t().contiguous()) @ fake_nvfp4(x2.t().contiguous()).t()  # wgrad: over tokens
        return dx.reshape(ctx.shape), dw, dy2.sum(0)


class FakeQLinear(nn.Linear):
    def forward(self, x):
        return FakeQLinearFn.apply(x, self.weight, self.bias)


# ---- the model -------------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self, lin):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn, self.mlp = nn.Module(), nn.Module()
        self.attn.c_attn, self.attn.c_proj = lin(C, 3 * C), lin(C, C)
        self.mlp.c_fc, self.mlp.c_proj = lin(C, 4 * C), lin(4 * C, C)

    def forward(self, x):
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        shape = (x.size(0), x.size(1), NH, C // NH)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
        att = att.masked_fill(~torch.tril(torch.ones(x.size(1), x.size(1), dtype=torch.bool)), float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(x.shape)
        x = x + self.attn.c_proj(y)
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, lin=nn.Linear):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte, self.transformer.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.transformer.h = nn.ModuleList(Block(lin) for _ in range(L))
        self.transformer.ln_f = nn.LayerNorm(C)

    def forward(self, idx, targets):
        tr = self.transformer
        x = tr.wte(idx) + tr.wpe(torch.arange(idx.size(1)))
        for b in tr.h:
            x = b(x)
        logits = tr.ln_f(x) @ tr.wte.weight.t()
        return F.cross_entropy(logits.reshape(-1, V).float(), targets.reshape(-1))


def time_steps(model, step_fn=None, autocast=False, compiled=False, converted=False):
    torch.manual_seed(1337)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    data = torch.randint(0, V, (B * T * 64,))
    fwd = torch.compile(model) if compiled else model
    times, walls = [], []
    for it in range(STEPS + 3):
        off = torch.randint(0, len(data) - T - 1, (B,))
        x = torch.stack([data[o:o + T] for o in off])
        y = torch.stack([data[o + 1:o + T + 1] for o in off])
        t0, w0 = time.process_time(), time.perf_counter()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = fwd(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if converted:
            qt.step(model)
        if it >= 3:
            times.append((time.process_time() - t0) * 1e3)
            walls.append((time.perf_counter() - w0) * 1e3)
    return statistics.median(times), statistics.median(walls)


def qtrain_run(recipe, n, d, corpus):
    """(CPU ms of a qtrain run of n steps, the median of its steps' wall ms after 3)."""
    run = os.path.join(d, f"{recipe}_{n}.h5")
    r0 = os.times()
    subprocess.run([QTRAIN, "--data", corpus, "--layers", str(L), "--heads", str(NH), "--dim", str(C), "--seq",
                    str(T), "--batch", str(B), "--steps", str(n), "--eval-every", "0", "--eval-batches", "1",
                    "--qerr-every", "0", "--ckpt-every", "0", "--threads", str(THREADS), "--quiet", "--recipe",
                    recipe, "--out", run], check=True)
    r1 = os.times()
    with h5py.File(run, "r") as f:
        wall = statistics.median(f["train/step_ms"][3:])
    return (r1.children_user + r1.children_system - r0.children_user - r0.children_system) * 1e3, wall


def qtrain_ms(recipe):
    """qtrain's CPU ms per step: the difference of a long and a short run's CPU time over
    their difference in steps (start-up and the final evaluation cancel)."""
    with tempfile.TemporaryDirectory() as d:
        corpus = os.path.join(d, "c.txt")
        with open(corpus, "wb") as f:
            f.write(os.urandom(300000))
        short, _ = qtrain_run(recipe, 4, d, corpus)
        long_, wall = qtrain_run(recipe, 4 + 4 * STEPS, d, corpus)
        return (long_ - short) / (4 * STEPS), wall


def main():
    rows = [("torch fp32", time_steps(GPT())), ("torch bf16 autocast", time_steps(GPT(), autocast=True))]
    if hasattr(torch, "compile"):
        for name, ac in (("torch compile fp32", False), ("torch compile bf16 autocast", True)):
            try:
                rows.append((name, time_steps(GPT(), autocast=ac, compiled=True)))
            except Exception as e:  # noqa: BLE001 - no C++ compiler, no inductor for this build
                print(f"{name}: not run ({type(e).__name__}: {str(e)[:120]})", file=sys.stderr)
    rows.append(("torch fake nvfp4 (torch ops)", time_steps(GPT(FakeQLinear))))
    m = GPT()
    with open(os.devnull, "w") as dn:
        qt.convert(m, "nvfp4", file=dn)
    rows.append(("qprec.torch nvfp4", time_steps(m, converted=True)))
    rows += [("qtrain bf16", qtrain_ms("bf16")), ("qtrain nvfp4", qtrain_ms("nvfp4"))]
    cpu = {k: v[0] for k, v in rows}
    fastest = min((v, k) for k, v in cpu.items() if k.startswith("torch") and "fake" not in k)
    fake = cpu["torch fake nvfp4 (torch ops)"]
    print(f"baby GPT (L={L} H={NH} C={C} T={T} B={B} V={V}), {THREADS} thread(s), median of {STEPS} steps; "
          f"torch {torch.__version__}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")
    print("| step | CPU ms | wall ms | vs torch fp32 (CPU) |")
    print("|---|---:|---:|---:|")
    for k, (c, w) in rows:
        print(f"| {k} | {c:.1f} | {w:.1f} | {cpu['torch fp32'] / c:.2f}x |")
    print(f"\nCPU time: qtrain bf16 vs the fastest PyTorch mode ({fastest[1]}, {fastest[0]:.1f} ms): "
          f"{fastest[0] / cpu['qtrain bf16']:.1f}x; qtrain nvfp4 vs torch fake nvfp4: {fake / cpu['qtrain nvfp4']:.1f}x; "
          f"qprec.torch nvfp4 vs torch fake nvfp4: {fake / cpu['qprec.torch nvfp4']:.2f}x")


if __name__ == "__main__":
    main()
