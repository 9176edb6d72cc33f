#!/usr/bin/env python3
"""test_divergence.py — --on-divergence stop|skip-step|rollback against --inject, read back with h5py.

A table: every action x NaN/Inf x {a gradient, a weight, the loss}, injected at step 10 of 24
(checkpoints every 4 steps). For each case the expected exit code, the /events/divergence rows
(action per row), the final /status and the /train rows are checked; and, where the action has
an exact expected outcome, the weights themselves:
  stop       exit 3, one row "stop", status diverged, the step-8 checkpoint kept and loadable
  skip-step  grad/loss: exit 0, rows 0..9 identical to a clean run, no row 10, and the weights
             and Adam moments right after step 10 are bit-identical to the clean run's before it;
             a NaN/Inf weight cannot be skipped past: one "stop" row (nonfinite_weights), exit 3
  rollback   exit 0, one row "rollback", a status row naming the checkpoint it went back to, and
             (injected at step 11, stopped at 12) the checkpoint after the rolled-back step holds
             exactly the weights and moments of the step-8 checkpoint it went back to, which are
             the clean run's
Plus: rollback before the first checkpoint (the initial one), the 5-in-a-row cap for rollback
(a learning rate that diverges every time), and bad --inject specs (one line, exit 2).

usage: test_divergence.py QTRAIN [CORPUS [ARCH]] — ARCH gpt (default) or llama: the same
table on that model (the Llama's gatew in place of the GPT's fcw)."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

QTRAIN = sys.argv[1]
CORPUS = sys.argv[2] if len(sys.argv) > 2 else ""
ARCH = sys.argv[3] if len(sys.argv) > 3 else "gpt"
MLP_W = {"gpt": "fcw", "llama": "gatew"}[ARCH]  # a matrix of the MLP, by the architecture's name
# a weight of wte every forward reads: any row (the GPT's tied head), the row of a token the text has
# (the Llama's: byte 0 never occurs, so its row is never read; 'e' is 101, the model 64 wide)
WTE_AT = {"gpt": 3, "llama": 101 * 64 + 3}[ARCH]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks, ckpt_ok, write_corpus  # noqa: E402

check = Checks()


tmp = tempfile.mkdtemp(prefix="qtrain_div_")
data = os.path.join(tmp, "corpus.txt")
write_corpus(data, CORPUS, 200000)

BASE = ["--data", data, "--layers", "2", "--heads", "4", "--dim", "64", "--seq", "32", "--batch", "4",
        "--threads", "1", "--quiet", "--steps", "24", "--warmup", "2", "--eval-every", "8",
        "--eval-batches", "2", "--ckpt-every", "4", "--recipe", "bf16", "--arch", ARCH]
AT = 10


def run(name, extra):
    out = os.path.join(tmp, name + ".h5")
    p = subprocess.run([QTRAIN] + BASE + ["--out", out] + extra, capture_output=True, text=True, timeout=300)
    return p, out


def h5(path):
    return h5py.File(path, "r", libver="latest", swmr=True)


def ckpt_arrays(path):
    with h5py.File(path, "r") as f:
        out = {}
        for g in ("params", "adam_m", "adam_v", "scaling"):
            for k in f[g]:
                out[g + "/" + k] = f[g][k][...]
        out["step"] = int(f.attrs["step"])
        return out


def same(a, b):
    return a.keys() == b.keys() and all(np.array_equal(np.asarray(a[k]).view(np.uint8) if isinstance(a[k], np.ndarray) else a[k],
                                                       np.asarray(b[k]).view(np.uint8) if isinstance(b[k], np.ndarray) else b[k])
                                        for k in a)


# ---- references ---------------------------------------------------------------
p, clean = run("clean", [])
check(p.returncode == 0, f"clean run: {p.stderr}")
with h5(clean) as f:
    clean_steps = f["train/step"][:]
    clean_loss = f["train/loss"][:]
    clean_val = f["eval/val_loss"][-1]
clean_final = ckpt_arrays(clean.replace(".h5", ".ckpt.h5"))
# the clean state right before step AT: the .prev of a run that checkpoints every step and stops before AT+1
p, cref = run("clean_before", ["--ckpt-every", "1", "--stop-after", str(AT + 1)])
before = ckpt_arrays(cref.replace(".h5", ".ckpt.h5.prev"))
check(before["step"] == AT, f"reference checkpoint is of step {before['step']}, want {AT}")

# ---- the table -------------------------------------------------------------------
KINDS = [("nan", "grad:wte"), ("inf", f"grad:{MLP_W}[7]"), ("nan", f"param:{MLP_W}"), ("-inf", f"param:wte[{WTE_AT}]"),
         ("nan", "loss"), ("inf", "loss")]
cases = 0
for action in ("stop", "skip-step", "rollback"):
    for kind, where in KINDS:
        cases += 1
        spec = f"{kind}:{where}@{AT}"
        tag = f"{action} {spec}"
        name = f"{action}_{kind}_{where.replace(':', '_').replace('[', '_').replace(']', '')}"
        p, out = run(name, ["--on-divergence", action, "--inject", spec])
        target = where.split(":")[0]
        recovers = action == "rollback" or (action == "skip-step" and target != "param")
        want_rc = 0 if recovers else 3
        check(p.returncode == want_rc, f"{tag}: exit {p.returncode}, want {want_rc}: {p.stderr}")
        if p.returncode != 0:
            lines = [l for l in p.stderr.splitlines() if l.strip()]
            check(len(lines) == 1 and "diverged at step" in lines[-1], f"{tag}: message {p.stderr!r}")
        with h5(out) as f:
            div = f["events/divergence"][:]
            st = f["status"][:]
            steps = f["train/step"][:]
            loss = f["train/loss"][:]
            check(f.attrs["on_divergence"] == action.encode() or f.attrs["on_divergence"] == action,
                  f"{tag}: on_divergence attribute")
            check(f.attrs["inject"] in (spec, spec.encode()), f"{tag}: inject attribute")
        actions = [r["action"].decode() for r in div]
        if action == "stop":
            want = ["stop"]
        elif action == "rollback":
            want = ["rollback"]
        elif target == "param":
            want = ["stop"]  # skip-step cannot mend a NaN/Inf weight
        else:
            want = ["skip_step"]
        check(actions == want, f"{tag}: divergence actions {actions}, want {want}")
        want_reason = b"nonfinite_weights" if action == "skip-step" and target == "param" else b"nonfinite"
        check(int(div[0]["step"]) == AT and div[0]["reason"] == want_reason, f"{tag}: first row {div[:1]}")
        if target == "loss":
            check(not np.isfinite(div[0]["loss"]), f"{tag}: logged loss {div[0]['loss']} is not the injected value")
        final = st[-1]["state"].decode()
        check(final == ("done" if recovers else "diverged"), f"{tag}: final status {final}")
        # rows before the fault are the clean run's, bit for bit; the faulty step has no row
        check(np.array_equal(steps[:AT], clean_steps[:AT]) and np.array_equal(loss[:AT].view(np.uint64),
                                                                                clean_loss[:AT].view(np.uint64)),
              f"{tag}: rows before step {AT} differ from the clean run")
        check(AT not in steps, f"{tag}: the diverged step {AT} has a /train row")
        ck = out.replace(".h5", ".ckpt.h5")
        if not recovers:
            check(steps[-1] < AT + 6, f"{tag}: rows past the stop")
            check(os.path.exists(ck) and ckpt_ok(ck), f"{tag}: the last good checkpoint is not whole")
            c = ckpt_arrays(ck)
            check(c["step"] == 8, f"{tag}: kept checkpoint is of step {c['step']}, want 8")
            check(all(np.isfinite(v).all() for k, v in c.items() if k != "step"), f"{tag}: kept checkpoint not finite")
            continue
        check(list(steps) == [s for s in range(24) if s != AT], f"{tag}: /train steps {list(steps)}")
        c = ckpt_arrays(ck)
        check(c["step"] == 24 and all(np.isfinite(v).all() for k, v in c.items() if k != "step"),
              f"{tag}: final checkpoint (step {c['step']}) not finite")
        check(not same(c, clean_final), f"{tag}: final weights equal the clean run's (the fault changed nothing?)")
        with h5(out) as f:
            val = f["eval/val_loss"][-1]
        # rollback loses steps 8..10 of 24 early in training, skip-step one step
        check(np.isfinite(val) and abs(val - clean_val) < (0.3 if action == "rollback" else 0.1),
              f"{tag}: final val loss {val}, clean {clean_val}")
        if action == "rollback":
            msgs = [r["message"].decode() for r in st if r["state"] == b"running"]
            check(any(f"rolled back to the checkpoint of step 8 after divergence at step {AT}" in m for m in msgs),
                  f"{tag}: no rollback status row: {msgs}")
            check(not np.array_equal(loss[AT:AT + 1], clean_loss[AT + 1:AT + 2]), f"{tag}: step {AT+1} as if nothing happened")
        else:
            # skip-step: right after the skipped step, weights and moments are the clean ones before it
            p2, o2 = run(name + "_stop", ["--on-divergence", action, "--inject", spec, "--ckpt-every", "1",
                                          "--stop-after", str(AT + 1)])
            c2 = ckpt_arrays(o2.replace(".h5", ".ckpt.h5"))
            check(c2["step"] == AT + 1, f"{tag}: checkpoint after the skipped step is of step {c2['step']}")
            c2["step"] = before["step"]
            check(same(c2, before), f"{tag}: state after the skipped step differs from the clean state before it")

# ---- skip-step restores the scaling states too (fp8: delayed scaling, amax histories) --------
FP8 = ["--recipe", "fp8", "--ckpt-every", "1", "--stop-after", str(AT + 1)]
p, c = run("fp8_clean", FP8)
fp8_before = ckpt_arrays(c.replace(".h5", ".ckpt.h5.prev"))
p, o = run("fp8_skip", FP8 + ["--on-divergence", "skip-step", "--inject", f"inf:grad:attprojw@{AT}"])
fp8_after = ckpt_arrays(o.replace(".h5", ".ckpt.h5"))
fp8_after["step"] = fp8_before["step"]
check(p.returncode == 0 and same(fp8_after, fp8_before),
      "fp8 skip-step: weights, moments or scaling states after the skipped step differ from before it")
check(any(k.startswith("scaling/") for k in fp8_before), "fp8: no scaling states in the checkpoint")

# ---- rollback restores exactly the checkpoint it names ------------------------------
p, out = run("rollback_exact", ["--on-divergence", "rollback", "--inject", "inf:grad:qkvw@11", "--stop-after", "12"])
ck = out.replace(".h5", ".ckpt.h5")
after, back_to = ckpt_arrays(ck), ckpt_arrays(ck + ".prev")
check(after["step"] == 12 and back_to["step"] == 8, f"rollback exact: checkpoints of steps {after['step']}, {back_to['step']}")
after["step"] = 8
check(same(after, back_to), "rollback exact: the state after the rollback is not the step-8 checkpoint's")
p, c8 = run("clean_8", ["--stop-after", "8"])
check(same(ckpt_arrays(c8.replace(".h5", ".ckpt.h5")), back_to), "rollback exact: the step-8 checkpoint is not the clean run's")

# ---- rollback before the first checkpoint: to the initial weights -------------------
p, out = run("rollback_early", ["--on-divergence", "rollback", "--inject", "nan:grad:wte@2"])
check(p.returncode == 0, f"early rollback: exit {p.returncode}: {p.stderr}")
with h5(out) as f:
    msgs = [r["message"].decode() for r in f["status"][:]]
check(any("checkpoint of step 0 after divergence at step 2" in m for m in msgs), f"early rollback: {msgs}")

# ---- the cap: a run that diverges every time gives up after 5 rollbacks -------------
p, out = run("rollback_cap", ["--on-divergence", "rollback", "--lr", "50", "--warmup", "0", "--grad-clip", "0",
                              "--ckpt-every", "100"])
check(p.returncode == 3 and "after 5 consecutive recoveries" in p.stderr, f"rollback cap: exit {p.returncode}: {p.stderr}")
with h5(out) as f:
    acts = [r["action"].decode() for r in f["events/divergence"][:]]
    last = f["status"][-1]
check(acts == ["rollback"] * 5 + ["stop"], f"rollback cap: actions {acts}")
check(last["state"] == b"diverged", f"rollback cap: status {last}")

# ---- bad specs: one line, exit 2 ----------------------------------------------------
bad = [("nan:grad:wte", "no @STEP"), ("nan@3", "KIND:WHERE"), ("zero:loss@3", "kind 'zero'"),
       ("nan:grad:foo@3", "unknown tensor 'foo'"), ("nan:weights:wte@3", "is not loss"),
       ("nan:loss@-1", "not an integer"), ("nan:grad:wte[x]@3", "element index"),
       ("nan:param:lnfw[64]@3", "past the end of lnfw"), ("nan:loss@3x", "not an integer")]
for spec, frag in bad:
    p, _ = run("bad", ["--inject", spec])
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    check(p.returncode == 2 and len(lines) == 1 and frag in lines[0], f"--inject {spec}: exit {p.returncode}: {p.stderr!r}")
p, _ = run("bad", ["--on-divergence", "retry"])
check(p.returncode == 2 and "--on-divergence must be" in p.stderr, f"--on-divergence retry: {p.stderr!r}")

print(f"test_divergence: {cases} injected cases, {check.passed} checks passed, {check.failed} failed")
sys.exit(1 if check.failed else 0)
