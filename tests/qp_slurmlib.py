"""qp_slurmlib.py — what the two tests that start a Slurm cluster of their own
share: tests/slurm/test_slurm.py (one node on localhost, no accounting) and
tests/cluster/test_cluster.py (nodes in network namespaces, slurmdbd on
MariaDB). Both stand up Debian's slurm-wlm 22.05 and munge from files in a
temporary folder, as root, and must leave nothing running; this module holds
that machinery once, so the two cannot drift apart in how they start, wait,
skip and clean up:

  - the SKIP exit (77), the Fatal error that ends a case, the bounded wait;
  - installing missing packages with apt-get (each test names its own);
  - Daemons: the cluster's processes, each in a session of its own with its
    output in log/NAME.out; `started` waits for a daemon to answer or SKIPs;
    munged with a key of its own (its credentials must round-trip); stop()
    cancels every job, stops the daemons and kills by pid whatever still
    refers to the temporary folder; a subclass says how a client command runs
    (Slurm's tools, qsweep) and reads the queue;
  - slurm.conf from one template: what both clusters set alike is written
    here, what differs (nodes, ports, accounting, failure handling) is an
    argument;
  - on_cluster: a test's body between the cluster's start and its stop;
  - the two studies both submit (four single-CPU runs; one 2-rank MPI run)
    and the check that a study's summary equals that of `qsweep -j 2` here;
  - readers of what qsweep and the run files answer (job ids, run states,
    the summary's timing columns).

    sys.path.insert(0, <tests/>); from qp_slurmlib import Daemons, skip, wait_for

Imports only the standard library and qp_testlib (whose h5py reader loads
h5py when first used), so a test can import it before it knows it will SKIP.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from qp_testlib import TINY_BASE, open_run, read_csv

SKIP = 77
SBIN = ":/usr/sbin:/sbin"  # the daemons live in sbin, which a non-login PATH may lack


def skip(why):
    print("SKIP:", why, flush=True)
    sys.exit(SKIP)


class Fatal(Exception):
    """A case cannot go on (nothing submitted, a wait ran out): the test fails after the cluster stops."""


def wait_for(cond, what, limit=600, every=0.2):
    """Poll cond() until it returns something true; that value. Fatal after limit seconds."""
    t0 = time.monotonic()
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() - t0 > limit:
            raise Fatal(f"waited {limit} s for {what}")
        time.sleep(every)


def tail(path, n=8):
    """The last n lines of a log, joined on one line; "(no log)" when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-n:])
    except OSError:
        return "(no log)"


def ensure_packages(packages, programs):
    """Install packages with apt-get when one of programs is not on PATH (sbin included); SKIP when
    that is needed and this is not root; Fatal when apt-get fails."""
    missing = [p for p in programs if not shutil.which(p, path=os.environ.get("PATH", "") + SBIN)]
    if not missing:
        return
    if os.geteuid() != 0:
        skip(f"not root, and {', '.join(missing)} missing: apt-get install {' '.join(packages)}")
    print("installing", " ".join(packages), f"({', '.join(missing)} missing)", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode:
            raise Fatal(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-500:]}")


def kill_pids(pids):
    """SIGKILL each pid that is still there."""
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


class Daemons:
    """The processes of one test cluster, from files in tmp (slurm.conf, the munge key and socket,
    state, spool, logs under tmp/log). A subclass gives client() where it differs (the namespace a
    client runs in) and queue()."""

    def __init__(self, tmp, **env):
        self.tmp = tmp
        self.procs = []  # (name, Popen, log)
        self.conf = os.path.join(tmp, "slurm.conf")
        self.sock = os.path.join(tmp, "munge", "munge.sock")
        self.env = dict(os.environ, SLURM_CONF=self.conf, OMPI_MCA_btl_vader_single_copy_mechanism="none", **env)
        self.env["PATH"] = self.env.get("PATH", "") + SBIN

    def client(self, *argv, timeout=120):
        """A client command (Slurm's tools, qsweep) with the cluster's environment."""
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)

    def queue(self):
        raise NotImplementedError

    def daemon(self, name, argv, prefix=()):
        """Start prefix + argv in a session (process group) of its own, its output in log/NAME.out."""
        log = os.path.join(self.tmp, "log", name + ".out")
        with open(log, "w") as out:
            p = subprocess.Popen([*prefix, *argv], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=self.env, cwd=self.tmp, start_new_session=True)
        self.procs.append((name, p, log))
        return p

    def started(self, name, p, cond, what, logfile, limit=120, note=lambda: ""):
        """Wait until cond() holds while daemon p runs; SKIP (with the log's tail) when p exits first
        or cond does not hold within limit seconds: the daemon cannot start here."""
        try:
            wait_for(lambda: p.poll() is not None or cond(), what, limit=limit, every=0.3)
        except Fatal:
            skip(f"{name}: no {what} after {limit} s: {tail(logfile)} {note() or ''}")
        if p.poll() is not None:
            skip(f"{name} cannot start here (exit {p.returncode}): {tail(os.path.join(self.tmp, 'log', name + '.out'))}"
                 f" {tail(logfile)}")

    def munge(self, prefix=()):
        """munged with a fresh key in tmp/munge, its socket self.sock (a file: every network namespace
        reaches it); SKIP unless a credential round-trips through it."""
        t = self.tmp
        os.makedirs(os.path.join(t, "munge"))
        os.chmod(os.path.join(t, "munge"), 0o755)  # munged wants its socket's folder searchable by all
        key = os.path.join(t, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        m = self.daemon("munged", ["munged", "-F", "-f", f"--key-file={key}", f"--socket={self.sock}",
                                   f"--pid-file={t}/munge/munged.pid", f"--log-file={t}/log/munged.log",
                                   f"--seed-file={t}/munge/seed"], prefix)
        self.started("munged", m, lambda: os.path.exists(self.sock), "socket", f"{t}/log/munged.log", limit=60)
        cred = subprocess.run(["munge", "-n", "-S", self.sock], capture_output=True, text=True, env=self.env)
        ok = cred.returncode == 0 and subprocess.run(["unmunge", "-S", self.sock], input=cred.stdout, text=True,
                                                     capture_output=True, env=self.env).returncode == 0
        if not ok:
            skip(f"munge credentials do not round-trip through munged: {cred.stderr.strip()}")

    def kill_rest(self):
        """What a subclass kills after the daemons and before the strays (a namespace's processes)."""

    def stop(self):
        """Cancel every job while slurmctld runs, stop the daemons (SIGTERM to their process groups, then
        SIGKILL), kill_rest(), then kill by pid whatever still refers to the temporary folder (slurmstepd,
        job processes). What is left: pids."""
        if any(p.poll() is None for n, p, _ in self.procs if n == "slurmctld"):
            self.client("scancel", "--user=root")
            try:
                wait_for(lambda: self.queue() in ({}, None), "the queue to empty at the end", limit=60, every=0.5)
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
        self.kill_rest()
        kill_pids(self.strays())
        time.sleep(0.5)
        return self.strays() + [p.pid for _, p, _ in self.procs if p.poll() is None]

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


# ---- slurm.conf -----------------------------------------------------------------
NO_ACCOUNTING = """JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
"""

SLURM_CONF = """# generated by {writer}
ClusterName={cluster}
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
{auth}StateSaveLocation={t}/state
SlurmdSpoolDir={t}/spool{spool}
SlurmctldPidFile={t}/slurmctld.pid
SlurmdPidFile={t}/slurmd{node}.pid
SlurmctldLogFile={t}/log/slurmctld.log
SlurmdLogFile={t}/log/slurmd{node}.log
MailProg=/bin/true
# no cgroups in a container: processes tracked through /proc, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
{accounting}JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
{scheduler}MpiDefault=none
SwitchType=switch/none
{failure}ReturnToService=2
KillWait={kill_wait}
MinJobAge=600
SlurmctldDebug=info
SlurmdDebug=info
{nodes}
PartitionName={partition} Nodes={node_list} Default=YES MaxTime=INFINITE State=UP
"""


def write_slurm_conf(d, writer, *, cluster, host, ports, nodes, partition, kill_wait, auth,
                     accounting=NO_ACCOUNTING, scheduler="", failure="", per_node=False):
    """slurm.conf in folder d (state, spool, pid files and logs there too): nodes is {name: the rest of
    its NodeName line}; ports (slurmctld's, slurmd's); auth, accounting, scheduler and failure are
    whole lines (each ending in a newline, or empty); per_node gives each slurmd its own spool folder,
    pid file and log (%n), for several slurmd on one host."""
    text = SLURM_CONF.format(
        writer=writer, cluster=cluster, host=host, ctld_port=ports[0], d_port=ports[1], auth=auth, t=d,
        spool="/%n" if per_node else "", node="-%n" if per_node else "", accounting=accounting,
        scheduler=scheduler, failure=failure, kill_wait=kill_wait,
        nodes="\n".join(f"NodeName={n} {spec}" for n, spec in nodes.items()), partition=partition,
        node_list=",".join(nodes))
    path = os.path.join(d, "slurm.conf")
    with open(path, "w") as f:
        f.write(text)
    return path


def on_cluster(cl, check, body, logs):
    """Start cl, run body(work folder) in cl.tmp/work, stop cl — also when body raises Fatal or is
    interrupted — and check that nothing is left running. A Fatal or an interruption is a failed
    check, followed by the last lines of each of logs (names in cl.tmp/log)."""
    err = None
    try:
        cl.start()
        d = os.path.join(cl.tmp, "work")
        os.makedirs(d)
        body(d)
    except Fatal as e:
        err = str(e)
    except KeyboardInterrupt:
        err = "interrupted"
    finally:
        left = cl.stop()
        check(not left, f"processes left running after the cluster stopped: {left}")
    if err:
        check(False, err)
        for n in logs:
            print(f"--- {n}: {tail(os.path.join(cl.tmp, 'log', n), 15)}")


# ---- the studies both submit ----------------------------------------------------------
# four single-CPU runs, bf16 and fp8 by seeds 1 and 2, each long enough to be caught mid-run
STUDY = TINY_BASE + """batch = 4
steps = {steps}
lr = 3e-3
warmup = 20
eval_every = {every}
eval_batches = 4
qerr_every = {every}
ckpt_every = {ckpt}
[grid]
recipe = bf16, fp8
seed = 1, 2
[sweep]
threads_per_run = 1
target_loss = 2.5
[slurm]
time = 30:00
"""
STUDY_RUNS = [f"recipe={r}_seed={s}" for r in ("bf16", "fp8") for s in (1, 2)]

# one run of 2 MPI ranks, one CPU each; {slurm} ends the [slurm] section
MPI_STUDY = TINY_BASE + """batch = 8
steps = {steps}
eval_every = {every}
eval_batches = 2
qerr_every = {every}
ckpt_every = {every}
recipe = {recipe}
[sweep]
threads_per_run = 1
[slurm]
ntasks = 2
cpus_per_task = 1
{slurm}"""


def same_summary(cl, check, qsweep, ini, out, ref, where, timeout):
    """The study of ini undisturbed on this host (`qsweep -j 2` into ref) against the one the cluster
    ran into out (summarized again through cl): the same columns, and every value equal but the
    timing columns. True when they are."""
    p = subprocess.run([qsweep, ini, "--out", ref, "-j", "2"], capture_output=True, text=True, timeout=timeout)
    check(p.returncode == 0, f"qsweep -j 2: {p.returncode} {p.stderr}")
    cl.client(qsweep, "--summarize", out)
    a, b = read_csv(os.path.join(out, "summary.csv")), read_csv(os.path.join(ref, "summary.csv"))
    same = check(len(a) == len(b) == 4 and list(a[0]) == list(b[0]), "summary columns")
    for ra, rb in zip(a, b):
        for k in ra:
            if not is_timing(k):
                same = check(ra[k] == rb[k], f"{ra['name']}.{k}: {where} {ra[k]!r} vs -j 2 {rb[k]!r}") and same
    return same


# ---- qsweep's and the run files' answers ---------------------------------------------
def job_of(stdout):
    """The job id in qsweep --submit's `submitted job N`; None when there is none."""
    m = re.search(r"submitted job (\d+)", stdout)
    return int(m.group(1)) if m else None


def run_state(path):
    """The last /status state of a run file ("" before the first); None while it cannot be read."""
    try:
        with open_run(path) as f:
            return f["status"][-1]["state"].decode() if len(f["status"]) else ""
    except (OSError, KeyError, IndexError):
        return None


def is_timing(col):
    """A summary column measured by the clock: the medians and every phase's share of step time."""
    return col in ("tokens_per_s_median", "step_ms_median") or col.endswith("_share")
