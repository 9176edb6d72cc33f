#!/usr/bin/env python3
"""nanogpt_nvfp4.py — a nanoGPT-style training loop in PyTorch whose linear
layers run a qprec recipe (qprec.torch.convert), writing one qprec run file
per (recipe, seed) into a folder that `qsweep --summarize` reads like a sweep
of qtrain runs (matched seeds: the same initial weights and batches for every
recipe, so the gaps between recipes are paired by seed).

    python3 python/examples/nanogpt_nvfp4.py --data corpus.txt --out sweep \\
        --recipe nvfp4 --recipe bf16 --seed 1 --seed 2 --steps 300
    qsweep --summarize sweep            # sweep/summary.{md,csv,h5}
    qplot loss sweep/runs/*.h5 -o loss.png

The model is nanoGPT's GPT (learned positions, pre-LayerNorm, tanh GELU, tied
head; module names transformer.h.N.attn.c_attn, ... which convert() knows).
The data: qtrain's own batches of the file (qprec.torch.QtrainData: bytes as
tokens, or an llm.c shard), batch `step` of the training split for seed S is
the one `qtrain --seed S` trains step `step` on. Each run file holds the
losses, the validation loss every --eval-every steps, each block GEMM's
quantization error per pass and operand every --qerr-every steps, the
recalibration events of delayed scaling, and the recipe's plan.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import qprec.torch as qt


class Block(nn.Module):
    def __init__(self, C, nh):
        super().__init__()
        self.nh = nh
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn, self.mlp = nn.Module(), nn.Module()
        self.attn.c_attn, self.attn.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.mlp.c_fc, self.mlp.c_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.nh, C // self.nh).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.nh))
        att = att.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf")).softmax(dim=-1)
        x = x + self.attn.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V, T, L, nh, C):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte, self.transformer.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.transformer.h = nn.ModuleList(Block(C, nh) for _ in range(L))
        self.transformer.ln_f = nn.LayerNorm(C)
        for n, p in self.named_parameters():  # GPT-2's initialisation
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if n.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        tr = self.transformer
        x = tr.wte(idx) + tr.wpe(torch.arange(idx.shape[1]))
        for b in tr.h:
            x = b(x)
        logits = tr.ln_f(x) @ tr.wte.weight.t()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def lr_at(step, a):
    """Linear warm-up, then cosine decay to lr/10 (qtrain's schedule)."""
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    progress = (step - a.warmup) / max(1, a.steps - a.warmup)
    return a.lr / 10 + 0.5 * (1.0 + math.cos(math.pi * progress)) * (a.lr - a.lr / 10)


def train_one(a, data, recipe, seed, path):
    torch.manual_seed(seed)
    model = GPT(data.vocab, a.seq, a.layers, a.heads, a.dim)
    qt.convert(model, recipe, seed=seed, verbose=not a.quiet)
    decay = [p for p in model.parameters() if p.dim() == 2]
    other = [p for p in model.parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.99))
    attrs = {"seed": seed, "steps": a.steps, "layers": a.layers, "heads": a.heads, "dim": a.dim, "seq": a.seq,
             "batch": a.batch, "lr": a.lr, "data": os.path.abspath(a.data), "vocab": data.vocab}
    with qt.RunLog(path, model=model, qerr_every=a.qerr_every, attrs=attrs,
                   tokens_per_step=a.batch * a.seq) as log:
        for step in range(a.steps):
            lr = lr_at(step, a)
            for g in opt.param_groups:
                g["lr"] = lr
            x, y = data.batch(step, a.batch, a.seq, seed)
            loss = model(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            log.step(loss=loss.item(), lr=lr, grad_norm=float(norm))
            last = step == a.steps - 1
            if a.eval_every and ((step + 1) % a.eval_every == 0 or last):
                with torch.no_grad():
                    val = sum(model(*data.batch(i, a.batch, a.seq, 0, split="val")).item()
                              for i in range(a.eval_batches)) / a.eval_batches
                log.eval(loss=val)
                if not a.quiet:
                    print(f"{recipe} seed {seed} step {step}: loss {loss.item():.4f} val {val:.4f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", required=True, help="a text file (bytes are tokens) or an llm.c shard")
    p.add_argument("--out", required=True, help="the sweep folder: runs/recipe=R_seed=S.h5 and qsweep.ini")
    p.add_argument("--recipe", action="append", help="a qprec recipe (repeat for several; default nvfp4)")
    p.add_argument("--seed", action="append", type=int, help="a seed (repeat for several; default 1)")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-batches", type=int, default=4)
    p.add_argument("--qerr-every", type=int, default=50)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    recipes, seeds = a.recipe or ["nvfp4"], a.seed or [1]
    torch.set_num_threads(a.threads)
    data = qt.QtrainData(a.data)
    os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
    # the experiment file qsweep --summarize reads: the grid the run names come from
    with open(os.path.join(a.out, "qsweep.ini"), "w") as f:
        f.write(f"# written by {os.path.basename(__file__)}: qprec.torch runs (a PyTorch nanoGPT)\n[base]\n"
                f"data = {os.path.abspath(a.data)}\nlayers = {a.layers}\nheads = {a.heads}\ndim = {a.dim}\n"
                f"seq = {a.seq}\nbatch = {a.batch}\nsteps = {a.steps}\nlr = {a.lr}\n\n[grid]\n"
                f"recipe = {', '.join(r.replace(',', '|') for r in recipes)}\n"
                f"seed = {', '.join(map(str, seeds))}\n\n[sweep]\nbaseline = {recipes[-1].replace(',', '|')}\n")
    for recipe in recipes:
        for seed in seeds:
            name = f"recipe={recipe.replace(',', '|')}_seed={seed}"
            train_one(a, data, recipe, seed, os.path.join(a.out, "runs", name + ".h5"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
