/* qs_slurm.c — the job-array script (see qs_slurm.h). */
#include "qs_slurm.h"

#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qs_shell.h"

/* --device cuda in [base], or as a value of a device axis */
static int uses_cuda(const qs_experiment *e)
{
    const char *d = qs_ini_base(e, "device");
    if (d && !strcmp(d, "cuda")) return 1;
    const int a = qs_ini_axis(e, "device");
    for (int i = 0; a >= 0 && i < e->axes[a].nvalues; i++)
        if (!strcmp(e->axes[a].values[i], "cuda")) return 1;
    return 0;
}

void qs_slurm_resources(const qs_experiment *e, const qs_plan *p, qs_slurm_res *r)
{
    const qs_slurm_opts *o = &e->slurm;
    r->cpus_per_task = o->cpus_per_task > 0 ? o->cpus_per_task : p->threads;
    r->ntasks = o->ntasks > 0 ? o->ntasks : 1;
    r->gpus_per_task = o->gpus_per_task >= 0 ? o->gpus_per_task : uses_cuda(e) ? 1 : 0;
    r->mpi = o->mpi[0] ? o->mpi : "pmix";
}

/* DIR/SUB/"$name"EXT as a bash word: the folder quoted, the name expanded */
static void name_path(FILE *f, const char *dir, const char *sub, const char *ext)
{
    char d[4200];
    snprintf(d, sizeof d, "%s/%s/", dir, sub);
    qs_shell_word(f, d);
    fprintf(f, "\"$name\"%s", ext);
}

int qs_slurm_dir_ok(const qs_plan *p, char *err, size_t errlen)
{
    /* Slurm reads #SBATCH lines itself, without a shell's quoting */
    if (strpbrk(p->dir, " \t\n%'\"\\")) {
        snprintf(err, errlen, "%s: a folder for Slurm must not contain blanks, quotes, backslashes or %%", p->dir);
        return -1;
    }
    return 0;
}

int qs_slurm_write(const qs_experiment *e, const qs_plan *p, const char *path, char *err, size_t errlen)
{
    if (qs_slurm_dir_ok(p, err, errlen)) return -1;
    qs_slurm_res res;
    qs_slurm_resources(e, p, &res);
    char tmp[4500];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot create", tmp);
        return -1;
    }
    char base[4096];
    snprintf(base, sizeof base, "%s", e->path);
    char job[64];
    /* the experiment's name without .ini, in the job name */
    snprintf(job, sizeof job, "qsweep-%s", basename(base));
    char *dot = strrchr(job, '.');
    if (dot && dot > job + 7) *dot = '\0';
    for (char *c = job; *c; c++)
        if (*c == ' ' || *c == '\'' || *c == '"') *c = '_';
    fprintf(f, "#!/bin/bash\n");
    fprintf(f, "# Written by qsweep from %s: array task i runs run i of the sweep in\n# ", e->path);
    qs_shell_word(f, p->dir);
    fprintf(f, " (%d runs). `qsweep EXPERIMENT --out DIR --slurm --submit` submits the runs that are\n"
               "# not done and records the job in DIR/slurm.jobs; `qsweep --status DIR` shows where they are.\n",
            p->n);
    fprintf(f, "#SBATCH --job-name=%s\n", job);
    fprintf(f, "#SBATCH --array=0-%d\n", p->n - 1);
    fprintf(f, "#SBATCH --ntasks=%d\n", res.ntasks);
    fprintf(f, "#SBATCH --cpus-per-task=%d\n", res.cpus_per_task);
    if (res.gpus_per_task > 0) fprintf(f, "#SBATCH --gpus-per-task=%d\n", res.gpus_per_task);
    if (e->slurm.partition[0]) fprintf(f, "#SBATCH --partition=%s\n", e->slurm.partition);
    if (e->slurm.account[0]) fprintf(f, "#SBATCH --account=%s\n", e->slurm.account);
    if (e->slurm.time[0]) fprintf(f, "#SBATCH --time=%s\n", e->slurm.time);
    fprintf(f, "#SBATCH --output=%s/logs/slurm-%%A_%%a.log\n", p->dir);
    /* a task whose node fails (or that an admin requeues) goes back to the queue and, started
     * again on another node, resumes its run from the last checkpoint (the command has --resume);
     * its Slurm log keeps both attempts */
    fprintf(f, "#SBATCH --requeue\n#SBATCH --open-mode=append\n");
    fprintf(f, "set -uo pipefail\n\n");
    fprintf(f, "names=(\n");
    for (int i = 0; i < p->n; i++) {
        fputs("  ", f);
        qs_shell_word(f, p->runs[i].name);
        fputc('\n', f);
    }
    fprintf(f, ")\n# one quoted command line per run, in the order of names\ncmds=(\n");
    for (int i = 0; i < p->n; i++) {
        fputs("  ", f);
        qs_shell_cmd_word(f, p->runs[i].argv);
        fputc('\n', f);
    }
    fprintf(f, ")\n");
    if (res.ntasks > 1 && !strcmp(res.mpi, "mpirun"))
        fprintf(f, "# every run is an MPI job of %d ranks, started by mpirun (which takes the allocation from\n"
                   "# Slurm; rank 0 writes the run file)\nlaunch=(mpirun -np %d)\n",
                res.ntasks, res.ntasks);
    else if (res.ntasks > 1)
        fprintf(f, "# every run is an MPI job of %d ranks, started by srun (rank 0 writes the run file)\n"
                   "launch=(srun --mpi=%s --ntasks=%d --cpus-per-task=%d)\n",
                res.ntasks, res.mpi, res.ntasks, res.cpus_per_task);
    else
        fprintf(f, "launch=()\n");
    fprintf(f, "\ni=${SLURM_ARRAY_TASK_ID:?not an array task: submit with sbatch, or set SLURM_ARRAY_TASK_ID}\n");
    fprintf(f, "if ! [[ $i =~ ^[0-9]+$ ]] || (( i >= ${#cmds[@]} )); then\n");
    fprintf(f, "  echo \"qsweep.sbatch: task $i is not in 0..$(( ${#cmds[@]} - 1 ))\" >&2\n  exit 2\nfi\n");
    fprintf(f, "mkdir -p ");
    char runs[4200], logs[4200];
    snprintf(runs, sizeof runs, "%s/runs", p->dir);
    snprintf(logs, sizeof logs, "%s/logs", p->dir);
    qs_shell_word(f, runs);
    fputc(' ', f);
    qs_shell_word(f, logs);
    fprintf(f, " || exit 1\nname=${names[$i]}\nlog=");
    name_path(f, p->dir, "logs", ".log");
    fprintf(f, "\nmarker=");
    name_path(f, p->dir, "runs", ".exit");
    fprintf(f, "\nrm -f \"$marker\"\n");
    fprintf(f, "echo \"qsweep task $i: run $name on $(hostname)\"\n");
    fprintf(f, "eval \"cmd=(${cmds[$i]})\"\n");
    fprintf(f, "echo \"== qsweep.sbatch $(date '+%%Y-%%m-%%d %%H:%%M:%%S'): Slurm job ${SLURM_ARRAY_JOB_ID:-none}_$i "
               "on $(hostname): ${launch[*]} ${cmds[$i]}\" >>\"$log\"\n");
    fprintf(f, "\"${launch[@]}\" \"${cmd[@]}\" >>\"$log\" 2>&1\n");
    fprintf(f, "rc=$?\n");
    fprintf(f, "echo \"== qsweep.sbatch: exit $rc\" >>\"$log\"\n");
    fprintf(f, "# 0 done and 3 diverged are in the run file; 130/137/143 is a stop (scancel, a time limit): the\n"
               "# next submission resumes it; anything else failed: recorded as qsweep records it (qs_marker.h)\n");
    fprintf(f, "case $rc in\n  0|3|130|137|143) ;;\n"
               "  *) msg=$(tail -n 50 \"$log\" | grep -v -e '^== qsweep' -e '^[[:space:]]*$' | tail -n 1)\n"
               "     printf 'exit %%d\\n%%s\\n' \"$rc\" \"$msg\" >\"$marker.tmp\" && mv \"$marker.tmp\" \"$marker\" ;;\n"
               "esac\nexit $rc\n");
    int rc = ferror(f) ? -1 : 0;
    if (fclose(f) != 0) rc = -1;
    if (!rc && chmod(tmp, 0755) != 0) rc = -1;
    if (!rc && rename(tmp, path) != 0) rc = -1;
    if (rc) {
        unlink(tmp);
        snprintf(err, errlen, "%s: cannot write", path);
    }
    return rc;
}
