/* qs_slurm.c — the job-array script (see qs_slurm.h). */
#include "qs_slurm.h"

#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qs_shell.h"

int qs_slurm_write(const qs_experiment *e, const qs_plan *p, const char *path, char *err, size_t errlen)
{
    /* Slurm reads #SBATCH lines itself, without a shell's quoting */
    if (strpbrk(p->dir, " \t\n%'\"\\")) {
        snprintf(err, errlen, "%s: a folder for Slurm must not contain blanks, quotes, backslashes or %%", p->dir);
        return -1;
    }
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
    fprintf(f, " (%d runs).\n", p->n);
    fprintf(f, "#SBATCH --job-name=%s\n", job);
    fprintf(f, "#SBATCH --array=0-%d\n", p->n - 1);
    fprintf(f, "#SBATCH --cpus-per-task=%d\n", p->threads);
    fprintf(f, "#SBATCH --ntasks=1\n");
    fprintf(f, "#SBATCH --output=%s/logs/%%a.log\n", p->dir);
    fprintf(f, "set -euo pipefail\n\n");
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
    fprintf(f, ")\n\n");
    fprintf(f, "i=${SLURM_ARRAY_TASK_ID:?not an array task: submit with sbatch, or set SLURM_ARRAY_TASK_ID}\n");
    fprintf(f, "if ! [[ $i =~ ^[0-9]+$ ]] || (( i >= ${#cmds[@]} )); then\n");
    fprintf(f, "  echo \"qsweep.sbatch: task $i is not in 0..$(( ${#cmds[@]} - 1 ))\" >&2\n  exit 2\nfi\n");
    fprintf(f, "mkdir -p ");
    char runs[4200], logs[4200];
    snprintf(runs, sizeof runs, "%s/runs", p->dir);
    snprintf(logs, sizeof logs, "%s/logs", p->dir);
    qs_shell_word(f, runs);
    fputc(' ', f);
    qs_shell_word(f, logs);
    fprintf(f, "\necho \"qsweep task $i: run ${names[$i]} on $(hostname)\"\n");
    fprintf(f, "eval \"cmd=(${cmds[$i]})\"\n");
    fprintf(f, "exec \"${cmd[@]}\"\n");
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
