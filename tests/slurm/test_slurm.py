#!/usr/bin/env python3
"""test_slurm.py — qsweep on a real single-node Slurm that this test starts.

    test_slurm.py CASE QSWEEP QTRAIN WORKDIR

CASE:
  sweep  a 4-run study submitted with `qsweep --submit`; `--summarize` and
         `--status` while the array runs; one task suspended mid-run (after its
         first checkpoint) and cancelled with scancel; `--submit` again sends
         that run alone (the others are queued or done) and it resumes from its
         checkpoint; the summary then equals the one `qsweep -j 2` writes for the
         same experiment, every loss bit for bit.
  mpi    a run of 2 MPI ranks ([slurm] ntasks = 2): the array task starts
         `srun --mpi=pmix qtrain`; the run file says world_size 2 and its losses
         match one process's run of the same command.

The cluster: munged, slurmctld and slurmd (Debian's slurm-wlm 22.05 and
munge) for the node "localhost" with 2 CPUs, from a slurm.conf generated in a
temporary folder that also holds the state, spool, logs, pid files and the
munge key and socket; free TCP ports; proctrack/linuxproc, task/none, no
accounting (sacct answers "accounting storage is disabled", which qsweep
--status must handle). Runs as root (the daemons need it). Missing packages
are installed with apt-get when root. Every daemon runs in its own session
and is stopped at the end — also when a check fails or the test is
interrupted — after every job is cancelled; any process still referring to
the temporary folder (a slurmstepd, a qtrain) is then killed by its pid.
Exit 0 pass, 1 fail, 77 skip (not root; a daemon cannot start here).
Every wait is bounded (generous limits, no timing assertions)."""
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks, open_run, read_csv, write_verse_corpus  # noqa: E402

CASE, QSWEEP, QTRAIN, WORK = sys.argv[1], *map(os.path.abspath, sys.argv[2:5])
SKIP = 77
WAIT = 900  # seconds: the bound of every wait (a loaded machine is slow, never this slow)
check = Checks()


def skip(why):
    print("SKIP:", why, flush=True)
    sys.exit(SKIP)


class Fatal(Exception):
    pass


def wait_for(cond, what, limit=WAIT, every=0.1):
    """Poll cond() until it returns something true; that value. Fatal after limit seconds."""
    t0 = time.monotonic()
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() - t0 > limit:
            raise Fatal(f"waited {limit} s for {what}")
        time.sleep(every)


# ---- packages -----------------------------------------------------------------
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
PROGRAMS = ["slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo", "munged", "munge", "unmunge"]


def ensure_packages():
    missing = [p for p in PROGRAMS if not shutil.which(p, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")]
    if not missing:
        return
    if os.geteuid() != 0:
        skip(f"not root, and Slurm is not installed ({', '.join(missing)} missing): "
             f"apt-get install {' '.join(PACKAGES)}")
    print("installing", " ".join(PACKAGES), flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES]):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode:
            raise Fatal(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-500:]}")


# ---- the cluster ---------------------------------------------------------------
def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def tail(path, n=5):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-n:])
    except OSError:
        return "(no log)"


class Cluster:
    """munged + slurmctld + slurmd in TMP; stop() leaves nothing running."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []  # (name, Popen, log)
        self.conf = os.path.join(tmp, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf, OMPI_MCA_btl_vader_single_copy_mechanism="none")
        self.env["PATH"] = self.env.get("PATH", "") + ":/usr/sbin:/sbin"

    def daemon(self, name, argv):
        log = os.path.join(self.tmp, "log", name + ".out")
        with open(log, "w") as out:
            p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=self.env, cwd=self.tmp, start_new_session=True)
        self.procs.append((name, p, log))
        return p

    def alive_or_skip(self, name, p, log, logfile=None):
        if p.poll() is not None:
            skip(f"{name} cannot start here (exit {p.returncode}): {tail(log)} {tail(logfile) if logfile else ''}")

    def run(self, *argv, timeout=120):
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)

    def start(self):
        t = self.tmp
        for d in ("munge", "state", "spool", "log"):
            os.makedirs(os.path.join(t, d))
        os.chmod(os.path.join(t, "munge"), 0o755)  # munged wants its socket's folder searchable by all
        key = os.path.join(t, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        sock = os.path.join(t, "munge", "munge.sock")
        m = self.daemon("munged", ["munged", "-F", "-f", f"--key-file={key}", f"--socket={sock}",
                                   f"--pid-file={t}/munge/munged.pid", f"--log-file={t}/log/munged.log",
                                   f"--seed-file={t}/munge/seed"])
        try:
            wait_for(lambda: m.poll() is not None or os.path.exists(sock), "munged's socket", limit=60)
        except Fatal:
            pass
        self.alive_or_skip("munged", m, self.procs[-1][2], f"{t}/log/munged.log")
        cred = self.run("munge", "-n", "-S", sock)
        ok = cred.returncode == 0 and subprocess.run(["unmunge", "-S", sock], input=cred.stdout, text=True,
                                                     capture_output=True).returncode == 0
        if not ok:
            skip(f"munge credentials do not round-trip through munged: {cred.stderr.strip()}")
        p_ctld, p_d = free_ports(2)
        with open(self.conf, "w") as f:
            f.write(f"""# generated by tests/slurm/test_slurm.py
ClusterName=qprectest
SlurmctldHost=localhost
SlurmctldPort={p_ctld}
SlurmdPort={p_d}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={t}/state
SlurmdSpoolDir={t}/spool
SlurmctldPidFile={t}/slurmctld.pid
SlurmdPidFile={t}/slurmd.pid
SlurmctldLogFile={t}/log/slurmctld.log
SlurmdLogFile={t}/log/slurmd.log
MailProg=/bin/true
# no cgroups in a container: processes tracked through /proc, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=10
MinJobAge=600
SlurmctldDebug=info
SlurmdDebug=info
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
""")
        c = self.daemon("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        try:
            wait_for(lambda: c.poll() is not None or "UP" in self.run("scontrol", "ping").stdout, "slurmctld",
                     limit=120, every=0.5)
        except Fatal:
            skip(f"slurmctld does not answer: {tail(f'{t}/log/slurmctld.log')}")
        self.alive_or_skip("slurmctld", c, self.procs[-1][2], f"{t}/log/slurmctld.log")
        d = self.daemon("slurmd", ["slurmd", "-D", "-N", "localhost", "-f", self.conf])
        try:
            wait_for(lambda: d.poll() is not None or self.run("sinfo", "-h", "-o", "%T").stdout.strip() == "idle",
                     "slurmd to register (node idle)", limit=120, every=0.5)
        except Fatal:
            skip(f"slurmd does not register: {tail(f'{t}/log/slurmd.log')}")
        self.alive_or_skip("slurmd", d, self.procs[-1][2], f"{t}/log/slurmd.log")
        print(f"cluster up: slurmctld :{p_ctld}, slurmd :{p_d}, {t}", flush=True)

    def queue(self):
        r = self.run("squeue", "-h", "-r", "-o", "%F_%K %T")
        return dict(l.split() for l in r.stdout.split("\n") if l.strip()) if r.returncode == 0 else None

    def stop(self):
        """Cancel every job, stop the daemons (SIGTERM to their process groups, then SIGKILL), then kill
        by pid whatever still refers to the temporary folder (slurmstepd, job processes)."""
        if self.procs and self.procs[-1][0] == "slurmd" and self.procs[-1][1].poll() is None:
            self.run("scancel", "--user=root")
            try:
                wait_for(lambda: self.queue() == {}, "the queue to empty at the end", limit=60, every=0.5)
            except Fatal as e:
                print("note:", e, flush=True)
        for name, p, _ in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(30)
        for pid in self.strays():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.5)
        left = self.strays()
        for name, p, _ in self.procs:
            if p.poll() is None:
                left.append(p.pid)
        return left

    def strays(self):
        """Processes (not this one) whose cwd, command line or open files are in the temporary folder."""
        found = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            try:
                refs = [os.readlink(f"/proc/{d}/cwd")]
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    refs.append(f.read().decode(errors="replace"))
                for fd in os.listdir(f"/proc/{d}/fd"):
                    try:
                        refs.append(os.readlink(f"/proc/{d}/fd/{fd}"))
                    except OSError:
                        pass
            except OSError:
                continue
            if any(self.tmp in r for r in refs):
                found.append(int(d))
        return found


# ---- helpers -------------------------------------------------------------------
def qsweep(cl, *args, timeout=600):
    return cl.run(QSWEEP, *args, timeout=timeout)


def status_table(cl, out):
    """qsweep --status: {run: (status, slurm column)} and the whole text."""
    p = qsweep(cl, "--status", out)
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r"(\S+)\s+(done|diverged|pending|running|failed|interrupted|not submitted|missing|unreadable)"
                     r"\s+(\S+)\s+(-|\d+_\d+(?: [A-Z_]+)?)", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(4))
    return p, rows


def run_state(path):
    try:
        with open_run(path) as f:
            return f["status"][-1]["state"].decode() if len(f["status"]) else ""
    except (OSError, KeyError):
        return None


def job_of(stdout):
    m = re.search(r"submitted job (\d+)", stdout)
    return int(m.group(1)) if m else None


# ---- the cases -----------------------------------------------------------------
STUDY = """[base]
data = corpus.txt
layers = 2
heads = 2
dim = 32
seq = 32
batch = 4
steps = {steps}
lr = 3e-3
warmup = 20
eval_every = 250
eval_batches = 4
qerr_every = 250
ckpt_every = {ckpt}
[grid]
recipe = bf16, fp8
seed = 1, 2
[sweep]
threads_per_run = 1
target_loss = 2.5
[slurm]
time = 30:00
{extra}"""

TIMING_MEDIANS = ("tokens_per_s_median", "step_ms_median")


def is_timing(col):
    """A summary column measured by the clock: the medians and every phase's share of step time."""
    return col in TIMING_MEDIANS or col.endswith("_share")


def case_sweep(cl, d):
    write_verse_corpus(os.path.join(d, "corpus.txt"))
    steps, ckpt = 2000, 100
    ini = os.path.join(d, "study.ini")
    with open(ini, "w") as f:
        f.write(STUDY.format(steps=steps, ckpt=ckpt, extra=""))
    out = os.path.join(d, "slurm")
    names = [f"recipe={r}_seed={s}" for r in ("bf16", "fp8") for s in (1, 2)]

    p = qsweep(cl, ini, "--out", out, "--slurm", "--submit")
    job1 = job_of(p.stdout)
    if not check(p.returncode == 0 and job1, f"--submit: exit {p.returncode}: {p.stdout} {p.stderr}"):
        raise Fatal("nothing submitted")
    check("4 of 4 runs (array tasks 0-3)" in p.stdout, f"--submit sent all four: {p.stdout}")
    with open(os.path.join(out, "slurm.jobs")) as f:
        check(f.read() == f"{job1} 0-3\n", "slurm.jobs records the job and its tasks")
    script = open(os.path.join(out, "qsweep.sbatch")).read()
    for line in ("#SBATCH --array=0-3", "#SBATCH --cpus-per-task=1", "#SBATCH --ntasks=1", "#SBATCH --time=30:00"):
        check(line + "\n" in script, f"script has {line}")

    # while the array runs: --status and --summarize (two CPUs, one per task: two tasks run, two wait)
    runs = os.path.join(out, "runs")
    wait_for(lambda: any(os.path.exists(os.path.join(runs, n + ".h5")) for n in names), "a run file", every=0.2)
    p, rows = status_table(cl, out)
    check(p.returncode == 0 and len(rows) == 4, f"--status while running: {p.returncode} {p.stdout} {p.stderr}")
    check("sacct did not answer" in p.stdout and "accounting storage is disabled" in p.stdout,
          f"--status says sacct is unavailable: {p.stdout}")
    check(all(s in ("pending", "running", "done") for s, _ in rows.values()), f"states while running: {rows}")
    check(all(sl.startswith(f"{job1}_") for _, sl in rows.values()), f"every run names its task: {rows}")
    p = qsweep(cl, "--summarize", out)
    check(p.returncode == 0, f"--summarize while the array runs: {p.returncode} {p.stderr}")
    summ = {r["name"]: r["status"] for r in read_csv(os.path.join(out, "summary.csv"))}
    check(sorted(summ) == names and any(s in ("running", "missing", "interrupted") for s in summ.values()),
          f"summary while running: {summ}")

    # suspend a task mid-run (after its first checkpoint), then cancel it
    victim, tried = None, set()
    for attempt in range(8):
        def candidate():
            for i, n in enumerate(names):
                if i not in tried and os.path.exists(os.path.join(runs, n + ".ckpt.h5")) \
                        and run_state(os.path.join(runs, n + ".h5")) == "running":
                    return (i,)
            return None
        cand, = wait_for(candidate, "a running run with a checkpoint", every=0.05)
        tried.add(cand)
        # the task of run i is JOB_i (array index = run index)
        r = cl.run("scontrol", "suspend", f"{job1}_{cand}")
        if r.returncode:
            continue  # it ended in between: pick another
        wait_for(lambda: (cl.queue() or {}).get(f"{job1}_{cand}") in ("SUSPENDED", None), "the suspension")
        if run_state(os.path.join(runs, names[cand] + ".h5")) != "done":
            victim = cand
            break
    if not check(victim is not None, "a task was suspended mid-run"):
        raise Fatal("no victim")
    vname = names[victim]
    r = cl.run("scancel", f"{job1}_{victim}")
    check(r.returncode == 0, f"scancel: {r.stderr}")
    def gone():
        q = cl.queue()
        return q is not None and f"{job1}_{victim}" not in q
    wait_for(gone, "the cancelled task to leave the queue")
    check(run_state(os.path.join(runs, vname + ".h5")) in ("running", "stopped"),
          f"cancelled run's file says running or stopped, not {run_state(os.path.join(runs, vname + '.h5'))}")
    p, rows = status_table(cl, out)
    check(rows.get(vname, ("?",))[0] == "interrupted", f"--status after scancel: {vname} is {rows.get(vname)}")
    check(not os.path.exists(os.path.join(runs, vname + ".exit")), "a cancelled run is not marked failed")

    # resubmit at once: only the cancelled run (the others are queued or done)
    p = qsweep(cl, ini, "--out", out, "--submit")
    job2 = job_of(p.stdout)
    check(p.returncode == 0 and job2 and f"1 of 4 runs (array tasks {victim})" in p.stdout,
          f"resubmission sends the cancelled run alone: {p.returncode} {p.stdout} {p.stderr}")
    with open(os.path.join(out, "slurm.jobs")) as f:
        check(f.read() == f"{job1} 0-3\n{job2} {victim}\n", "slurm.jobs has both submissions")
    wait_for(lambda: cl.queue() == {}, "the array to finish", every=0.5)
    p, rows = status_table(cl, out)
    check(all(s == "done" for s, _ in rows.values()) and rows[vname][1].startswith(f"{job2}_{victim}"),
          f"--status at the end: {rows}")
    p = qsweep(cl, ini, "--out", out, "--submit")
    check(p.returncode == 0 and "nothing to submit" in p.stdout, f"--submit with every run done: {p.stdout}")
    log = open(os.path.join(out, "logs", vname + ".log")).read()
    check(log.count("== qsweep.sbatch 20") == 2 and f"Slurm job {job2}_{victim}" in log,
          "the cancelled run's log has both attempts")
    with open_run(os.path.join(runs, vname + ".h5")) as f:
        check(list(f["train/step"][:]) == list(range(steps)), "resumed run: /train/step is 0..N-1 once")

    # the same experiment with qsweep -j 2: the same summary, the same losses bit for bit
    ref = os.path.join(d, "local")
    p = subprocess.run([QSWEEP, ini, "--out", ref, "-j", "2"], capture_output=True, text=True, timeout=WAIT)
    check(p.returncode == 0, f"qsweep -j 2: {p.returncode} {p.stderr}")
    qsweep(cl, "--summarize", out)
    a, b = read_csv(os.path.join(out, "summary.csv")), read_csv(os.path.join(ref, "summary.csv"))
    check(len(a) == len(b) == 4 and list(a[0]) == list(b[0]), "summary columns")
    for ra, rb in zip(a, b):
        for k in ra:
            if not is_timing(k):
                check(ra[k] == rb[k], f"{ra['name']}.{k}: Slurm {ra[k]!r} vs -j 2 {rb[k]!r}")
    for n in names:
        with open_run(os.path.join(runs, n + ".h5")) as fa, open_run(os.path.join(ref, "runs", n + ".h5")) as fb:
            for ds in ("train/loss", "eval/val_loss", "train/batch_hash"):
                x, y = fa[ds][:], fb[ds][:]
                check(x.shape == y.shape and x.tobytes() == y.tobytes(), f"{n} {ds}: bit-identical to -j 2")


MPI_STUDY = """[base]
data = corpus.txt
layers = 2
heads = 2
dim = 32
seq = 32
batch = 8
steps = 30
eval_every = 10
eval_batches = 2
qerr_every = 10
ckpt_every = 10
recipe = fp32
[sweep]
threads_per_run = 1
[slurm]
ntasks = 2
cpus_per_task = 1
"""


def case_mpi(cl, d):
    write_verse_corpus(os.path.join(d, "corpus.txt"))
    ini = os.path.join(d, "mpi.ini")
    with open(ini, "w") as f:
        f.write(MPI_STUDY)
    out = os.path.join(d, "mpi")
    p = qsweep(cl, ini, "--out", out, "--submit")
    job = job_of(p.stdout)
    if not check(p.returncode == 0 and job, f"--submit: {p.returncode} {p.stdout} {p.stderr}"):
        raise Fatal("nothing submitted")
    script = open(os.path.join(out, "qsweep.sbatch")).read()
    check("#SBATCH --ntasks=2\n" in script and "launch=(srun --mpi=pmix --ntasks=2 --cpus-per-task=1)\n" in script,
          "the script asks for 2 tasks and starts them with srun --mpi=pmix")
    wait_for(lambda: cl.queue() == {}, "the MPI run to finish", every=0.5)
    log = open(os.path.join(out, "logs", "base.log")).read()
    check("srun --mpi=pmix --ntasks=2" in log and "== qsweep.sbatch: exit 0" in log, f"the run's log: {log[-800:]}")
    p, rows = status_table(cl, out)
    check(rows.get("base", ("?",))[0] == "done", f"--status: {p.stdout}")
    run = os.path.join(out, "runs", "base.h5")
    import numpy as np
    with open_run(run) as f:
        check(f.attrs["world_size"] == "2", f"world_size {f.attrs.get('world_size')}")
        loss2 = f["train/loss"][:]
        hash2 = f["train/batch_hash"][:]
    # one process, the same command (outside Slurm): the dry run's
    dry = qsweep(cl, ini, "--out", out, "--dry-run").stdout
    cmd = next(l.split(": ", 1)[1] for l in dry.splitlines() if l.startswith("base: "))
    argv = [a.replace(run, os.path.join(d, "one.h5")) for a in shlex.split(cmd)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=WAIT)
    check(r.returncode == 0, f"single-process run: {r.stderr}")
    with open_run(os.path.join(d, "one.h5")) as f:
        loss1 = f["train/loss"][:]
        hash1 = f["train/batch_hash"][:]
        check(f.attrs["world_size"] == "1", "the reference is one process")
    check(hash1.tobytes() == hash2.tobytes(), "2 ranks see the batches one process sees")
    rel = float(np.max(np.abs(loss2 - loss1) / np.abs(loss1))) if len(loss1) == len(loss2) else float("inf")
    print(f"fp32, 2 ranks under srun vs 1 process: max relative loss difference {rel:.3g} over {len(loss1)} steps")
    check(rel < 1e-5, f"2-rank losses match one process (fp32 sums in another order only): {rel}")

    # mpi = mpirun: Open MPI's launcher inside the allocation instead of srun (root flags from the
    # environment, which sbatch passes on)
    ini2 = os.path.join(d, "mpirun.ini")
    with open(ini2, "w") as f:
        f.write(MPI_STUDY + "mpi = mpirun\n")
    out2 = os.path.join(d, "mpirun")
    env = dict(cl.env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.run([QSWEEP, ini2, "--out", out2, "--submit"], capture_output=True, text=True, env=env, timeout=120)
    check(p.returncode == 0 and "launch=(mpirun -np 2)\n" in open(os.path.join(out2, "qsweep.sbatch")).read(),
          f"mpi = mpirun: {p.stdout} {p.stderr}")
    wait_for(lambda: cl.queue() == {}, "the mpirun run to finish", every=0.5)
    with open_run(os.path.join(out2, "runs", "base.h5")) as f:
        check(f.attrs["world_size"] == "2" and f["status"][-1]["state"] == b"done", "mpirun: 2 ranks, done")
        check(f["train/loss"][:].tobytes() == loss2.tobytes(), "mpirun and srun --mpi=pmix: the same losses, bit for bit")


def main():
    if os.geteuid() != 0:
        skip("the Slurm daemons (slurmd, and slurmctld as SlurmUser=root) need root")
    ensure_packages()
    os.makedirs(WORK, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f"slurm-{CASE}-", dir=WORK)
    cl = Cluster(tmp)
    err = None
    t0 = time.monotonic()
    try:
        cl.start()
        d = os.path.join(tmp, "work")
        os.makedirs(d)
        {"sweep": case_sweep, "mpi": case_mpi}[CASE](cl, d)
    except Fatal as e:
        err = str(e)
    except KeyboardInterrupt:
        err = "interrupted"
    finally:
        left = cl.stop()
        check(not left, f"processes left running after the cluster stopped: {left}")
    if err:
        check(False, err)
        for n in ("slurmctld.log", "slurmd.log"):
            print(f"--- {n}: {tail(os.path.join(tmp, 'log', n), 15)}")
    status = check.summary(f"test_slurm {CASE}", f" ({time.monotonic() - t0:.0f} s)")
    if not status:
        shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
