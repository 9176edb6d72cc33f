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
import functools
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_slurmlib import (MPI_STUDY, STUDY, STUDY_RUNS, Daemons, Fatal, ensure_packages, job_of,  # noqa: E402
                         on_cluster, run_state, same_summary, skip, wait_for, write_slurm_conf)
from qp_testlib import Checks, open_run, read_csv, write_verse_corpus  # noqa: E402

CASE, QSWEEP, QTRAIN, WORK = sys.argv[1], *map(os.path.abspath, sys.argv[2:5])
WAIT = 900  # seconds: the bound of every wait (a loaded machine is slow, never this slow)
wait_for = functools.partial(wait_for, limit=WAIT, every=0.1)
check = Checks()

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
PROGRAMS = ["slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo", "munged", "munge", "unmunge"]


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


class Cluster(Daemons):
    """munged + slurmctld + slurmd in TMP; stop() leaves nothing running."""

    def start(self):
        t = self.tmp
        for d in ("state", "spool", "log"):
            os.makedirs(os.path.join(t, d))
        self.munge()
        p_ctld, p_d = free_ports(2)
        write_slurm_conf(t, "tests/slurm/test_slurm.py", cluster="qprectest", host="localhost", ports=(p_ctld, p_d),
                         nodes={"localhost": "NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN"}, partition="debug",
                         kill_wait=10, auth=f"AuthInfo=socket={self.sock}\n")
        c = self.daemon("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        self.started("slurmctld", c, lambda: "UP" in self.client("scontrol", "ping").stdout, "answer to scontrol ping",
                     f"{t}/log/slurmctld.log")
        d = self.daemon("slurmd", ["slurmd", "-D", "-N", "localhost", "-f", self.conf])
        self.started("slurmd", d, lambda: self.client("sinfo", "-h", "-o", "%T").stdout.strip() == "idle",
                     "registration (node idle)", f"{t}/log/slurmd.log")
        print(f"cluster up: slurmctld :{p_ctld}, slurmd :{p_d}, {t}", flush=True)

    def queue(self):
        r = self.client("squeue", "-h", "-r", "-o", "%F_%K %T")
        return dict(l.split() for l in r.stdout.split("\n") if l.strip()) if r.returncode == 0 else None


# ---- helpers -------------------------------------------------------------------
def qsweep(cl, *args, timeout=600):
    return cl.client(QSWEEP, *args, timeout=timeout)


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


# ---- the cases -----------------------------------------------------------------
def case_sweep(cl, d):
    write_verse_corpus(os.path.join(d, "corpus.txt"))
    steps, ckpt = 2000, 100
    ini = os.path.join(d, "study.ini")
    with open(ini, "w") as f:
        f.write(STUDY.format(steps=steps, every=250, ckpt=ckpt))
    out = os.path.join(d, "slurm")
    names = STUDY_RUNS

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
        r = cl.client("scontrol", "suspend", f"{job1}_{cand}")
        if r.returncode:
            continue  # it ended in between: pick another
        wait_for(lambda: (cl.queue() or {}).get(f"{job1}_{cand}") in ("SUSPENDED", None), "the suspension")
        if run_state(os.path.join(runs, names[cand] + ".h5")) != "done":
            victim = cand
            break
    if not check(victim is not None, "a task was suspended mid-run"):
        raise Fatal("no victim")
    vname = names[victim]
    r = cl.client("scancel", f"{job1}_{victim}")
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
    same_summary(cl, check, QSWEEP, ini, out, ref, "Slurm", WAIT)
    for n in names:
        with open_run(os.path.join(runs, n + ".h5")) as fa, open_run(os.path.join(ref, "runs", n + ".h5")) as fb:
            for ds in ("train/loss", "eval/val_loss", "train/batch_hash"):
                x, y = fa[ds][:], fb[ds][:]
                check(x.shape == y.shape and x.tobytes() == y.tobytes(), f"{n} {ds}: bit-identical to -j 2")


MPI_STUDY_30 = MPI_STUDY.format(steps=30, every=10, recipe="fp32", slurm="")


def case_mpi(cl, d):
    write_verse_corpus(os.path.join(d, "corpus.txt"))
    ini = os.path.join(d, "mpi.ini")
    with open(ini, "w") as f:
        f.write(MPI_STUDY_30)
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
        f.write(MPI_STUDY_30 + "mpi = mpirun\n")
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
    ensure_packages(PACKAGES, PROGRAMS)
    os.makedirs(WORK, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f"slurm-{CASE}-", dir=WORK)
    cl = Cluster(tmp)
    t0 = time.monotonic()
    on_cluster(cl, check, lambda d: {"sweep": case_sweep, "mpi": case_mpi}[CASE](cl, d), ("slurmctld.log", "slurmd.log"))
    status = check.summary(f"test_slurm {CASE}", f" ({time.monotonic() - t0:.0f} s)")
    if not status:
        shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
