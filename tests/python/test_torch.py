#!/usr/bin/python3
"""test_torch.py — qprec.torch (python/qprec/torch.py): a recipe on a PyTorch
model's linear layers through qtrain's dispatch, and the run file it writes.

    test_torch.py CASE LIBQPREC WORKDIR QSWEEP QPLOT

CASE:
  exact    on CPU tensors a converted layer's forward output is, bit for bit,
           F.linear of qprec.qdq'd operands (bf16,fprop=nvfp4; fp8-current;
           mxfp8; nvfp4 with its 16x16 weight blocks and BF16 end blocks:
           each layer's operands quantized as the plan the library reports
           says); under fp32 the converted model's loss is the original's bit
           for bit and its gradients agree to FP32 rounding; under bf16 the
           dgrad and wgrad products are those of BF16-rounded operands; under
           autocast the converted layers compute as without it; torch.compile
           (where PyTorch has it) runs the model with the converted layers
           outside its graphs, to the same loss.
  names    the role defaults (nanoGPT/GPT-2 names, Hugging Face GPT-2's
           Conv1D, Llama's q/k/v/o and gate/up/down), user regexes, and the
           refusals: an unplaceable linear layer, a recipe the parser refuses,
           a recipe naming a GEMM the model lacks, a tensor not on the CPU, a
           model converted twice.
  runlog   a converted GPT trained 8 steps under nvfp4 with RunLog(qerr_every=2):
           qprec.runfile.load reads its train and eval rows and quant_error
           rows for all three passes and the operands of each, quant_outliers
           rows for every block GEMM's input, the recipe plan attribute; delayed FP8 scaling writes recalibration events; a
           process killed with SIGKILL mid-run leaves a file runfile.load
           reads (the rows up to the last flush); qsweep --summarize
           summarises a folder of two seeds; qplot draws one.
  example  python/examples/nanogpt_nvfp4.py trains two recipes on qtrain's
           batches of a file into a sweep folder; qsweep --summarize reads it.
  hf       a Hugging Face transformers GPT-2 and Llama from small configs (no
           download, random weights), converted under nvfp4 and trained 20
           steps, the loss falling; skipped when transformers is not installed.
"""
import os
import signal
import subprocess
import sys

import numpy as np

CASE = sys.argv[1]
LIB, WORK, QSWEEP, QPLOT = map(os.path.abspath, sys.argv[2:6])
SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ["QPREC_LIBRARY"] = LIB
sys.path.insert(0, os.path.join(SRC, "python"))
sys.path.insert(0, os.path.join(SRC, "tests"))
from qp_testlib import Checks  # noqa: E402

check = Checks()
SKIP = 77

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("test_torch: no torch in this python3 (Debian: python3-torch)")
    sys.exit(SKIP)

import qprec  # noqa: E402
import qprec.torch as qt  # noqa: E402


def raises(exc, fn, what, text=None):
    try:
        fn()
    except exc as e:
        return check(text is None or text in str(e), f"{what}: {e}")
    except Exception as e:  # noqa: BLE001 - the wrong exception is a failure too
        return check(False, f"{what}: raised {type(e).__name__}: {e}")
    return check(False, f"{what}: did not raise")


# ---- a nanoGPT-style GPT (the names convert() knows) ----------------------------------
class Block(nn.Module):
    def __init__(self, C, nh):
        super().__init__()
        self.nh = nh
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn = nn.Module()
        self.attn.c_attn, self.attn.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.mlp = nn.Module()
        self.mlp.c_fc, self.mlp.c_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.nh, C // self.nh).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.nh) ** 0.5)
        att = att.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf")).softmax(-1)
        x = x + self.attn.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V=64, T=32, L=2, nh=2, C=32):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte, self.transformer.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.transformer.h = nn.ModuleList(Block(C, nh) for _ in range(L))
        self.transformer.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, V, bias=False)

    def forward(self, idx, targets):
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(idx.shape[1]))
        for b in self.transformer.h:
            x = b(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def gpt(seed=0, **kw):
    torch.manual_seed(seed)
    return GPT(**kw)


def batch(seed, B=4, T=32, V=64):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, V, (B, T + 1), generator=g)
    return idx[:, :-1], idx[:, 1:]


def quiet(model, recipe, **kw):
    with open(os.devnull, "w") as dn:
        return qt.convert(model, recipe, file=dn, **kw)


def expected_forward(mod, x, d):
    """F.linear of the operands qdq'd as the plan the library reports for this layer's fprop."""
    ux, uw = d.use(mod.layer, mod.gemm, 0, 0), d.use(mod.layer, mod.gemm, 0, 1)
    for u in (ux, uw):
        if u["sr"] or u["rht"] or u["delayed"]:
            raise AssertionError(f"the test's recipes quantize fprop by round-to-nearest, current scaling: {u}")
    w = mod.weight.detach()
    xs = x.detach().reshape(-1, x.shape[-1])
    qx = torch.from_numpy(qprec.qdq(xs, ux["format"])) if ux["format"] != "fp32" else xs
    qw = torch.from_numpy(qprec.qdq(w, uw["format"])) if uw["format"] != "fp32" else w
    b = None if mod.bias is None else mod.bias.detach()
    return F.linear(qx, qw, b).reshape(*x.shape[:-1], -1), ux["format"], uw["format"]


def case_exact():
    idx, tgt = batch(1)
    for recipe in ("bf16,fprop=nvfp4", "fp8-current", "mxfp8", "nvfp4"):
        m = quiet(gpt(L=3), recipe)
        d = qt.dispatch_of(m)
        ins = {}
        hooks = [mod.register_forward_hook(lambda mod, inp, out, ins=ins: ins.__setitem__(mod, (inp[0], out)))
                 for mod in m.modules() if isinstance(mod, qt.QLinear)]
        with torch.no_grad():
            m(idx, tgt)
        for h in hooks:
            h.remove()
        fmts = set()
        for mod, (x, y) in ins.items():
            want, fx, fw = expected_forward(mod, x, d)
            fmts.add((fx, fw))
            check(torch.equal(y, want), f"{recipe}: {mod.qname}'s forward is F.linear of qdq'd operands "
                                        f"({fx}, {fw}), bit for bit (max diff {(y - want).abs().max().item():.3g})")
        check(len(ins) == 12, f"{recipe}: every converted layer ran ({len(ins)})")
        if recipe == "nvfp4":
            check(("bf16", "bf16") in fmts and ("nvfp4", "nvfp4-2d") in fmts,
                  f"nvfp4: BF16 end blocks and 16x16 weight blocks in the plan ({sorted(fmts)})")
    # fp32: the original model, bit for bit forward; gradients to FP32 rounding
    ref, conv = gpt(), quiet(gpt(), "fp32")
    lr, lc = ref(idx, tgt), conv(idx, tgt)
    check(torch.equal(lr, lc), f"fp32: the converted loss is the original's ({lr.item()!r} {lc.item()!r})")
    lr.backward()
    lc.backward()
    worst = max(((a.grad - b.grad).abs().max() / b.grad.abs().max()).item()
                for a, b in zip(conv.parameters(), ref.parameters()))
    check(worst < 1e-5, f"fp32: gradients agree with the original's to {worst:.2e}")
    # bf16: dgrad and wgrad multiply BF16-rounded operands
    m = quiet(gpt(), "bf16")
    lin = m.transformer.h[1].mlp.c_fc
    x = torch.randn(8, lin.in_features, requires_grad=True)
    dy = torch.randn(8, lin.out_features)
    lin(x).backward(dy)
    bf = lambda t: torch.from_numpy(qprec.qdq(t.detach(), "bf16"))  # noqa: E731
    check(torch.equal(x.grad, bf(dy) @ bf(lin.weight)), "bf16: dgrad is dy_q w_q, bit for bit")
    check(torch.equal(lin.weight.grad, bf(dy).t() @ bf(x)), "bf16: wgrad is dy_q^T x_q, bit for bit")
    # steps: a second forward with gradients and no step() starts the next step (new SR
    # streams: nvfp4 rounds dy stochastically, so the same batch's gradients differ);
    # micro() and step() take over
    m = quiet(gpt(), "nvfp4")
    d = qt.dispatch_of(m)
    grads = []
    for _ in range(2):
        m.zero_grad()
        m(idx, tgt).backward()
        grads.append(m.transformer.h[0].mlp.c_fc.weight.grad.clone())
    check(d.step == 1 and not torch.equal(grads[0], grads[1]),
          f"a repeated forward starts step 1 with new SR streams (step {d.step})")
    qt.micro(m, 1)
    m(idx, tgt).backward()
    m(idx, tgt).backward()
    check(d.step == 1 and d.micro == 1, "after micro(): the step is the caller's (no automatic advance)")
    qt.step(m)
    check(d.step == 2 and d.micro == 0, "step(): the next step, micro-batch 0")
    # autocast: the converted layers compute as the recipe says
    m = quiet(gpt(), "nvfp4")
    with torch.no_grad():
        plain = m(idx, tgt)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            lin = m.transformer.h[0].mlp.c_fc
            x = torch.randn(4, lin.in_features)
            a = lin(x)
        b = lin(x)
    check(a.dtype == torch.float32 and torch.equal(a, b), "autocast: a converted layer computes as without it")
    if hasattr(torch, "compile"):
        try:
            cm = torch.compile(m)
            with torch.no_grad():
                lc = cm(idx, tgt)
            check(abs(lc.item() - plain.item()) <= 1e-5 * abs(plain.item()),
                  f"torch.compile: the compiled model's loss ({lc.item()} vs {plain.item()})")
        except Exception as e:  # noqa: BLE001 - a compiler missing from this PyTorch build (no C++ compiler ...)
            print(f"torch.compile not run here: {type(e).__name__}: {str(e)[:200]}")
    else:
        print(f"torch {torch.__version__} has no torch.compile")


class Conv1D(nn.Module):
    """Hugging Face GPT-2's Conv1D, as transformers defines it: y = x @ weight + bias, weight (nx, nf)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(*x.shape[:-1], self.nf)


def case_names():
    out = os.path.join(WORK, "names.txt")
    with open(out, "w") as f:
        qt.convert(gpt(), "nvfp4", file=f)
    text = open(out).read()
    check("transformer.h.1.mlp.c_proj -> block 1 fcproj" in text and "plan: " in text,
          f"convert prints what it mapped and the plan: {text[:300]}")
    # Hugging Face GPT-2's Conv1D: the same product as the module's own
    torch.manual_seed(3)
    blk = nn.Module()
    blk.transformer = nn.Module()
    blk.transformer.h = nn.ModuleList([nn.Module()])
    blk.transformer.h[0].mlp = nn.Module()
    blk.transformer.h[0].mlp.c_fc = Conv1D(64, 32)
    c = blk.transformer.h[0].mlp.c_fc
    x = torch.randn(5, 32)
    w = c.weight.detach().t().contiguous()
    quiet(blk, "bf16,fprop=nvfp4")
    q = blk.transformer.h[0].mlp.c_fc
    y = q(x)
    want = F.linear(torch.from_numpy(qprec.qdq(x, "nvfp4")), torch.from_numpy(qprec.qdq(w, "nvfp4")), q.bias.detach())
    check(isinstance(q, qt.QLinear) and q.conv1d and torch.equal(y, want),
          "Conv1D (HF GPT-2) converts: F.linear of qdq'd x and weight^T")
    y.sum().backward()
    check(q.weight.grad is not None and q.weight.grad.shape == (32, 64), "Conv1D: its (nx, nf) weight gets the gradient")
    # Llama's names: q/k/v parts of qkv, o_proj, gate/up/down
    L = nn.Module()
    L.model = nn.Module()
    L.model.layers = nn.ModuleList()
    for _ in range(2):
        layer = nn.Module()
        layer.self_attn, layer.mlp = nn.Module(), nn.Module()
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            setattr(layer.self_attn, n, nn.Linear(32, 32, bias=False))
        for n, (i, o) in {"gate_proj": (32, 64), "up_proj": (32, 64), "down_proj": (64, 32)}.items():
            setattr(layer.mlp, n, nn.Linear(i, o, bias=False))
        L.model.layers.append(layer)
    L.lm_head = nn.Linear(32, 10, bias=False)
    quiet(L, "nvfp4")
    ly = L.model.layers[1]
    roles = [(m.gemm_name, m.part) for m in (ly.self_attn.q_proj, ly.self_attn.k_proj, ly.self_attn.v_proj,
                                              ly.self_attn.o_proj, ly.mlp.gate_proj, ly.mlp.up_proj, ly.mlp.down_proj)]
    check(roles == [("qkv", 0), ("qkv", 1), ("qkv", 2), ("attproj", 0), ("gate", 0), ("up", 0), ("down", 0)],
          f"Llama's names: {roles}")
    check(isinstance(L.lm_head, nn.Linear) and not isinstance(L.lm_head, qt.QLinear), "the LM head is left as it is")
    x = torch.randn(2, 3, 32, requires_grad=True)
    (ly.mlp.down_proj(F.silu(ly.mlp.gate_proj(x)) * ly.mlp.up_proj(x)).sum() + ly.self_attn.q_proj(x).sum()).backward()
    check(x.grad is not None and torch.isfinite(x.grad).all(), "a Llama block's layers run forward and backward")
    # user regexes
    m = nn.Module()
    m.blocks = nn.ModuleList([nn.Module()])
    m.blocks[0].w_in, m.blocks[0].w_out = nn.Linear(16, 64), nn.Linear(64, 16)
    raises(ValueError, lambda: quiet(m, "nvfp4"), "a linear layer with no GEMM role is refused", "blocks.0.w_in")
    quiet(m, "mxfp8", gemms={r"w_in$": "fc", r"w_out$": "fcproj"})
    check(m.blocks[0].w_in.gemm_name == "fc" and m.blocks[0].w_out.gemm_name == "fcproj", "user regexes map roles")
    # refusals
    n = nn.Module()
    n.proj = nn.Linear(4, 4)
    raises(ValueError, lambda: quiet(n, "nvfp4"), "a linear layer in no block is refused", "in no block")
    raises(ValueError, lambda: quiet(gpt(), "nvfp5"), "a recipe the parser refuses: its message", "nvfp5")
    raises(ValueError, lambda: quiet(gpt(), "bf16,gate=nvfp4"), "a GEMM the model lacks", "gate")
    g = quiet(gpt(), "nvfp4")
    raises(ValueError, lambda: quiet(g, "nvfp4"), "converting twice", "converted already")
    lin = g.transformer.h[0].mlp.c_fc
    raises(RuntimeError, lambda: lin(torch.randn(2, 32, device="meta")), "a tensor off the CPU: one clear error",
           "no CUDA")


def train(model, steps, log=None, seed=0, lr=3e-3, evals=()):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for s in range(steps):
        idx, tgt = batch(1000 * seed + s)
        loss = model(idx, tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if log:
            log.step(loss=loss.item(), lr=lr)
            if s in evals:
                with torch.no_grad():
                    log.eval(loss=model(*batch(99)).item())
        else:
            qt.step(model)
    return losses


KILLER = r"""
import os, signal, sys
path = sys.argv[1]
sys.path.insert(0, sys.argv[2])
sys.argv = sys.argv[2:]
import test_torch as T
m = T.quiet(T.gpt(), "nvfp4")
with T.qt.RunLog(path, model=m, qerr_every=1) as log:
    for s in range(100):
        idx, tgt = T.batch(s)
        loss = m(idx, tgt); loss.backward()
        log.step(loss=loss.item())
        if s == 4:
            os.kill(os.getpid(), signal.SIGKILL)
"""


def case_runlog():
    import qprec.runfile
    d = os.path.join(WORK, "runlog")
    os.makedirs(os.path.join(d, "runs"), exist_ok=True)
    # a folder qsweep --summarize reads: its experiment file and runs/NAME.h5 as qsweep names them
    with open(os.path.join(d, "corpus.txt"), "w") as f:
        f.write("the data qprec.torch's runs were not trained on\n")
    with open(os.path.join(d, "qsweep.ini"), "w") as f:
        f.write("[base]\ndata = corpus.txt\nmodel = nano\nsteps = 8\n\n[grid]\nrecipe = nvfp4, bf16\nseed = 1, 2\n"
                "\n[sweep]\nbaseline = bf16\n")
    paths = []
    for recipe in ("nvfp4", "bf16"):
        for seed in (1, 2):
            m = quiet(gpt(seed), recipe, seed=seed)
            p = os.path.join(d, "runs", f"recipe={recipe}_seed={seed}.h5")
            with qt.RunLog(p, model=m, qerr_every=2, attrs={"seed": seed, "steps": 8}) as log:
                losses = train(m, 8, log, seed=seed, evals=(3, 7))
            paths.append(p)
    rf = qprec.runfile.load(paths[-1])
    check(list(rf.train.step) == list(range(8)) and np.allclose(rf.train.loss, losses),
          f"runfile.load reads the 8 train rows and their losses ({list(rf.train.step)})")
    check(list(rf.eval.step) == [3, 7], f"eval rows after steps 3 and 7 ({list(rf.eval.step)})")
    qe = rf.quant_error
    have = set(zip(qe.pass_ if hasattr(qe, "pass_") else qe["pass"], qe.operand))
    want = {("fprop", "x"), ("fprop", "w"), ("dgrad", "dy"), ("dgrad", "w"), ("wgrad", "dy"), ("wgrad", "x")}
    check(have == want, f"quant_error rows for every pass and operand ({sorted(have)})")
    steps = sorted(set(qe.step))
    check(steps == [0, 2, 4, 6], f"quant_error every 2 steps ({steps})")
    per = len(qe[qe.step == 0])
    check(per == 2 * 4 * 6, f"one row per block, GEMM, pass and operand at a logged step ({per})")
    check(np.all(np.isfinite(qe.rel_l2)) and (qe.rel_l2 > 0).any(), "quant_error holds errors")
    qo = rf.quant_outliers
    check(sorted(set(qo.step)) == [0, 2, 4, 6] and len(qo[qo.step == 0]) == 2 * 4 and (qo["kurtosis"] > 0).all(),
          f"quant_outliers: each block GEMM's input at the logged steps ({len(qo)} rows)")
    check(rf.attrs["recipe"] == "bf16" and "fprop" in rf.attrs["recipe_plan"] and rf.attrs["seed"] == "2",
          "the root attributes: recipe, recipe_plan, seed")
    check(rf.status.state.iloc[-1] == "done", f"status done ({list(rf.status.state)})")
    # delayed scaling: recalibration events
    m = quiet(gpt(), "fp8")
    p = os.path.join(d, "fp8.h5")
    with qt.RunLog(p, model=m) as log:
        train(m, 6, log)
    ev = qprec.runfile.load(p).events
    check(len(ev) > 0 and set(ev.operand) <= {"x", "w", "dy"}, f"delayed FP8 scaling writes recalibration events ({len(ev)})")
    # SIGKILL mid-run
    killed = os.path.join(d, "killed.h5")
    pr = subprocess.run([sys.executable, "-c", KILLER, killed, os.path.dirname(os.path.abspath(__file__)), "runlog",
                         LIB, WORK, QSWEEP, QPLOT],
                        capture_output=True, text=True, timeout=300)
    check(pr.returncode == -signal.SIGKILL, f"the run was killed ({pr.returncode}: {pr.stderr[-300:]})")
    try:
        rk = qprec.runfile.load(killed)
        ok = list(rk.train.step) == [0, 1, 2, 3, 4] and len(rk.quant_error) > 0 and rk.status.state.iloc[-1] == "running"
        check(ok, f"a killed run's file loads with its flushed rows ({list(rk.train.step)}, "
                  f"{list(rk.status.state)})")
    except Exception as e:  # noqa: BLE001
        check(False, f"a killed run's file: {type(e).__name__}: {e}")
    # qsweep --summarize and qplot read them as qtrain's
    pr = subprocess.run([QSWEEP, "--summarize", d], capture_output=True, text=True, timeout=120)
    summ = os.path.join(d, "summary.csv")
    check(pr.returncode == 0 and os.path.exists(summ), f"qsweep --summarize: {pr.stdout[-300:]} {pr.stderr[-500:]}")
    if os.path.exists(summ):
        text = open(summ).read()
        check("nvfp4" in text, f"the summary has the runs: {text[:400]}")
    png = os.path.join(d, "loss.png")
    pr = subprocess.run([QPLOT, "loss", paths[0], "-o", png], capture_output=True, text=True, timeout=120)
    check(pr.returncode == 0 and os.path.exists(png) and os.path.getsize(png) > 1000,
          f"qplot draws a qprec.torch run file: {pr.stderr[-500:]}")


def case_example():
    d = os.path.join(WORK, "example")
    os.makedirs(d, exist_ok=True)
    corpus = os.path.join(d, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("a nanoGPT-style loop on qtrain's batches of this file. " * 400)
    out = os.path.join(d, "sweep")
    cmd = [sys.executable, os.path.join(SRC, "python", "examples", "nanogpt_nvfp4.py"), "--data", corpus, "--out", out,
           "--recipe", "nvfp4", "--recipe", "bf16", "--seed", "1", "--steps", "8", "--layers", "2", "--heads", "2",
           "--dim", "32", "--seq", "32", "--batch", "4", "--eval-every", "4", "--eval-batches", "1",
           "--qerr-every", "4", "--quiet"]
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"))
    pr = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    check(pr.returncode == 0, f"nanogpt_nvfp4.py: {pr.stdout[-300:]} {pr.stderr[-800:]}")
    import qprec.runfile
    for r in ("nvfp4", "bf16"):
        p = os.path.join(out, "runs", f"recipe={r}_seed=1.h5")
        try:
            rf = qprec.runfile.load(p)
            check(len(rf.train) == 8 and list(rf.eval.step) == [3, 7] and len(rf.quant_error) > 0,
                  f"{r}: the example's run file ({len(rf.train)} train, {len(rf.eval)} eval rows)")
        except Exception as e:  # noqa: BLE001
            check(False, f"{r}: the example's run file: {type(e).__name__}: {e}")
    pr = subprocess.run([QSWEEP, "--summarize", out], capture_output=True, text=True, timeout=120)
    summ = os.path.join(out, "summary.csv")
    text = open(summ).read() if os.path.exists(summ) else ""
    check(pr.returncode == 0 and text.count("done") >= 2, f"qsweep --summarize of the example's folder: "
                                                           f"{pr.stderr[-400:]} {text[:300]}")


def case_hf():
    try:
        import transformers
    except ImportError:
        print("test_torch hf: transformers is not installed")
        return SKIP
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    models = {
        "gpt2": GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2)),
        "llama": LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                              num_attention_heads=2, num_key_value_heads=2,
                                              max_position_embeddings=32)),
    }
    for name, model in models.items():
        quiet(model, "nvfp4")
        n = sum(isinstance(m, qt.QLinear) for m in model.modules())
        check(n == (8 if name == "gpt2" else 14), f"{name} ({transformers.__version__}): {n} layers converted")
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        idx, _ = batch(5, T=32)
        losses = []
        for _ in range(20):
            loss = model(input_ids=idx, labels=idx).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            qt.step(model)
            losses.append(loss.item())
        check(all(np.isfinite(losses)) and losses[-1] < losses[0] - 0.5,
              f"{name}: 20 steps under nvfp4, loss {losses[0]:.3f} -> {losses[-1]:.3f}")


def main():
    os.makedirs(WORK, exist_ok=True)
    torch.set_num_threads(1)  # tiny products: threads only contend
    rc = {"exact": case_exact, "names": case_names, "runlog": case_runlog, "example": case_example,
          "hf": case_hf}[CASE]()
    if rc == SKIP:
        return SKIP
    return check.summary(f"test_torch {CASE}")


if __name__ == "__main__":
    sys.exit(main())
