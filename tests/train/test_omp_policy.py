#!/usr/bin/python3
"""test_omp_policy.py — qtrain's choice of OpenMP waiting policy
(train/run/qp_omp.h), tested as a policy, not as a speed:

  - by default qtrain re-executes itself before anything else with
    OMP_WAIT_POLICY=passive when its CPUs are busy and with a bounded spin
    (GOMP_SPINCOUNT=10000) when they have room for all its threads
    (QP_OMP_IDLE_CPUS stands in for the measured count): the running
    process's environment (/proc/PID/environ, which is what libgomp read at
    load) holds it, the PID is the one that was started (exec, not a child),
    and the run file's omp_wait says so; one thread always waits passively;
    measured, not forced, the choice is one of the two;
  - a policy the user set (OMP_WAIT_POLICY, GOMP_SPINCOUNT) is kept as it is
    and named in the run file;
  - the re-executed run is the same run: same losses as one started with
    OMP_WAIT_POLICY=passive by hand;
  - under passive waiting only tensors of 256k elements and more are split
    among threads (32k otherwise): the run file's parallel_min;
  - --threads auto (the default) runs on the typical idle CPUs, at least
    one and at most the affinity mask's (QP_OMP_IDLE_CPUS again stands in):
    the run file's threads and threads_choice; measured, it is one of those;
  - under --threads auto the count follows the idle CPUs as the run goes
    (QP_OMP_IDLE_FILE stands in for the samples): 2 threads while the file
    says 2 idle, 1 once it says 0, 2 again once it says 2 — the run file's
    /train/threads, read live — with the same losses as a --threads 2 run;
  - and the thread count does not change a run: an nvfp4 GPT and an fp32
    Llama (FP32 GEMMs, whose oneDNN kernels differ between 1 and 2 threads), with gradient accumulation, trained on 1, 2 and 3 threads, give
    the same bits (losses, validation losses, quantization-error rows).

  test_omp_policy.py QTRAIN WORKDIR"""
import os
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks  # noqa: E402

QTRAIN, WORK = sys.argv[1:3]
check = Checks()


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
data = os.path.join(WORK, "corpus.txt")
with open(data, "w") as f:
    f.write("\n".join("the quick brown fox %d jumps over the lazy dog" % (i % 97) for i in range(4000)))


def cmd(out, steps):
    return [QTRAIN, "--data", data, "--layers", "1", "--heads", "2", "--dim", "32", "--seq", "16", "--batch", "4",
            "--steps", str(steps), "--warmup", "2", "--eval-every", "0", "--qerr-every", "0", "--ckpt-every", "0",
            "--threads", "2", "--quiet", "--out", out]


def env_without(*names, **extra):
    e = {k: v for k, v in os.environ.items() if k not in names and k != "QP_OMP_APPLIED"}
    e.update(extra)
    return e


def omp_wait(path):
    with h5py.File(path, "r") as f:
        return f.attrs["omp_wait"], f["train/loss"][:]


def parallel_min(path):
    with h5py.File(path, "r") as f:
        return int(f.attrs["parallel_min"])


def live_environ(p):
    """The environment of the running process p once qtrain has re-executed
    itself (QP_OMP_APPLIED in it), as a dict of bytes; {} if it never does."""
    environ = b""
    deadline = time.time() + 60
    while time.time() < deadline and b"QP_OMP_APPLIED" not in environ:
        try:
            with open(f"/proc/{p.pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            break
        time.sleep(0.05)
    return dict(kv.split(b"=", 1) for kv in environ.split(b"\0") if b"=" in kv)


# the live process: its environment after the re-exec, same PID
out = os.path.join(WORK, "live.h5")
p = subprocess.Popen(cmd(out, 1000000), env=env_without("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", QP_OMP_IDLE_CPUS="0"),
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
vars_ = live_environ(p)
deadline = time.time() + 60
check(vars_.get(b"OMP_WAIT_POLICY") == b"passive" and vars_.get(b"QP_OMP_APPLIED") == b"1",
      f"the running qtrain (pid {p.pid}) has OMP_WAIT_POLICY=passive in its environment: {vars_.get(b'OMP_WAIT_POLICY')}")
# SIGTERM once the run has started (its run file exists: the handler that
# makes a stop exit 130 is installed before), not in the instant after exec
while time.time() < deadline and p.poll() is None and not any(n.startswith("live.h5") for n in os.listdir(WORK)):
    time.sleep(0.05)
p.send_signal(signal.SIGTERM)
try:
    _, stopped_err = p.communicate(timeout=60)
except subprocess.TimeoutExpired:
    p.kill()
    _, stopped_err = p.communicate()
check(p.returncode == 130, f"stopped by SIGTERM: exit {p.returncode}: {stopped_err.decode(errors='replace')[-600:]!r}")

BUSY, IDLE = "passive (qtrain's default: CPUs busy)", "spin 10000, then sleep (qtrain's default: CPUs idle)"
cases = [
    ("default", env_without("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", QP_OMP_IDLE_CPUS="0"), BUSY),
    ("one_idle", env_without("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", QP_OMP_IDLE_CPUS="1"), BUSY),
    ("idle", env_without("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", QP_OMP_IDLE_CPUS="2"), IDLE),
    ("one_thread", env_without("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", QP_OMP_IDLE_CPUS="8"), BUSY),
    ("measured", env_without("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "QP_OMP_IDLE_CPUS"), (BUSY, IDLE)),
    ("user_over_idle", env_without("GOMP_SPINCOUNT", OMP_WAIT_POLICY="passive", QP_OMP_IDLE_CPUS="2"),
     "passive (OMP_WAIT_POLICY)"),
    ("active", env_without("GOMP_SPINCOUNT", OMP_WAIT_POLICY="active"), "active (OMP_WAIT_POLICY)"),
    ("byhand", env_without("GOMP_SPINCOUNT", OMP_WAIT_POLICY="passive"), "passive (OMP_WAIT_POLICY)"),
    ("spin", env_without("OMP_WAIT_POLICY", GOMP_SPINCOUNT="1000"), "GOMP_SPINCOUNT=1000 (environment)"),
]
losses = {}
for name, env, want in cases:
    out = os.path.join(WORK, name + ".h5")
    c = cmd(out, 6)
    if name == "one_thread":
        c[c.index("--threads") + 1] = "1"
    r = subprocess.run(c, env=env, capture_output=True, text=True, timeout=300)
    if check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}"):
        got, losses[name] = omp_wait(out)
        check(got in want if isinstance(want, tuple) else got == want, f"{name}: omp_wait {got!r}, want {want!r}")
        # threads that sleep between regions split only large tensors (each region may wait for a wake-up)
        pm = parallel_min(out)
        check(pm == (262144 if got.startswith("passive") else 32768), f"{name}: parallel_min {pm} under {got!r}")
if "default" in losses and "byhand" in losses:
    check(np.array_equal(losses["default"], losses["byhand"]), "the re-executed run trains exactly as one started passive")
if "default" in losses and "idle" in losses:
    check(np.array_equal(losses["default"], losses["idle"]), "a spinning run trains exactly as a passive one")

# --threads auto: the count follows the idle CPUs, capped by the affinity mask
cpus = len(os.sched_getaffinity(0))
for idle, want in (("0", 1), ("1", 1), ("2", min(2, cpus)), ("64", cpus), (None, None)):
    out = os.path.join(WORK, f"auto_{idle}.h5")
    c = cmd(out, 3)
    del c[c.index("--threads"):c.index("--threads") + 2]
    if idle == "1":
        c += ["--threads", "auto"]  # the same as leaving it out
    env = env_without("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "QP_OMP_IDLE_CPUS", "QP_OMP_THREADS")
    if idle is not None:
        env["QP_OMP_IDLE_CPUS"] = idle
    r = subprocess.run(c, env=env, capture_output=True, text=True, timeout=300)
    if check(r.returncode == 0, f"auto, {idle} idle: exit {r.returncode}: {r.stderr}"):
        with h5py.File(out, "r") as f:
            got, choice, wait = int(f.attrs["threads"]), f.attrs["threads_choice"], f.attrs["omp_wait"]
        ok = got == want if want is not None else 1 <= got <= cpus
        check(ok and choice == "auto (CPUs idle at start)",
              f"auto, {idle} idle CPUs of {cpus}: {got} threads ({choice!r}), want {want}")
        # one thread waits passively; more spin only where they all had an idle CPU
        check(wait == BUSY if got == 1 else wait in (BUSY, IDLE), f"auto, {idle} idle: omp_wait {wait!r} for {got} threads")
bad = cmd(os.path.join(WORK, "bad.h5"), 3)
bad[bad.index("--threads") + 1] = "0"
r = subprocess.run(bad, env=env_without(),
                   capture_output=True, text=True, timeout=60)
check(r.returncode == 2 and r.stderr.count("\n") == 1 and "'auto' or an integer in 1..1024" in r.stderr,
      f"--threads 0 is refused in one line: exit {r.returncode}, {r.stderr!r}")

# --threads auto as the run goes: the live run file's /train/threads follows the idle CPUs
def live_threads(path):
    try:
        with h5py.File(path, "r", libver="latest", swmr=True) as f:
            return f["train/threads"][:].tolist()
    except (OSError, KeyError):
        return []


def wait_for(path, p, cond, what, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None:
        t = live_threads(path)
        if cond(t):
            return t
        time.sleep(0.1)
    check(False, f"adapting: {what} (within {timeout} s; rows so far {len(live_threads(path))}, exit {p.poll()})")
    return None


if cpus >= 2:
    idle_file, out = os.path.join(WORK, "idle.txt"), os.path.join(WORK, "adapt.h5")
    with open(idle_file, "w") as f:
        f.write("2\n")
    # a long run of a repetitive corpus: no loss-spike stop (its loss gets tiny)
    c = cmd(out, 1000000) + ["--divergence-factor", "1e30"]
    c[c.index("--threads") + 1] = "auto"
    p = subprocess.Popen(c, env=env_without("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", QP_OMP_IDLE_CPUS="2",
                                            QP_OMP_IDLE_FILE=idle_file),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t = wait_for(out, p, lambda t: len(t) >= 8, "8 steps on 2 threads")
    if t:
        check(set(t) == {2}, f"adapting: the first steps on 2 threads: {sorted(set(t))}")
        with open(idle_file, "w") as f:
            f.write("0\n")
        t = wait_for(out, p, lambda t: t and t[-1] == 1, "1 thread once no CPU is idle")
    if t:
        ones = len(t)
        with open(idle_file, "w") as f:
            f.write("2\n")
        t = wait_for(out, p, lambda t: len(t) > ones and t[-1] == 2, "2 threads again once the CPUs are idle")
    p.send_signal(signal.SIGTERM)
    try:
        _, stopped_err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        _, stopped_err = p.communicate()
    if check(p.returncode == 130,
             f"adapting run stopped by SIGTERM: exit {p.returncode}: {stopped_err.decode(errors='replace')[-600:]!r}"):
        with h5py.File(out, "r") as f:
            threads, loss = f["train/threads"][:], f["train/loss"][:]
        changes = int(np.count_nonzero(np.diff(threads)))
        check(set(threads.tolist()) == {1, 2} and changes >= 2 and threads[0] == 2 and threads[-1] == 2,
              f"adapting: threads 2, then 1, then 2 ({changes} changes over {len(threads)} steps)")
        fixed = os.path.join(WORK, "adapt_fixed.h5")
        c = cmd(fixed, 1000000) + ["--divergence-factor", "1e30", "--stop-after", str(len(loss))]
        r = subprocess.run(c, env=env_without(), capture_output=True, text=True, timeout=600)
        if check(r.returncode in (0, 130), f"the --threads 2 run of {len(loss)} steps: exit {r.returncode}: {r.stderr}"):
            with h5py.File(fixed, "r") as f:
                check(np.array_equal(f["train/loss"][:len(loss)], loss) and set(f["train/threads"][:].tolist()) == {2},
                      f"adapting: the same {len(loss)} losses as a run on 2 threads throughout")

# the same bits on any number of threads (the GEMMs' blocks are fixed by shape)
for recipe, arch in (("nvfp4", "gpt"), ("fp32", "llama")):
    runs = []
    for t in (1, 2, 3):
        out = os.path.join(WORK, f"inv_{recipe}_{t}.h5")
        c = [QTRAIN, "--data", data, "--arch", arch, "--layers", "2", "--heads", "4", "--dim", "64", "--seq", "32",
             "--batch", "8", "--grad-accum", "2", "--steps", "6", "--recipe", recipe, "--eval-every", "3",
             "--eval-batches", "2", "--qerr-every", "3", "--ckpt-every", "0", "--threads", str(t), "--quiet", "--out", out]
        r = subprocess.run(c, env=env_without(), capture_output=True, text=True, timeout=300)
        if check(r.returncode == 0, f"{recipe} {arch} on {t} threads: exit {r.returncode}: {r.stderr}"):
            with h5py.File(out, "r") as f:
                runs.append((f["train/loss"][:], f["eval/val_loss"][:], f["quant/error"][:]))
    if len(runs) == 3:
        same = all(all(np.array_equal(a, b) for a, b in zip(runs[0], x)) for x in runs[1:])
        check(same and (len(runs[0][2]) > 0) == (recipe != "fp32"), f"{recipe} {arch}: 1, 2 and 3 threads give the same losses, validation "
              f"losses and quantization-error rows ({len(runs[0][2])} rows)")

# the spinning run's own environment: GOMP_SPINCOUNT=10000, no wait policy
out = os.path.join(WORK, "live_idle.h5")
p = subprocess.Popen(cmd(out, 1000000), env=env_without("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", QP_OMP_IDLE_CPUS="2"),
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
vars_ = live_environ(p)
check(vars_.get(b"GOMP_SPINCOUNT") == b"10000" and b"OMP_WAIT_POLICY" not in vars_,
      f"the spinning qtrain's environment: GOMP_SPINCOUNT {vars_.get(b'GOMP_SPINCOUNT')}, "
      f"OMP_WAIT_POLICY {vars_.get(b'OMP_WAIT_POLICY')}")
p.kill()
p.wait(60)
sys.exit(check.summary("test_omp_policy"))
