#!/usr/bin/python3
"""test_torch_qtrain.py — qprec.torch against qtrain: the same GPT trained 50
steps under the same recipe gives the same losses.

    test_torch_qtrain.py LIBQPREC WORKDIR QTRAIN

For nvfp4 and fp8 (delayed scaling): qtrain trains a 2-layer GPT for 50 steps
and writes its initial state to a checkpoint (--on-divergence rollback makes
a fresh run write one first: RUN.ckpt.h5.prev once the final checkpoint is
written). Here the GPT is written in PyTorch from its published definition
(GPT-2 as nanoGPT/llm.c write it: learned positions, pre-LayerNorm, tanh
GELU, tied head), its weights read from that checkpoint, converted with
qprec.torch.convert under the same recipe and seed, and trained on qtrain's
batches (qprec.torch.QtrainData: qtrain's loader code) with qtrain's AdamW,
schedule and clipping (train/qp_optim.c, restated in torch's float32
arithmetic). Every linear layer's operands go through the same dispatch
code; what differs is the arithmetic around it (FP32 accumulation order of
PyTorch's GEMMs, attention, norms, the loss), a few ulps a step. Those can
flip a rounding decision of a quantized operand (a code or a block scale),
after which the two runs follow different, equally valid trajectories. The
test prints both loss curves and their relative difference, reports the first
step whose losses differ by more than 1e-4 relative (the divergence a flip
starts), and requires the first 20 steps to agree within 1e-4 (and the fp32
recipe all 50: nothing can flip there).
"""
import math
import os
import subprocess
import sys

import numpy as np

LIB, WORK, QTRAIN = map(os.path.abspath, sys.argv[1:4])
SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ["QPREC_LIBRARY"] = LIB
sys.path.insert(0, os.path.join(SRC, "python"))
sys.path.insert(0, os.path.join(SRC, "tests"))
from qp_testlib import Checks  # noqa: E402

try:
    import h5py
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print(f"test_torch_qtrain: {e}")
    sys.exit(77)

import qprec.torch as qt  # noqa: E402

check = Checks()
STEPS, L, NH, C, T, B, SEED = 50, 2, 2, 32, 32, 4, 1
OPT = dict(lr=1e-3, min_lr=1e-4, warmup=10, weight_decay=0.1, grad_clip=1.0)  # qtrain's options, passed
ADAM = dict(beta1=0.9, beta2=0.99, eps=1e-8)  # qtrain's fixed AdamW constants (train/qp_train_options.c)
TOL, MIN_STEPS = 1e-4, 20
DECAY = ("wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw")  # qtrain decays matrices and embeddings


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn, self.mlp = nn.Module(), nn.Module()
        self.attn.c_attn, self.attn.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.mlp.c_fc, self.mlp.c_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        Bn, Tn, _ = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(Bn, Tn, NH, C // NH).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // NH))
        att = att.masked_fill(~torch.tril(torch.ones(Tn, Tn, dtype=torch.bool)), float("-inf")).softmax(dim=-1)
        x = x + self.attn.c_proj((att @ v).transpose(1, 2).reshape(Bn, Tn, C))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte, self.transformer.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.transformer.h = nn.ModuleList(Block() for _ in range(L))
        self.transformer.ln_f = nn.LayerNorm(C)

    def forward(self, idx, targets):
        tr = self.transformer
        x = tr.wte(idx) + tr.wpe(torch.arange(idx.shape[1]))
        for b in tr.h:
            x = b(x)
        logits = tr.ln_f(x) @ tr.wte.weight.t()  # tied head, FP32 as in qtrain
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def named_qtrain(self):
        """qtrain's checkpoint tensors (params/NAME) and this model's parameters for each."""
        tr, hs = self.transformer, self.transformer.h
        per_layer = {"ln1w": lambda b: b.ln_1.weight, "ln1b": lambda b: b.ln_1.bias,
                     "qkvw": lambda b: b.attn.c_attn.weight, "qkvb": lambda b: b.attn.c_attn.bias,
                     "attprojw": lambda b: b.attn.c_proj.weight, "attprojb": lambda b: b.attn.c_proj.bias,
                     "ln2w": lambda b: b.ln_2.weight, "ln2b": lambda b: b.ln_2.bias,
                     "fcw": lambda b: b.mlp.c_fc.weight, "fcb": lambda b: b.mlp.c_fc.bias,
                     "fcprojw": lambda b: b.mlp.c_proj.weight, "fcprojb": lambda b: b.mlp.c_proj.bias}
        out = [("wte", [tr.wte.weight]), ("wpe", [tr.wpe.weight])]
        out += [(n, [f(b) for b in hs]) for n, f in per_layer.items()]
        return out + [("lnfw", [tr.ln_f.weight]), ("lnfb", [tr.ln_f.bias])]


def lr_at(step):
    """train/qp_optim.c's qp_lr_at."""
    o = OPT
    if step < o["warmup"]:
        return o["lr"] * (step + 1) / o["warmup"]
    if step >= STEPS:
        return o["min_lr"]
    progress = (step - o["warmup"]) / (STEPS - o["warmup"])
    return o["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * progress)) * (o["lr"] - o["min_lr"])


class AdamW:
    """train/qp_optim.c's qp_adamw_step, in float32 as it computes: decoupled decay
    inside the update, p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p)."""

    def __init__(self, groups):
        self.groups = groups  # [(decays, [params])]
        self.m = {id(p): torch.zeros_like(p) for _, ps in groups for p in ps}
        self.v = {id(p): torch.zeros_like(p) for _, ps in groups for p in ps}

    def step(self, t, lr, clip):
        f = np.float32
        b1, b2, eps = f(ADAM["beta1"]), f(ADAM["beta2"]), f(ADAM["eps"])
        bc1, bc2 = f(1) - np.power(b1, f(t)), f(1) - np.power(b2, f(t))
        flr = f(lr)
        with torch.no_grad():
            for decays, ps in self.groups:
                wd = f(OPT["weight_decay"]) if decays else f(0)
                for p in ps:
                    g = p.grad * f(clip)
                    m = self.m[id(p)].mul_(b1).add_(g * (f(1) - b1))
                    v = self.v[id(p)].mul_(b2).add_(g * g * (f(1) - b2))
                    upd = (m / bc1) / ((v / bc2).sqrt() + eps) + p * wd
                    p.sub_(upd * flr)


def run_qtrain(recipe, d, corpus):
    run = os.path.join(d, "run.h5")
    for f in (run, run + ".ckpt.h5", run[:-3] + ".ckpt.h5", run[:-3] + ".ckpt.h5.prev"):
        if os.path.exists(f):
            os.unlink(f)
    cmd = [QTRAIN, "--data", corpus, "--layers", str(L), "--heads", str(NH), "--dim", str(C), "--seq", str(T),
           "--batch", str(B), "--steps", str(STEPS), "--seed", str(SEED), "--eval-every", "0", "--qerr-every", "0",
           "--ckpt-every", "0", "--on-divergence", "rollback", "--threads", "1", "--quiet", "--recipe", recipe,
           "--out", run]
    for k, v in OPT.items():
        cmd += ["--" + k.replace("_", "-"), repr(v)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise SystemExit(f"qtrain: {' '.join(cmd)}: {p.stderr}")
    init = run[:-3] + ".ckpt.h5.prev"
    with h5py.File(init, "r") as f:
        if int(f.attrs["step"]) != 0:
            raise SystemExit(f"{init}: not the initial state (step {int(f.attrs['step'])})")
        params = {k: f["params/" + k][()] for k in f["params"]}
    with h5py.File(run, "r") as f:
        losses = f["train/loss"][()]
    return params, losses


def run_torch(recipe, params, data):
    torch.manual_seed(0)
    model = GPT(data.vocab)
    with torch.no_grad():
        for name, ps in model.named_qtrain():
            src = params[name]
            for i, p in enumerate(ps):
                p.copy_(torch.from_numpy(src[i] if len(ps) > 1 else src).reshape(p.shape))
    with open(os.devnull, "w") as dn:
        qt.convert(model, recipe, seed=SEED, file=dn)
    opt = AdamW([(n in DECAY, ps) for n, ps in model.named_qtrain()])
    allp = [p for _, ps in model.named_qtrain() for p in ps]
    losses = []
    for step in range(STEPS):
        x, y = data.batch(step, B, T, SEED)
        for p in allp:
            p.grad = None
        loss = model(x, y)
        loss.backward()
        norm = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in allp))
        clip = OPT["grad_clip"] / norm if OPT["grad_clip"] > 0 and norm > OPT["grad_clip"] else 1.0
        opt.step(step + 1, lr_at(step), np.float32(clip))
        qt.step(model)
        losses.append(loss.item())
    return np.array(losses)


def main():
    os.makedirs(WORK, exist_ok=True)
    torch.set_num_threads(1)
    corpus = os.path.join(WORK, "corpus.txt")
    rng = np.random.default_rng(1)
    words = "the quick brown fox jumps over a lazy dog while seven wizards quietly box jumping frogs".split()
    with open(corpus, "w") as f:
        f.write(" ".join(rng.choice(words, 30000)))
    data = qt.QtrainData(corpus)
    for recipe in ("fp32", "nvfp4", "fp8"):
        d = os.path.join(WORK, recipe)
        os.makedirs(d, exist_ok=True)
        params, lq = run_qtrain(recipe, d, corpus)
        lt = run_torch(recipe, params, data)
        rel = np.abs(lt - lq) / np.abs(lq)
        bad = np.nonzero(rel > TOL)[0]
        first = int(bad[0]) if len(bad) else None
        upto = first if first is not None else STEPS
        print(f"\n{recipe}: step  qtrain      qprec.torch  rel")
        for s in range(STEPS):
            print(f"{recipe}: {s:4d}  {lq[s]:.7f}  {lt[s]:.7f}  {rel[s]:.2e}" + ("  <- first > 1e-4" if s == first else ""))
        print(f"{recipe}: losses agree within {TOL:g} for the first {upto} of {STEPS} steps "
              f"(max rel {rel[:upto].max():.2e} there; max over all {rel.max():.2e})"
              + ("" if first is None else f"; from step {first} a rounding decision flipped between the two"))
        need = STEPS if recipe == "fp32" else MIN_STEPS
        check(upto >= need, f"{recipe}: at least {need} steps within {TOL:g} (got {upto})")
        check(np.all(np.isfinite(lt)) and lt[-1] < lt[0], f"{recipe}: qprec.torch's run trains ({lt[0]:.4f} -> {lt[-1]:.4f})")
    return check.summary("test_torch_qtrain")


if __name__ == "__main__":
    sys.exit(main())
