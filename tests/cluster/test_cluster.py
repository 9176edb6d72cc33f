#!/usr/bin/env python3
"""test_cluster.py — qsweep and MPI qtrain on a real multi-node Slurm cluster that this test builds
out of network namespaces, with accounting, and a node lost in the middle of a study.

    test_cluster.py QSWEEP QTRAIN WORKDIR

The cluster (Debian's slurm-wlm 22.05, slurmdbd, munge, mariadb-server; all started here, from
files in a temporary folder under WORKDIR, and stopped at the end, also when a check fails or the
test is interrupted):
  - three network namespaces, qpcPID-ctl, qpcPID-n1, qpcPID-n2; a bridge in -ctl (10.213.7.1/24)
    and a veth pair from it to each node (10.213.7.11, 10.213.7.12); loopback in each. No address
    or route is added outside these namespaces, which are deleted at the end.
  - in -ctl: a MariaDB server (its own datadir, socket and 127.0.0.1:3306 inside the namespace, a
    user for slurmdbd), slurmdbd (accounting_storage/mysql), slurmctld (accounting through
    slurmdbd, jobacct_gather/linux so sacct has MaxRSS); every client (sbatch, squeue, sacct,
    qsweep) runs in -ctl too.
  - in each node namespace: slurmd -N nK (its own UTS namespace, hostname nK), 1 CPU per node, so
    two single-CPU tasks run at once, one per node, and a 2-rank job spans both nodes.
  - one munged (its socket is a file: every namespace reaches it).
The checks:
  1. MPI across nodes: a 2-rank qtrain ([slurm] ntasks = 2, srun --mpi=pmix) lands on n1 and n2
     (sacct NodeList) and its losses, validation losses and batch hashes equal, bit for bit, those
     of `mpirun -np 2` of the same command on this one host; the comm phase (/train/comm_ms) is
     logged and non-zero.
  2. A study across nodes with a node lost: `qsweep --submit` of a 4-run study; once the task on
     n1 has written a checkpoint, every process of n1's namespace (slurmd, slurmstepd, qtrain) is
     SIGKILLed. slurmctld marks n1 down (SlurmdTimeout), the task fails with NODE_FAIL and, as the
     script has --requeue, goes back to the queue and runs again on n2, where qtrain --resume
     continues from the checkpoint. sacct shows tasks on both nodes and the NODE_FAIL attempt;
     `qsweep --status` shows sacct's state, exit code, elapsed time, MaxRSS and node; the summary
     equals (but for timing columns) that of `qsweep -j 2` of the same file on this host, and every
     run file's losses, validation losses, quantization-error and outlier rows and events are
     bit-identical to that undisturbed run's (timing, power and host columns aside).
  3. The lost node comes back (slurmd started again: ReturnToService=2) and a 2-rank MPI run loses
     a node in its turn: n2 is killed after the run's first checkpoint, the job is requeued, n2
     comes back, and the run resumes on both nodes from its checkpoint, ending bit-identical to
     the undisturbed 2-rank run of check 1.
The last line: `cluster: nodes=N tasks=T requeued=R resumed=yes|no identical=yes|no`.
Exit 0 pass, 1 fail, 77 skip (not root; no network namespaces; a daemon cannot start here).
Every wait is bounded (generous limits, no timing assertions)."""
import functools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_slurmlib import (MPI_STUDY, STUDY, STUDY_RUNS, Daemons, Fatal, ensure_packages, job_of,  # noqa: E402
                         kill_pids, on_cluster, run_state, same_summary, skip, tail, wait_for, write_slurm_conf)
from qp_testlib import Checks, open_run, write_verse_corpus  # noqa: E402

QSWEEP, QTRAIN, WORK = map(os.path.abspath, sys.argv[1:4])
WAIT = 600  # seconds: the bound of every wait
wait_for = functools.partial(wait_for, limit=WAIT)
NET = "10.213.7"
NODES = ["n1", "n2"]
check = Checks()
T0 = time.monotonic()


def say(*a):
    print(f"[{time.monotonic() - T0:6.1f} s]", *a, flush=True)


# ---- packages -----------------------------------------------------------------
PACKAGES = ["slurmctld", "slurmd", "slurmdbd", "slurm-client", "munge", "mariadb-server", "openmpi-bin", "iproute2",
            "util-linux"]
PROGRAMS = ["slurmctld", "slurmd", "slurmdbd", "sbatch", "squeue", "sacct", "sacctmgr", "scontrol", "sinfo",
            "munged", "munge", "unmunge", "mariadbd", "mariadb-install-db", "mariadb", "mpirun", "ip", "unshare",
            "nsenter"]


# ---- the cluster ---------------------------------------------------------------
class Cluster(Daemons):
    def __init__(self, tmp):
        super().__init__(tmp, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        tag = f"qpc{os.getpid()}"
        self.ns = {"ctl": f"{tag}-ctl", **{n: f"{tag}-{n}" for n in NODES}}
        self.veth = {n: f"{tag[:9]}{n}" for n in NODES}  # interface names: at most 15 bytes
        self.addr = {"ctl": f"{NET}.1", **{n: f"{NET}.{11 + i}" for i, n in enumerate(NODES)}}
        self.made_ns = []
        self.slurmd = {}

    # -- plumbing
    def enter(self, ns):
        """The prefix that runs a command in namespace ns's network (nsenter, not `ip netns exec`,
        which mounts a /sys of its own without the cgroup tree slurmd reads)."""
        return ["nsenter", f"--net=/run/netns/{self.ns[ns]}"]

    def sh(self, *argv, ns=None, timeout=120, check_rc=True, **kw):
        if ns:
            argv = (*self.enter(ns), *argv)
        r = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout, **kw)
        if check_rc and r.returncode:
            raise Fatal(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
        return r

    def client(self, *argv, timeout=120):
        """A client command (Slurm's tools, qsweep) in the controller's namespace."""
        return self.sh(*argv, ns="ctl", timeout=timeout, check_rc=False)

    def ns_daemon(self, name, argv, ns, host=None, tmpdir=None):
        """argv in namespace ns, in a process group of its own; with host, in a UTS namespace of its
        own whose hostname is host (Slurm's daemons check theirs against slurm.conf); with tmpdir,
        in a mount namespace of its own where tmpdir is /tmp (a node's local /tmp: Slurm's PMIx
        plugin makes a folder there named by the job step, on every node of the step)."""
        if host:
            mount = f"mount --bind {tmpdir} /tmp && " if tmpdir else ""
            argv = ["unshare", "--uts", *(["--mount", "--propagation", "private"] if tmpdir else []), "sh", "-c",
                    f'hostname {host} && {mount}exec "$@"', "sh", *argv]
        return self.daemon(name, argv, prefix=self.enter(ns))

    # -- network
    def network(self):
        for ns in self.ns.values():
            r = subprocess.run(["ip", "netns", "add", ns], capture_output=True, text=True)
            if r.returncode:
                skip(f"ip netns add {ns}: {r.stderr.strip()} (network namespaces need root and CAP_SYS_ADMIN)")
            self.made_ns.append(ns)
            self.sh("ip", "-n", ns, "link", "set", "lo", "up")
        c = self.ns["ctl"]
        self.sh("ip", "-n", c, "link", "add", "br0", "type", "bridge")
        self.sh("ip", "-n", c, "addr", "add", f"{self.addr['ctl']}/24", "dev", "br0")
        self.sh("ip", "-n", c, "link", "set", "br0", "up")
        for n in NODES:
            self.sh("ip", "link", "add", self.veth[n], "netns", c, "type", "veth", "peer", "name", "eth0",
                    "netns", self.ns[n])
            self.sh("ip", "-n", c, "link", "set", self.veth[n], "master", "br0", "up")
            self.sh("ip", "-n", self.ns[n], "addr", "add", f"{self.addr[n]}/24", "dev", "eth0")
            self.sh("ip", "-n", self.ns[n], "link", "set", "eth0", "up")

    # -- daemons
    def mariadb(self):
        t = self.tmp
        db = os.path.join(t, "db")
        r = self.sh("mariadb-install-db", "--no-defaults", f"--datadir={db}", "--user=root",
                    "--auth-root-authentication-method=socket", "--skip-test-db", check_rc=False, timeout=300)
        if r.returncode:
            skip(f"mariadb-install-db: exit {r.returncode}: {r.stderr.strip()[-300:]}")
        self.dbsock = os.path.join(t, "db.sock")
        p = self.ns_daemon("mariadbd", ["mariadbd", "--no-defaults", f"--datadir={db}", f"--socket={self.dbsock}",
                                     "--port=3306", "--bind-address=127.0.0.1", "--user=root",
                                     f"--pid-file={t}/mariadbd.pid", f"--log-error={t}/log/mariadbd.log",
                                     "--innodb-buffer-pool-size=128M", "--innodb-lock-wait-timeout=900", "--skip-log-bin"], "ctl")
        ping = lambda: self.sh("mariadb", "--no-defaults", "-S", self.dbsock, "-u", "root", "-e", "SELECT 1",
                               check_rc=False).returncode == 0
        self.started("mariadbd", p, ping, "answer on its socket", f"{t}/log/mariadbd.log")
        self.sh("mariadb", "--no-defaults", "-S", self.dbsock, "-u", "root", "-e",
                "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'qprec-test';"
                "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")

    def write_conf(self):
        t = self.tmp
        dbd = os.path.join(t, "slurmdbd.conf")  # slurmdbd reads it from slurm.conf's folder
        with open(dbd, "w") as f:
            f.write(f"""# generated by tests/cluster/test_cluster.py
AuthType=auth/munge
AuthInfo=socket={self.sock}
DbdHost=ctl
DbdAddr={self.addr['ctl']}
DbdPort=6819
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=slurm
StoragePass=qprec-test
StorageLoc=slurm_acct_db
PidFile={t}/slurmdbd.pid
LogFile={t}/log/slurmdbd.log
DebugLevel=info
""")
        os.chmod(dbd, 0o600)
        write_slurm_conf(
            t, "tests/cluster/test_cluster.py", cluster="qpcluster", host=f"ctl({self.addr['ctl']})", ports=(6817, 6818),
            nodes={n: f"NodeAddr={self.addr[n]} NodeHostname={n} CPUs=1 State=UNKNOWN" for n in NODES},
            partition="all", kill_wait=5, per_node=True,
            auth=f"""# cred_expire: also how long a requeued job waits before it may start again (default 120 s)
AuthInfo=socket={self.sock},cred_expire=10
""",
            accounting=f"""# accounting: slurmdbd (MariaDB); per-step memory from /proc
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost={self.addr['ctl']}
AccountingStoragePort=6819
# the munge socket of connections to slurmdbd (AuthInfo covers the others)
AccountingStoragePass={self.sock}
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
""",
            scheduler="SchedulerParameters=bf_interval=2\n",
            failure="""# a node silent for SlurmdTimeout seconds is DOWN and its jobs NODE_FAIL (requeued with --requeue);
# a DOWN node that registers again is back in service
SlurmdTimeout=6
JobRequeue=1
""")

    def start_slurmd(self, n, reboot=False):
        """slurmd of node n. With reboot, the node comes back as after a crash: its /tmp empty, as a
        boot leaves it, and no PMIx file of a lost job step left in slurmd's spool. Slurm 22.05's
        PMIx plugin removes neither a stale folder (/tmp/spmix_appdir_UID_JOB.STEP,
        SPOOL/pmix.JOB.STEP) nor a stale socket (SPOOL/stepd.slurm.pmix.JOB.STEP) of the same name
        before it makes its own, and a requeued job keeps its id: the requeued MPI step would fail
        on that node ("File exists", "Address already in use")."""
        if reboot:
            nt = os.path.join(self.tmp, "tmp", n)
            shutil.rmtree(nt)
            os.makedirs(nt)
            os.chmod(nt, 0o1777)
            spool = os.path.join(self.tmp, "spool", n)
            for f in os.listdir(spool):
                if f.startswith("stepd.slurm.pmix."):
                    os.unlink(os.path.join(spool, f))
                elif f.startswith("pmix."):
                    shutil.rmtree(os.path.join(spool, f))
        p = self.ns_daemon(f"slurmd-{n}-{len(self.procs)}", ["slurmd", "-D", "-N", n, "-f", self.conf], n, host=n,
                        tmpdir=os.path.join(self.tmp, "tmp", n))
        self.slurmd[n] = p
        return p

    def node_state(self, n):
        r = self.client("sinfo", "-h", "-N", "-n", n, "-o", "%T")
        return r.stdout.strip() if r.returncode == 0 else ""

    def start(self):
        t = self.tmp
        for d in ("state", "spool", "log"):
            os.makedirs(os.path.join(t, d))
        for n in NODES:
            os.makedirs(os.path.join(t, "spool", n))
            os.makedirs(os.path.join(t, "tmp", n))
            os.chmod(os.path.join(t, "tmp", n), 0o1777)
        self.network()
        self.munge(prefix=self.enter("ctl"))
        self.mariadb()
        self.write_conf()
        d = self.ns_daemon("slurmdbd", ["slurmdbd", "-D"], "ctl", host="ctl")
        last = {}

        def dbd_answers():
            last["r"] = r = self.client("sacctmgr", "-n", "show", "cluster")
            return r.returncode == 0
        self.started("slurmdbd", d, lambda: " started" in tail(f"{t}/log/slurmdbd.log", 50) and dbd_answers(),
                     "answer to sacctmgr", f"{t}/log/slurmdbd.log", note=lambda: last.get("r") and last["r"].stderr)
        # the cluster in the accounting database (slurmctld registers with it)
        self.client("sacctmgr", "-i", "add", "cluster", "qpcluster")
        c = self.ns_daemon("slurmctld", ["slurmctld", "-D", "-f", self.conf], "ctl", host="ctl")
        self.started("slurmctld", c, lambda: "UP" in self.client("scontrol", "ping").stdout, "answer to scontrol ping",
                     f"{t}/log/slurmctld.log")
        for n in NODES:
            self.start_slurmd(n)
        for n in NODES:
            self.started(f"slurmd {n}", self.slurmd[n], lambda: self.node_state(n) == "idle", "registration (idle)",
                         f"{t}/log/slurmd-{n}.log")
        say(f"cluster up: slurmctld {self.addr['ctl']}:6817, slurmdbd :6819 on MariaDB, nodes "
            + ", ".join(f"{n} {self.addr[n]}" for n in NODES))

    def kill_node(self, n):
        """SIGKILL every process of node n's namespace: slurmd, slurmstepd, the job's processes."""
        r = self.sh("ip", "netns", "pids", self.ns[n], check_rc=False)
        pids = [int(x) for x in r.stdout.split()]
        kill_pids(pids)
        self.slurmd[n].wait(30)
        return len(pids)

    def queue(self):
        r = self.client("squeue", "-h", "-r", "-o", "%i %T %N")
        if r.returncode:
            return None
        return {l.split()[0]: l.split()[1:] for l in r.stdout.splitlines() if l.strip()}

    def kill_rest(self):
        """Every process still in a node's or the controller's namespace."""
        for ns in self.made_ns:
            r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            kill_pids(r.stdout.split())

    def stop(self):
        """Daemons.stop(), then delete the namespaces (their interfaces go with them)."""
        left = super().stop()
        for ns in self.made_ns:
            r = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True)
            if r.returncode:
                left.append(f"namespace {ns}: {r.stderr.strip()}")
        return left


# ---- helpers -------------------------------------------------------------------
def sacct(cl, job, dup=False):
    """[(jobid, state, exitcode, nodelist)] of the allocations of job (every attempt with dup)."""
    argv = ["sacct", "-n", "-P", "-X", "-j", str(job), "-o", "JobID,State,ExitCode,NodeList"]
    if dup:
        argv.append("--duplicates")
    r = cl.client(*argv)
    return [tuple(l.split("|")) for l in r.stdout.splitlines() if l.count("|") == 3]


def resumed_at(path):
    """The step at which the run file's /status says a later attempt resumed from a checkpoint
    ("resumed from ..."); None when no attempt did."""
    with open_run(path) as f:
        for row in f["status"][:]:
            if row["message"].decode().startswith("resumed from "):
                return int(row["step"])
    return None


# the clock's and the host's: the only columns two runs of the same command may differ in
TIMED = re.compile(r"(_ms|tokens_per_s|energy_j|power_w|gpu_util)$")


def same_run(a, b, what):
    """Every dataset of run file a equals b's bit for bit (timing, power and the status messages aside);
    the first difference, or None."""
    import h5py
    import numpy as np
    with open_run(a) as fa, open_run(b) as fb:
        names = []
        fa.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        other = []
        fb.visititems(lambda n, o: other.append(n) if isinstance(o, h5py.Dataset) else None)
        if sorted(names) != sorted(other):
            return f"{what}: datasets {sorted(set(names) ^ set(other))} in one file only"
        for n in sorted(names):
            if n == "status" or TIMED.search(n):
                continue
            x, y = fa[n][()], fb[n][()]
            if x.dtype != y.dtype or x.shape != y.shape or np.asarray(x).tobytes() != np.asarray(y).tobytes():
                return f"{what}: /{n} differs ({x.shape} vs {y.shape})"
    return None


# ---- the checks ------------------------------------------------------------------
def mpi_run(cl, d, steps, kill=None):
    """A 2-rank run through qsweep --submit; with kill, node `kill` is lost after the run's first
    checkpoint and brought back once Slurm has requeued the job. The run file's path and job id."""
    ini = os.path.join(d, f"mpi{steps}{kill or ''}.ini")
    with open(ini, "w") as f:
        f.write(MPI_STUDY.format(steps=steps, every=20, recipe="fp8", slurm="time = 20:00\n"))
    out = os.path.join(d, f"mpi-{kill or 'whole'}")
    p = cl.client(QSWEEP, ini, "--out", out, "--submit")
    job = job_of(p.stdout)
    if not check(p.returncode == 0 and job, f"MPI --submit: {p.returncode} {p.stdout} {p.stderr}"):
        raise Fatal("nothing submitted")
    run = os.path.join(out, "runs", "base.h5")
    if kill:
        wait_for(lambda: os.path.exists(os.path.join(out, "runs", "base.ckpt.h5")) and run_state(run) == "running",
                 "the MPI run's first checkpoint", every=0.05)
        n = cl.kill_node(kill)
        say(f"MPI run: killed node {kill} ({n} processes: slurmd, slurmstepd, a rank)")
        wait_for(lambda: cl.node_state(kill).startswith("down"), f"{kill} to be marked down", every=0.5)
        states = wait_for(lambda: {s[1] for s in sacct(cl, job, dup=True)} & {"NODE_FAIL", "COMPLETED"},
                          "the NODE_FAIL in sacct", every=0.5)
        if "NODE_FAIL" not in states:
            raise Fatal(f"the MPI run completed before node {kill} was lost: nothing to requeue")
        cl.start_slurmd(kill, reboot=True)
        wait_for(lambda: cl.node_state(kill) in ("idle", "mixed", "allocated"), f"{kill} back in service", every=0.5)
        say(f"MPI run: {kill} is back")
    wait_for(lambda: cl.queue() == {}, "the MPI run to finish", every=0.5)
    return ini, out, run, job


def check_mpi(cl, d):
    steps = 100
    ini, out, run, job = mpi_run(cl, d, steps)
    # slurmdbd may first hold a job that ends within a second or two of its
    # start with the batch host alone; its allocation's node list follows
    def spread():
        a = sacct(cl, job)
        return a if len(a) == 1 and a[0][3] == "n[1-2]" else None
    try:
        acct = wait_for(spread, "sacct to list the MPI run's nodes", limit=30, every=1)
    except Fatal:
        acct = sacct(cl, job)
    say(f"MPI run: sacct {acct}")
    check(len(acct) == 1 and acct[0][1] == "COMPLETED" and acct[0][3] == "n[1-2]",
          f"the 2-rank run spans both nodes: sacct {acct}")
    log = open(os.path.join(out, "logs", "base.log")).read()
    check("srun --mpi=pmix --ntasks=2" in log and "== qsweep.sbatch: exit 0" in log, f"the run's log: {log[-600:]}")
    with open_run(run) as f:
        check(f.attrs["world_size"] == "2", f"world_size {f.attrs.get('world_size')}")
        comm = f["train/comm_ms"][:]
        check(len(comm) == steps and float(comm.sum()) > 0, f"the comm phase is logged: sum {comm.sum()}")
        say(f"MPI run across nodes: comm {float(comm.mean()):.3f} ms/step of {float(f['train/step_ms'][:].mean()):.3f}")
    # the same 2 ranks on one host: mpirun -np 2 of the same command, outside Slurm
    dry = cl.client(QSWEEP, ini, "--out", out, "--dry-run").stdout
    cmd = next(l.split(": ", 1)[1] for l in dry.splitlines() if l.startswith("base: "))
    one = os.path.join(d, "mpi-onehost.h5")
    argv = ["mpirun", "-np", "2", *[a.replace(run, one) for a in shlex.split(cmd)]]
    r = subprocess.run(argv, capture_output=True, text=True, env=cl.env, timeout=WAIT)
    check(r.returncode == 0, f"mpirun -np 2 on one host: {r.stderr[-500:]}")
    diff = same_run(run, one, "2 ranks on n1+n2 vs 2 ranks on one host")
    check(diff is None, diff or "")
    say(f"MPI across nodes = 2 ranks on one host, bit for bit: {'yes' if diff is None else 'no'}")
    return ini, run, steps, diff is None


def check_sweep(cl, d, stats):
    steps = 1500
    ini = os.path.join(d, "study.ini")
    with open(ini, "w") as f:
        f.write(STUDY.format(steps=steps, every=200, ckpt=100))
    out = os.path.join(d, "study")
    names = STUDY_RUNS
    runs = os.path.join(out, "runs")
    p = cl.client(QSWEEP, ini, "--out", out, "--submit")
    job = job_of(p.stdout)
    if not check(p.returncode == 0 and job, f"--submit: {p.returncode} {p.stdout} {p.stderr}"):
        raise Fatal("nothing submitted")
    script = open(os.path.join(out, "qsweep.sbatch")).read()
    check("#SBATCH --requeue\n" in script, "the script asks Slurm to requeue a task whose node fails")

    # the task on n1, once it has a checkpoint and is still running
    def victim():
        q = cl.queue() or {}
        for jid, (state, *node) in q.items():
            m = re.fullmatch(rf"{job}_(\d+)", jid)
            if m and state == "RUNNING" and node == ["n1"]:
                i = int(m.group(1))
                if os.path.exists(os.path.join(runs, names[i] + ".ckpt.h5")) and \
                        run_state(os.path.join(runs, names[i] + ".h5")) == "running":
                    return (i,)
        return None
    i, = wait_for(victim, "a running task on n1 with a checkpoint", every=0.05)
    vname = names[i]
    n = cl.kill_node("n1")
    t_kill = time.monotonic()
    say(f"study: killed node n1 ({n} processes) while task {job}_{i} ({vname}) ran there")
    wait_for(lambda: cl.node_state("n1").startswith("down"), "n1 to be marked down", every=0.5)
    say(f"study: n1 is {cl.node_state('n1')} after {time.monotonic() - t_kill:.0f} s")
    p = cl.client(QSWEEP, "--status", out)
    say("qsweep --status with n1 down:\n" + p.stdout)
    wait_for(lambda: cl.queue() == {}, "the study to finish on n2", every=1)
    say(f"study: finished {time.monotonic() - t_kill:.0f} s after the kill")

    # slurmdbd records the last ends a moment after the queue empties
    def recorded():
        a = sacct(cl, job)
        return a if len(a) == 4 and all(r[1] == "COMPLETED" for r in a) else None
    try:
        wait_for(recorded, "sacct to record the study's ends", limit=30, every=1)
    except Fatal:
        pass  # the checks below say what sacct holds
    every = sacct(cl, job, dup=True)
    say("sacct --duplicates: " + "; ".join(" ".join(r) for r in every))
    nodes = {r[3] for r in every}
    check({"n1", "n2"} <= nodes, f"tasks ran on both nodes: {nodes}")
    failed = {r[0] for r in every if r[1] == "NODE_FAIL"}
    check(failed == {f"{job}_{i}"}, f"the task on n1 ended NODE_FAIL: {failed}")
    last = sacct(cl, job)
    check(len(last) == 4 and all(r[1] == "COMPLETED" and r[2] == "0:0" for r in last),
          f"every task completed in the end: {last}")
    check(dict((r[0], r[3]) for r in last).get(f"{job}_{i}") == "n2", f"the requeued task ran again on n2: {last}")
    stats["requeued"] = len(failed)
    stats["tasks"] = len(last)
    stats["nodes"] = len({r[3] for r in every if r[3] in NODES})

    # --status: sacct's columns
    p = cl.client(QSWEEP, "--status", out)
    say("qsweep --status at the end:\n" + p.stdout)
    check(p.returncode == 0 and "sacct did not answer" not in p.stdout, f"--status with accounting: {p.stdout} {p.stderr}")
    rows = {l.split()[0]: l.split() for l in p.stdout.splitlines() if l.startswith("recipe=")}
    # MaxRSS: sacct has it once jobacct_gather has sampled the task (every second here); a task done
    # within about a second may end before its first sample and show '-', so every row has a MaxRSS
    # or ran under 2 s, and at least one row has one
    for nm in names:
        r = rows.get(nm, [])
        ok = len(r) >= 9 and r[1] == "done" and r[4] == "COMPLETED" and r[5] == "0:0" \
            and re.fullmatch(r"\d\d:\d\d:\d\d", r[6]) and r[8] in NODES \
            and (re.fullmatch(r"\d+\.\dM", r[7]) or (r[7] == "-" and r[6] in ("00:00:00", "00:00:01")))
        check(ok, f"--status row of {nm}: state, exit code, elapsed, MaxRSS, node from sacct: {r}")
    rss = [rows[nm][7] for nm in names if len(rows.get(nm, [])) > 7]
    check(any(re.fullmatch(r"\d+\.\dM", x) for x in rss), f"--status: sacct's MaxRSS in at least one row: {rss}")

    # resumed: the victim's log has both attempts, the second resuming from a checkpoint on n2
    log = open(os.path.join(out, "logs", vname + ".log")).read()
    heads = re.findall(r"== qsweep.sbatch \S+ \S+: Slurm job \S+ on (\S+):", log)
    res = resumed_at(os.path.join(runs, vname + ".h5"))
    resumed = heads == ["n1", "n2"] and res is not None and res > 0
    check(resumed, f"{vname}: started on n1, resumed from its checkpoint on n2: {heads}, resumed at step {res}")
    say(f"study: {vname} ran on {' then '.join(heads)}, resumed at step {res}")
    with open_run(os.path.join(runs, vname + ".h5")) as f:
        check(list(f["train/step"][:]) == list(range(steps)), "the resumed run's /train/step is 0..N-1 once")
    stats["resumed"] = resumed

    # the same study, undisturbed, on this host: qsweep -j 2
    ref = os.path.join(d, "local")
    same = same_summary(cl, check, QSWEEP, ini, out, ref, "cluster", WAIT)
    for nm in names:
        diff = same_run(os.path.join(runs, nm + ".h5"), os.path.join(ref, "runs", nm + ".h5"), nm)
        check(diff is None, diff or "")
        same = same and diff is None
    stats["identical"] = same


def check_cluster(cl, d, stats):
    """Checks 1 to 3 in the work folder d of the running cluster cl; stats for the last line."""
    write_verse_corpus(os.path.join(d, "corpus.txt"))
    _, mpi_ref, mpi_steps, mpi_ok = check_mpi(cl, d)
    check_sweep(cl, d, stats)
    # n1 comes back; a 2-rank run then loses n2 and resumes when n2 is back
    cl.start_slurmd("n1", reboot=True)
    wait_for(lambda: cl.node_state("n1") == "idle", "n1 back in service (ReturnToService=2)", every=0.5)
    say("n1 is back in service")
    _, _, run, job = mpi_run(cl, d, mpi_steps, kill="n2")
    # the queue empties before slurmdbd records the end of the second attempt: wait for it
    done = lambda: (lambda a: a if [r[1] for r in a][-1:] == ["COMPLETED"] else None)(sacct(cl, job, dup=True))
    try:
        acct = wait_for(done, "sacct to record the MPI run's end", limit=30, every=1)
    except Fatal:
        acct = sacct(cl, job, dup=True)
    say("MPI run with a node lost, sacct --duplicates: " + "; ".join(" ".join(r) for r in acct))
    check([r[1] for r in acct] == ["NODE_FAIL", "COMPLETED"] and acct[-1][3] == "n[1-2]",
          f"the MPI run failed with its node, was requeued and completed on both nodes: {acct}")
    res = resumed_at(run)
    mpi_resumed = res is not None and res > 0
    check(mpi_resumed, f"the MPI run resumed from its checkpoint: resumed at step {res}")
    say(f"MPI run: resumed at step {res}")
    diff = same_run(run, mpi_ref, "2-rank run that lost a node vs undisturbed")
    check(diff is None, diff or "")
    stats["requeued"] += 1 if acct and acct[0][1] == "NODE_FAIL" else 0
    stats["tasks"] += 1
    stats["resumed"] = stats["resumed"] and mpi_resumed
    stats["identical"] = stats["identical"] and mpi_ok and diff is None


def main():
    if os.geteuid() != 0:
        skip("the cluster needs root (network namespaces, slurmd, MariaDB as root)")
    ensure_packages(PACKAGES, PROGRAMS)
    os.makedirs(WORK, exist_ok=True)
    if os.path.realpath(WORK) == "/tmp" or os.path.realpath(WORK).startswith("/tmp/"):
        sys.exit(f"test_cluster: {WORK}: the work folder must not be under /tmp (each node mounts its own /tmp)")
    tmp = tempfile.mkdtemp(prefix="cluster-", dir=WORK)
    cl = Cluster(tmp)
    stats = {"nodes": 0, "tasks": 0, "requeued": 0, "resumed": False, "identical": False}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    on_cluster(cl, check, lambda d: check_cluster(cl, d, stats),
               ("slurmctld.log", "slurmdbd.log", *(f"slurmd-{n}.log" for n in NODES)))
    yn = lambda b: "yes" if b else "no"
    print(f"cluster: nodes={stats['nodes']} tasks={stats['tasks']} requeued={stats['requeued']} "
          f"resumed={yn(stats['resumed'])} identical={yn(stats['identical'])}", flush=True)
    status = check.summary("test_cluster", f" ({time.monotonic() - T0:.0f} s)")
    if not status:
        shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
