"""qprec.torch — a qprec recipe on a PyTorch model's linear layers, and
qtrain's run file for its training.

``convert(model, recipe)`` replaces every linear layer of the model's
transformer blocks (``nn.Linear``, and Hugging Face's GPT-2 ``Conv1D``) by
a ``QLinear`` whose three products go through qtrain's own precision
dispatch (train/qp_linear.c, compiled into libqprec.so with qtrain's recipe
parser): per block, GEMM, pass and operand the format, block shape (1x16,
16x16), random Hadamard transform, stochastic rounding (qtrain's seed and
streams: step, micro-batch, block, GEMM, pass, operand) and FP8 scaling
(current, or delayed with its amax history) that the recipe's plan gives,
BF16 blocks included. The dispatch hands each product's two operands back
decoded to FP32, and PyTorch multiplies them:

    forward  y  = x_q w_q^T + b      (x, w: the fprop uses)
    dgrad    dx = dy_q w_q           (dy, w: the dgrad uses)
    wgrad    dw = dy_q^T x_q         (dy, x: the wgrad uses)

so on CPU tensors a converted layer's forward output is, bit for bit,
``F.linear`` of ``qprec.qdq``'d operands. The embeddings, the LM head
(``lm_head``), attention's internal products, norms and the optimizer stay
as the model has them (qtrain keeps them in FP32).

Which block and GEMM a layer is comes from its module name: defaults for
nanoGPT and Hugging Face GPT-2 (``transformer.h.N.attn.c_attn`` qkv,
``attn.c_proj`` attproj, ``mlp.c_fc`` fc, ``mlp.c_proj`` fcproj) and Hugging
Face Llama (``model.layers.N.self_attn.{q,k,v}_proj`` qkv, ``o_proj``
attproj, ``mlp.gate_proj`` gate, ``up_proj`` up, ``down_proj`` down), or the
caller's regular expressions. Llama's separate q, k and v projections each
run the qkv plan with a scaling state of its own (qtrain's Llama has one
fused qkv GEMM): a per-tensor scale is then each projection's own, where
the fused GEMM has one for the three weights (and one for their output
gradients), and under stochastic rounding each projection draws the words
of the fused GEMM's first rows.

Steps: SR streams and delayed scaling follow the optimizer step. ``RunLog``
advances it at each ``.step()``; without one, call ``step(model)`` after
each optimizer step (or ``micro(model, i)`` between gradient-accumulation
micro-batches); a converted layer whose forward runs twice in one step with
gradients on (no ``step()`` between) starts the next step itself. Forward
passes with gradients off (evaluation) freeze the scaling state, as
qtrain's evaluation does.

Limits: a tensor on a GPU is refused with one line (this libqprec.so has
no CUDA). ``torch.compile`` runs the converted layers' forward outside its
graphs (``torch.compiler.disable``: their products go through libqprec by
ctypes), the rest of the model compiled. Under autocast the converted layers
compute as the recipe says, in FP32 from FP32 operands, whatever autocast
would have done. A recipe with the RHT on the wgrad operands (nvfp4) needs a
token count that is a multiple of 16, as in qtrain: a call that breaks it
raises with the layer's name.
"""
import ctypes
import os
import re
import socket
import sys
import time

import numpy as _np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import _lib

__all__ = ["convert", "QLinear", "RunLog", "QtrainData", "step", "micro", "dispatch_of", "GPT2_NAMES",
           "LLAMA_NAMES"]

# ---- names ------------------------------------------------------------------------
_BLOCKS = r"(?:^|\.)(?:h|layers|blocks)\.(\d+)\."   # transformer.h.N. / model.layers.N. / blocks.N.
# module-name suffix within a block -> (GEMM, part): part tells Llama's q/k/v apart
GPT2_NAMES = {r"attn\.c_attn$": ("qkv", 0), r"attn\.c_proj$": ("attproj", 0), r"mlp\.c_fc$": ("fc", 0),
              r"mlp\.c_proj$": ("fcproj", 0)}
LLAMA_NAMES = {r"self_attn\.q_proj$": ("qkv", 0), r"self_attn\.k_proj$": ("qkv", 1),
               r"self_attn\.v_proj$": ("qkv", 2), r"self_attn\.o_proj$": ("attproj", 0),
               r"mlp\.gate_proj$": ("gate", 0), r"mlp\.up_proj$": ("up", 0), r"mlp\.down_proj$": ("down", 0)}
_HEAD = r"(?:^|\.)lm_head$"
_ERR = 512


def _names(kind):
    L = _lib.lib()
    n = {"gemm": L.qprec_block_gemm_count(), "pass": L.qprec_pass_count(), "operand": L.qprec_operand_count()}[kind]
    fn = {"gemm": L.qprec_gemm_name, "pass": L.qprec_pass_name, "operand": L.qprec_operand_name}[kind]
    return [fn(i).decode() for i in range(n)]


def _is_conv1d(m):
    """Hugging Face's Conv1D (GPT-2): y = x @ weight + bias, weight in x out."""
    return type(m).__name__ == "Conv1D" and hasattr(m, "weight") and hasattr(m, "nf") and m.weight.dim() == 2


def _is_linear(m):
    return isinstance(m, nn.Linear) or _is_conv1d(m)


def _err(buf):
    return buf.value.decode(errors="replace")


# ---- the dispatch ---------------------------------------------------------------------
class _Dispatch:
    """One converted model's dispatches: one qtrain dispatch (qp_linear) per part
    (Llama's q, k, v), all at the same step."""

    def __init__(self, recipe, n_layers, gemm_mask, seed, n_parts):
        L = _lib.lib()
        self.recipe, self.n_layers, self.gemm_mask, self.seed = recipe, n_layers, gemm_mask, seed
        self.handles = []
        for _ in range(n_parts):
            err = ctypes.create_string_buffer(_ERR)
            h = L.qprec_dispatch_create(recipe.encode(), n_layers, gemm_mask, seed, 1, err, _ERR)
            if not h:
                self.close()
                raise ValueError(f"qprec.torch: recipe {recipe!r}: {_err(err)}")
            self.handles.append(h)
        self.step = 0            # qtrain's first optimizer step is 0
        self.micro = 0
        self.qerr_every = 0
        self.explicit = False    # step() / RunLog drive the step
        self.seen = set()        # (layer, gemm, part) forwarded with gradients this step and micro-batch
        self.frozen = False
        self.runlog = None
        self._begin()

    def close(self):
        L = _lib.lib() if self.handles else None
        for h in self.handles:
            L.qprec_dispatch_destroy(h)
        self.handles = []

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def log_qerr(self):
        return 1 if self.qerr_every > 0 and self.step % self.qerr_every == 0 else 0

    def _begin(self):
        L = _lib.lib()
        for h in self.handles:
            L.qprec_dispatch_begin_step(h, self.step, self.log_qerr())
        self.micro = 0
        self.seen.clear()

    def next_step(self):
        self.step += 1
        self._begin()

    def set_micro(self, i):
        L = _lib.lib()
        for h in self.handles:
            L.qprec_dispatch_begin_micro(h, int(i))
        self.micro = int(i)
        self.seen.clear()

    def freeze(self, frozen):
        """Evaluation (gradients off): scaling states used, not updated; no qerr rows;
        the SR streams of the last step trained, as qtrain's evaluation."""
        if frozen == self.frozen:
            return
        L = _lib.lib()
        for h in self.handles:
            L.qprec_dispatch_set_frozen(h, 1 if frozen else 0)
            if frozen:
                L.qprec_dispatch_begin_step(h, max(self.step - 1, 0), 0)
            else:
                L.qprec_dispatch_begin_step(h, self.step, self.log_qerr())
                if self.micro:
                    L.qprec_dispatch_begin_micro(h, self.micro)
        self.frozen = frozen

    def flush(self):
        L = _lib.lib()
        for h in self.handles:
            if L.qprec_dispatch_flush(h):
                raise RuntimeError(f"qprec.torch: {L.qprec_dispatch_error(h).decode()}")

    def use(self, layer, gemm, pass_, operand):
        """The plan of one use: dict(format, sr, rht, delayed, history, owner)."""
        L = _lib.lib()
        out = (_lib._i64 * 6)()
        if L.qprec_dispatch_use(self.handles[0], layer, gemm, pass_, operand, out):
            raise IndexError("qprec.torch: no such use")
        return {"format": L.qprec_format_name(int(out[0])).decode(), "sr": bool(out[1]), "rht": int(out[2]),
                "delayed": bool(out[3]), "history": int(out[4]), "owner": bool(out[5])}

    def event_counts(self):
        L = _lib.lib()
        n = L.qprec_event_kind_count()
        tot = {L.qprec_event_kind_name(k).decode(): 0 for k in range(n)}
        for h in self.handles:
            c = (_lib._i64 * n)()
            L.qprec_dispatch_event_counts(h, c)
            for k in range(n):
                tot[L.qprec_event_kind_name(k).decode()] += int(c[k])
        return tot

    def qerr_rows(self):
        L = _lib.lib()
        return sum(int(L.qprec_dispatch_qerr_rows(h)) for h in self.handles)

    def text(self, what):
        L = _lib.lib()
        err = ctypes.create_string_buffer(_ERR)
        n = L.qprec_recipe_text(self.recipe.encode(), self.n_layers, self.gemm_mask, what, None, 0, err, _ERR)
        if n < 0:
            raise ValueError(f"qprec.torch: {_err(err)}")
        buf = ctypes.create_string_buffer(n + 1)
        L.qprec_recipe_text(self.recipe.encode(), self.n_layers, self.gemm_mask, what, buf, n + 1, err, _ERR)
        return buf.value.decode()


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr())


def _cpu_f32(t, what):
    if t.device.type != "cpu":
        raise RuntimeError(f"qprec.torch: {what} is on {t.device}: this libqprec.so has no CUDA (built for the CPU); "
                           f"run the converted model on the CPU (model.cpu())")
    return t.detach().to(torch.float32).contiguous()


class _QLinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, mod):
        d, L = mod.dispatch, _lib.lib()
        shape = x.shape
        IC, OC = int(w.shape[1]), int(w.shape[0])
        x2 = _cpu_f32(x, "the input").reshape(-1, IC)
        w2 = _cpu_f32(w, "the weight")
        M = int(x2.shape[0])
        xq, wq = torch.empty_like(x2), torch.empty_like(w2)
        h = d.handles[mod.part]
        if L.qprec_dispatch_forward(h, mod.layer, mod.gemm, _ptr(x2), _ptr(w2), M, IC, OC, _ptr(xq), _ptr(wq)):
            raise RuntimeError(f"qprec.torch: {mod.qname}: {L.qprec_dispatch_error(h).decode()}")
        if d.runlog is not None and not d.frozen and mod.part == 0 and d.log_qerr():
            d.runlog._outliers(mod, x2)  # the GEMM input's /quant/outliers row, as qtrain's at a qerr step
        bb = None if b is None else b.detach().to(torch.float32)
        y = F.linear(xq, wq, bb)
        ctx.save_for_backward(x2, w2)
        ctx.mod, ctx.shape, ctx.has_b = mod, shape, b is not None
        ctx.dtypes = (x.dtype, w.dtype, None if b is None else b.dtype)
        return y.reshape(*shape[:-1], OC)

    @staticmethod
    def backward(ctx, dy):
        x2, w2 = ctx.saved_tensors
        mod, L = ctx.mod, _lib.lib()
        OC, IC = int(w2.shape[0]), int(w2.shape[1])
        dy2 = _cpu_f32(dy, "the output gradient").reshape(-1, OC)
        M = int(dy2.shape[0])
        dyd, wd = torch.empty((M, OC)), torch.empty((IC, OC))
        dyw, xw = torch.empty((OC, M)), torch.empty((IC, M))
        h = mod.dispatch.handles[mod.part]
        if L.qprec_dispatch_backward(h, mod.layer, mod.gemm, _ptr(dy2), _ptr(x2), _ptr(w2), M, IC, OC, _ptr(dyd),
                                     _ptr(wd), _ptr(dyw), _ptr(xw)):
            raise RuntimeError(f"qprec.torch: {mod.qname}: {L.qprec_dispatch_error(h).decode()}")
        dx = torch.mm(dyd, wd.t()).reshape(ctx.shape).to(ctx.dtypes[0])
        dw = torch.mm(dyw, xw.t()).to(ctx.dtypes[1])
        db = dy2.sum(0).to(ctx.dtypes[2]) if ctx.has_b else None
        return dx, dw, db, None


def _compiler_disable(fn):
    """The converted layer's forward runs outside torch.compile's graphs (its products
    go through libqprec by ctypes, which a graph cannot hold): the model compiles
    around it."""
    dis = getattr(getattr(torch, "compiler", None), "disable", None)
    if dis is None:
        try:
            import torch._dynamo as _dyn  # torch 2.0
            dis = _dyn.disable
        except Exception:
            return fn
    return dis(fn)


class QLinear(nn.Module):
    """A linear layer run through the recipe's plan for (block, GEMM): the original
    module's weight and bias Parameters (the same objects, so an optimizer made
    before convert() still holds them)."""

    def __init__(self, orig, qname, layer, gemm, part, dispatch):
        super().__init__()
        self.conv1d = _is_conv1d(orig)
        self.weight = orig.weight
        self.bias = orig.bias
        self.qname, self.layer, self.gemm, self.part, self.dispatch = qname, layer, gemm, part, dispatch
        self.gemm_name = _names("gemm")[gemm]
        self.in_features = int(self.weight.shape[0] if self.conv1d else self.weight.shape[1])
        self.out_features = int(self.weight.shape[1] if self.conv1d else self.weight.shape[0])

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"block={self.layer}, gemm={self.gemm_name}" + (", Conv1D weight" if self.conv1d else ""))

    @_compiler_disable
    def forward(self, x):
        d = self.dispatch
        grad = torch.is_grad_enabled()
        d.freeze(not grad)
        if grad:
            key = (self.layer, self.gemm, self.part)
            if key in d.seen and not d.explicit:
                d.next_step()
            d.seen.add(key)
        with torch.autocast(device_type="cpu", enabled=False):
            w = self.weight.t() if self.conv1d else self.weight
            return _QLinearFn.apply(x, w, self.bias, self)


# ---- convert ----------------------------------------------------------------------
def _role(name, blocks_re, roles):
    m = re.search(blocks_re, name)
    if not m:
        return None
    rest = name[m.end():]
    for pat, (g, part) in roles:
        if re.search(pat, rest) or re.search(pat, name):
            return int(m.group(1)), g, part
    return int(m.group(1)), None, None


def convert(model, recipe, *, blocks=None, gemms=None, keep=(_HEAD,), seed=0, verbose=True, file=None):
    """Replace the linear layers of model's blocks by QLinear modules running recipe
    (qtrain's grammar, docs/recipes.md) and return model.

    blocks  a regular expression whose group 1 is the block index in a module's
            name (default: ``h.N.``, ``layers.N.`` or ``blocks.N.``)
    gemms   {regex: gemm} (or {regex: (gemm, part)}) added before the defaults:
            a module whose name within its block (or whole) matches is that
            GEMM (qkv, attproj, fc, fcproj, gate, up, down)
    keep    regexes of linear layers left as they are (default: the LM head)
    seed    the SR and RHT seed (qtrain's --data-seed, else --seed)

    Prints the mapping and the recipe spelled out (verbose, to file or stdout).
    Raises ValueError naming every linear layer it cannot place, and for a recipe
    the parser refuses or that does not fit the model's blocks and GEMMs."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"qprec.torch.convert: a torch.nn.Module, not {type(model).__name__}")
    gemm_names = _names("gemm")
    user = []
    for pat, role in (gemms or {}).items():
        g, part = (role, 0) if isinstance(role, str) else role
        if g not in gemm_names:
            raise ValueError(f"qprec.torch.convert: GEMM {g!r} for {pat!r}: one of {', '.join(gemm_names)}")
        user.append((pat, (g, int(part))))
    roles = user + list(GPT2_NAMES.items()) + list(LLAMA_NAMES.items())
    blocks_re = blocks or _BLOCKS
    placed, refused = [], []
    for name, m in model.named_modules():
        if isinstance(m, QLinear):
            raise ValueError(f"qprec.torch.convert: {name} is converted already")
        if not _is_linear(m) or any(re.search(k, name) for k in keep):
            continue
        r = _role(name, blocks_re, roles)
        if r is None:
            refused.append(f"{name} (in no block: blocks={blocks_re!r})")
        elif r[1] is None:
            refused.append(f"{name} (block {r[0]}, but no GEMM role: pass gemms={{regex: gemm}})")
        else:
            placed.append((name, m, r[0], gemm_names.index(r[1]), r[2]))
    if refused:
        raise ValueError("qprec.torch.convert: linear layers the recipe cannot place (map them with gemms=, or leave "
                         "them with keep=): " + "; ".join(refused))
    if not placed:
        raise ValueError("qprec.torch.convert: no linear layer in any block (blocks=%r)" % blocks_re)
    n_layers = max(p[2] for p in placed) + 1
    mask = 0
    for p in placed:
        mask |= 1 << p[3]
    seen = {}
    for name, _, layer, g, part in placed:
        if (layer, g, part) in seen:
            raise ValueError(f"qprec.torch.convert: {name} and {seen[(layer, g, part)]} are both block {layer}'s "
                             f"{gemm_names[g]}")
        seen[(layer, g, part)] = name
    d = _Dispatch(recipe, n_layers, mask, int(seed), max(p[4] for p in placed) + 1)
    out = file or sys.stdout
    if verbose:
        print(f"qprec.torch: recipe {recipe!r} on {len(placed)} linear layers in {n_layers} blocks: "
              f"{d.text(1)}", file=out)
    for name, m, layer, g, part in placed:
        q = QLinear(m, name, layer, g, part, d)
        parent, _, attr = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, attr, q)
        if verbose:
            print(f"  {name} -> block {layer} {gemm_names[g]}" + (f" (part {part})" if part else ""), file=out)
    if verbose:
        print("  plan: " + ",".join(d.text(0).splitlines()), file=out)
    model._qprec_dispatch = d
    return model


def dispatch_of(model):
    d = getattr(model, "_qprec_dispatch", None)
    if d is None:
        raise ValueError("qprec.torch: the model is not converted (qprec.torch.convert)")
    return d


def step(model):
    """After an optimizer step: the next step's SR streams and scaling."""
    d = dispatch_of(model)
    d.explicit = True
    d.flush()
    d.next_step()


def micro(model, i):
    """Gradient-accumulation micro-batch i of the current step (0 first)."""
    d = dispatch_of(model)
    d.explicit = True
    d.set_micro(i)


# ---- the run file ---------------------------------------------------------------------
class RunLog:
    """A qprec run file (the schema qtrain writes, docs/runfile.md) for a converted
    model's training, written by qtrain's writer (train/qp_runlog.c):

        with qprec.torch.RunLog("run.h5", model=model, qerr_every=10) as log:
            for it in range(steps):
                loss = ...; loss.backward(); opt.step()
                log.step(loss=loss.item(), lr=lr)
                if it % 50 == 0: log.eval(loss=val_loss)

    /train (one row per .step(): loss and the columns given by name, step_ms and
    tokens_per_s measured when not given), /eval, /quant/error (every
    qerr_every steps: each block GEMM's pass and operand, as qtrain's),
    /quant/outliers (every qerr_every steps: each block GEMM input's outlier
    statistics, train/qp_outliers.c), the recalibration events of delayed
    scaling, /status, and the root attributes
    (recipe, recipe_description, recipe_plan, layers, seed, and attrs). The file
    is flushed after each step (flush_every), so a killed process leaves every
    row up to the last flush readable."""

    def __init__(self, path, model, qerr_every=0, attrs=None, flush_every=1, tokens_per_step=None):
        L = _lib.lib()
        if not L.qprec_has_runfile():
            raise RuntimeError("qprec.torch.RunLog: this libqprec.so was built without HDF5, so it has no run-file "
                               "writer (Debian: apt-get install libhdf5-dev, then reinstall the package)")
        self.path, self.model, self.d = os.fspath(path), model, dispatch_of(model)
        self.qerr_every, self.flush_every, self.tokens = int(qerr_every), max(1, int(flush_every)), tokens_per_step
        self.attrs = dict(attrs or {})
        self.h = None
        self.n = 0

    def __enter__(self):
        L, d = _lib.lib(), self.d
        base = {"version": L.qp_version().decode(), "host": socket.gethostname(), "recipe": d.recipe,
                "recipe_description": d.text(1), "recipe_plan": d.text(0), "layers": str(d.n_layers),
                "seed": str(d.seed), "qerr_every": str(self.qerr_every), "mode": "train",
                "trainer": f"qprec.torch (PyTorch {torch.__version__})",
                "num_params": str(sum(p.numel() for p in self.model.parameters()))}
        base.update({k: str(v) for k, v in self.attrs.items()})
        keys = [k.encode() for k in base]
        vals = [v.encode() for v in base.values()]
        err = ctypes.create_string_buffer(_ERR)
        self.h = L.qprec_runlog_create(self.path.encode(), (ctypes.c_char_p * len(keys))(*keys),
                                       (ctypes.c_char_p * len(vals))(*vals), len(keys), err, _ERR)
        if not self.h:
            raise RuntimeError(f"qprec.torch.RunLog: {_err(err)}")
        d.flush()
        d.explicit = True
        d.qerr_every = self.qerr_every
        for hd in d.handles:
            L.qprec_runlog_attach(hd, self.h)
        d.runlog = self
        d._begin()  # this step's qerr rows by qerr_every
        self._status("running", "")
        self._flush()
        self.t0 = time.perf_counter()
        return self

    def _check(self, rc, err):
        if rc:
            raise RuntimeError(f"qprec.torch.RunLog: {self.path}: {_err(err)}")

    def _status(self, state, msg):
        err = ctypes.create_string_buffer(_ERR)
        self._check(_lib.lib().qprec_runlog_status(self.h, self.d.step, state.encode(), msg.encode()[:200], err, _ERR),
                    err)

    def _outliers(self, mod, x2):
        err = ctypes.create_string_buffer(_ERR)
        self._check(_lib.lib().qprec_runlog_outliers(self.h, self.d.step, mod.layer, mod.gemm, _ptr(x2),
                                                     int(x2.shape[0]), int(x2.shape[1]), err, _ERR), err)

    def _flush(self):
        err = ctypes.create_string_buffer(_ERR)
        self._check(_lib.lib().qprec_runlog_flush(self.h, err, _ERR), err)

    def step(self, loss, **cols):
        """The optimizer step just taken: its /train row (loss and any /train column by
        name: lr, grad_norm, ...), then the next step begins."""
        d = self.d
        d.flush()  # this step's qerr rows and events first
        now = time.perf_counter()
        row = {"step": d.step, "loss": float(loss), "step_ms": (now - self.t0) * 1e3,
               "threads": torch.get_num_threads()}
        if self.tokens:
            row["tokens_per_s"] = self.tokens / max(now - self.t0, 1e-12)
        row.update({k: float(v) for k, v in cols.items()})
        names = [k.encode() for k in row]
        err = ctypes.create_string_buffer(_ERR)
        self._check(_lib.lib().qprec_runlog_train(self.h, (ctypes.c_char_p * len(names))(*names),
                                                  (ctypes.c_double * len(row))(*row.values()), len(row), err, _ERR),
                    err)
        self.n += 1
        if self.n % self.flush_every == 0:
            self._flush()
        d.next_step()
        self.t0 = time.perf_counter()

    def eval(self, loss):
        """A validation loss after the last step taken."""
        err = ctypes.create_string_buffer(_ERR)
        self._check(_lib.lib().qprec_runlog_eval(self.h, max(self.d.step - 1, 0), float(loss), err, _ERR), err)
        self._flush()
        self.t0 = time.perf_counter()

    def close(self, state="done", message=""):
        if self.h is None:
            return
        L = _lib.lib()
        try:
            self.d.flush()
        finally:
            for hd in self.d.handles:
                L.qprec_runlog_attach(hd, None)
            self.d.runlog = None
        self._status(state, message)
        err = ctypes.create_string_buffer(_ERR)
        h, self.h = self.h, None
        self._check(L.qprec_runlog_close(h, err, _ERR), err)

    def __exit__(self, et, ev, tb):
        self.close("done" if et is None else "failed", "" if et is None else f"{et.__name__}: {ev}")
        return False


# ---- qtrain's batches ----------------------------------------------------------------
class QtrainData:
    """The batches qtrain trains on, from its own loader code (train/qp_data.c):
    a byte file or an llm.c token shard, split as qtrain splits it (val_frac).

        data = QtrainData("corpus.txt")
        x, y = data.batch(step, B=12, T=64, seed=1)   # qtrain --seed 1 (or --data-seed), step `step`

    batch(index, ...) is qtrain's batch of that index: with --grad-accum A,
    step s's micro-batch m is index s * A + m. Tensors of int64 token ids, B x T."""

    def __init__(self, path, val_frac=0.1):
        L = _lib.lib()
        err = ctypes.create_string_buffer(_ERR)
        self.h = L.qprec_data_open(os.fspath(path).encode(), float(val_frac), err, _ERR)
        if not self.h:
            raise ValueError(f"qprec.torch.QtrainData: {_err(err)}")
        self.vocab = int(L.qprec_data_vocab(self.h))

    def batch(self, index, B, T, seed, split="train"):
        L = _lib.lib()
        sp = {"train": 0, "val": 1}[split]
        x = _np.zeros((B, T), dtype=_np.int32)
        y = _np.zeros((B, T), dtype=_np.int32)
        if L.qprec_data_batch(self.h, sp, int(seed), int(index), int(B), int(T), x.ctypes.data, y.ctypes.data):
            raise ValueError(f"qprec.torch.QtrainData: the {split} split has fewer than T+1 = {T + 1} tokens")
        return torch.from_numpy(x.astype(_np.int64)), torch.from_numpy(y.astype(_np.int64))

    def close(self):
        if self.h:
            _lib.lib().qprec_data_close(self.h)
            self.h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
