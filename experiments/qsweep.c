/* qsweep.c — the command line: an experiment file in, a folder of qtrain
 * runs and their summary out (docs/qsweep.md).
 * Exit codes: 0 every run done or diverged, 1 a run failed (or qsweep could
 * not write the summary), 2 bad input (experiment, options, folder in use),
 * 130 stopped by SIGINT/SIGTERM. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qpl_main.h"
#include "qs_cli.h"
#include "qs_dir.h"
#include "qs_grid.h"
#include "qs_ini.h"
#include "qs_lock.h"
#include "qs_marker.h"
#include "qs_opts.h"
#include "qs_pool.h"
#include "qs_report.h"
#include "qs_runfile.h"
#include "qs_sched.h"
#include "qs_shell.h"
#include "qs_slurm.h"
#include "qs_status.h"
#include "qs_summary.h"
#include "qp_cli.h"
#include "qp_share.h"
#include "qp_version.h"

static const char *const SYNOPSIS = "EXPERIMENT.ini --out DIR [-j N] [--data FILE] [--qtrain PATH] [--dry-run | --slurm [--submit]]\n"
                                    "--plan FILE [--out DIR] [-j N] [--data FILE] [--qtrain PATH] [--dry-run]\n"
                                    "--summarize DIR\n"
                                    "--status DIR";
static const char *const HEAD =
    "Run a grid of matched qtrain runs (same seed: same initial weights and batches across recipes)\n"
    "from one experiment file, N at a time, and summarize them. Format: docs/qsweep.md and the\n"
    "commented examples in experiments/*.ini.\n";
static const char *const TAIL =
    "Rerunning the same command skips finished runs (done or diverged) and resumes the others\n"
    "(qtrain --resume). SIGINT/SIGTERM stop the runs (resumable) and exit 130. One qsweep per DIR.\n";
static const char *const EXIT_STATUS = "0 all runs done or diverged (--plan: a plan meets the budget), 1 a run failed, 2 bad "
                                       "input or DIR in use, 3 (--plan) no recipe met the budget, 130 stopped.";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: qsweep EXPERIMENT.ini --out DIR [-j N] [--data FILE] [--qtrain PATH]\n"
            "              [--dry-run | --slurm [--submit]]\n"
            "       qsweep --plan FILE [--out DIR] [-j N] [--data FILE] [--qtrain PATH] [--dry-run]\n"
            "       qsweep --summarize DIR\n"
            "       qsweep --status DIR\n%s",
            HEAD);
    qp_cli_help(f, qs_cli_options, qs_cli_n_options);
    fprintf(f, "%sExit: %s\n", TAIL, EXIT_STATUS);
}

static void man(FILE *f)
{
    char desc[1024];
    snprintf(desc, sizeof desc, "%s\n\n%s", HEAD, TAIL);
    const qp_cli_page page = {
        .name = "qsweep",
        .summary = "run a grid of matched-precision qtrain runs and summarize them",
        .synopsis = SYNOPSIS,
        .description = desc,
        .exit_status = EXIT_STATUS,
        .see_also = "qtrain(1), qplot(1), qerr(1); docs/qsweep.md in the qprec sources",
        .version = qp_version(),
    };
    qp_cli_man(f, &page, qs_cli_options, qs_cli_n_options);
}

static int cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* qtrain beside this executable */
static int default_qtrain(char *buf, size_t len)
{
    char dir[PATH_MAX];
    if (qp_exe_dir(dir, sizeof dir)) return -1;
    return (size_t)snprintf(buf, len, "%s/qtrain", dir) < len ? 0 : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, len = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        char *nb = realloc(buf, cap = len + n + 1);
        if (!nb) break;
        buf = nb;
        memcpy(buf + len, chunk, n);
        len += n;
        buf[len] = '\0';
    }
    fclose(f);
    return buf ? buf : calloc(1, 1);
}

/* The sweep folder's runs/ and logs/, and its lock: the lock's fd, or -1
 * after saying why on stderr. */
static int open_sweep_dir(const qs_plan *p, char *err, size_t errlen)
{
    if (qs_dir_make(p->dir)) {
        fprintf(stderr, "qsweep: cannot create %s/{runs,logs}: %s\n", p->dir, strerror(errno));
        return -1;
    }
    const int lock = qs_lock_take(p->dir, err, errlen);
    if (lock < 0) fprintf(stderr, "qsweep: %s\n", err);
    return lock;
}

/* DIR/qsweep.ini: the experiment this folder holds. A rerun must bring the
 * same [base] and the same [grid] or one with values added (else its runs
 * would resume someone else's), and then replaces the file.
 *
 * Does the canonical [base]+[grid] text b (bn bytes) keep what a (an bytes)
 * ran (the comment lines above [base] aside, qs_ini_identity): the same
 * [base], the same axes in the same order each with a's values among its
 * own, the same exclude lines? Then every run a named is a run of
 * b with the same name and command (a name holds every axis, qs_grid.h), and
 * a rerun may add seeds, recipes or other values to a sweep. */
static int extends(const char *a, size_t an, const char *b, size_t bn)
{
    const char *ba = qs_ini_identity(a, an), *bb = qs_ini_identity(b, bn);
    const char *ga = memmem(a, an, "\n[grid]\n", 8), *gb = memmem(b, bn, "\n[grid]\n", 8);
    if (!ba || !bb || !ga || !gb || ga - ba != gb - bb || memcmp(ba, bb, (size_t)(ga - ba))) return 0;
    const char *pa = ga + 8, *pb = gb + 8, *ea = a + an, *eb = b + bn;
    while (pa < ea && pb < eb) {
        const char *la = memchr(pa, '\n', (size_t)(ea - pa)), *lb = memchr(pb, '\n', (size_t)(eb - pb));
        if (!la || !lb) return 0;
        const size_t na = (size_t)(la - pa), nb = (size_t)(lb - pb);
        const char *eqa = memmem(pa, na, " = ", 3), *eqb = memmem(pb, nb, " = ", 3);
        if (!(na == nb && !memcmp(pa, pb, na))) {
            /* an axis line: the same key, a's values (", "-separated) each among b's */
            if (!eqa || !eqb || eqa - pa != eqb - pb || memcmp(pa, pb, (size_t)(eqa - pa)) ||
                !strncmp(pa, "exclude", 7))
                return 0;
            for (const char *v = eqa + 3; v < la;) {
                const char *end = memmem(v, (size_t)(la - v), ", ", 2);
                const size_t vn = (size_t)((end ? end : la) - v);
                int found = 0;
                for (const char *w = eqb + 3; w < lb && !found;) {
                    const char *wend = memmem(w, (size_t)(lb - w), ", ", 2);
                    const size_t wn = (size_t)((wend ? wend : lb) - w);
                    found = wn == vn && !memcmp(v, w, vn);
                    w = wend ? wend + 2 : lb;
                }
                if (!found) return 0;
                v = end ? end + 2 : la;
            }
        }
        pa = la + 1, pb = lb + 1;
    }
    return pa == ea && pb == eb;
}

static int record_experiment(const qs_experiment *e, const char *dir, char *err, size_t errlen)
{
    size_t ident;
    char *text = qs_ini_canonical(e, &ident);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char path[4400], tmp[4500];
    snprintf(path, sizeof path, "%s/qsweep.ini", dir);
    char *old = slurp(path);
    if (old) {
        const char *sw = strstr(old, "\n[sweep]\n");
        const size_t old_ident = sw ? (size_t)(sw - old) + 1 : strlen(old);
        const int same = extends(old, old_ident, text, ident);
        free(old);
        if (!same) {
            snprintf(err, errlen,
                     "%.500s holds a different experiment (%.500s: its [base] differs, or its [grid] is not this one's "
                     "with values added); use another --out",
                     dir, path);
            free(text);
            return -1;
        }
    }
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int rc = f ? 0 : -1;
    if (f) {
        fputs(text, f);
        if (ferror(f)) rc = -1;
        if (fclose(f) != 0) rc = -1;
    }
    if (!rc && rename(tmp, path) != 0) rc = -1;
    if (rc) {
        unlink(tmp);
        snprintf(err, errlen, "%.1000s: cannot write", path);
    }
    free(text);
    return rc;
}

static void print_groups(const qs_summary *s, FILE *f)
{
    for (int noise = 0; noise < 2; noise++) {
        int any = 0;
        for (int g = 0; g < s->ngroups; g++) any |= s->groups[g].noise == noise && s->groups[g].block < 0;
        if (!any) continue;
        if (noise) fprintf(f, "noise floor (same recipe and initial weights, data seed + %d):\n", QS_NOISE_SEED_OFFSET);
        fprintf(f, "%-40s %5s %5s %22s  %s\n", "group", "runs", "seeds", "final val loss",
                noise ? "gap % to its run [95% CI]" : "gap % vs baseline, paired [95% CI]");
        for (int g = 0; g < s->ngroups; g++) {
            const qs_group *G = &s->groups[g];
            if (G->noise != noise || G->block >= 0) continue;
            char v[64] = "-", gp[128];
            if (!isnan(G->val_mean)) snprintf(v, sizeof v, "%.4f ± %.4f", G->val_mean, isnan(G->val_std) ? 0.0 : G->val_std);
            qs_report_gap_text(s, G, gp, sizeof gp);
            if (noise && !isnan(G->gap_rms)) snprintf(gp + strlen(gp), sizeof gp - strlen(gp), ", rms %.2f%%", G->gap_rms);
            /* the ± sign is two bytes: widen the field by one so columns line up */
            fprintf(f, "%-40s %5d %5d %23s  %s\n", G->name, G->n_runs, G->n_seeds, v, gp);
        }
    }
    if (s->nattr) fprintf(f, "per-layer attribution (one block in the recipe, the others %s):\n%-40s %5s %5s  %s\n",
                          s->e->baseline, "group", "block", "seeds", "share of the gap [95% Fieller CI]");
    for (int i = 0; i < s->nattr; i++) {
        char sh[160], blk[16];
        qs_report_share_text(&s->attr[i], sh, sizeof sh);
        if (s->attr[i].block < 0) snprintf(blk, sizeof blk, "sum");
        else snprintf(blk, sizeof blk, "%d", s->attr[i].block);
        fprintf(f, "%-40s %5s %5d  %s\n", s->groups[s->attr[i].group].name, blk, s->attr[i].share.n, sh);
    }
    if (s->contrast_axis < 0) return;
    const qs_axis *A = &s->e->axes[s->contrast_axis];
    fprintf(f, "contrast across %s (the gap at each value b minus the gap at %s=%s, paired by seed):\n"
               "%-40s %5s  %-22s  %-22s  %s\n", A->key, A->key, A->values[0], "contrast", "seeds", "gap at a % [95% CI]",
            "gap at b % [95% CI]", "b - a: % [95% t CI], nats");
    for (int i = 0; i < s->ncontrast; i++) {
        const qs_contrast_row *C = &s->contrast[i];
        qs_contrast_text x;
        qs_report_contrast_text(C, &x);
        fprintf(f, "%-40s %5d  %-22s  %-22s  %s, %s\n", C->name, C->pct.n, x.gap_a, x.gap_b, x.diff_pct, x.diff_nats);
    }
    for (int i = 0; i < s->ncontrast; i++)
        if (s->contrast[i].message[0]) fprintf(f, "note: %s: %s\n", s->contrast[i].name, s->contrast[i].message);
}

static int summarize(const qs_experiment *e, const qs_plan *p, int print, char *err, size_t errlen)
{
    qs_summary s;
    if (qs_summary_build(e, p, &s, err, errlen)) return -1;
    const int rc = qs_report_write(&s, p->dir, err, errlen);
    if (!rc && print) {
        print_groups(&s, stdout);
        printf("summary: %s/summary.{md,csv,h5}\n", p->dir);
    }
    qs_summary_free(&s);
    return rc;
}

/* the runs the pool was given, in its numbering */
typedef struct {
    const qs_plan *p;
} sweep_ctx;

static void on_start(int job, void *user)
{
    const sweep_ctx *c = user;
    qs_marker_remove(c->p->runs[job].exitfile);
}

static void on_end(int job, qs_job_result *res, void *user)
{
    const sweep_ctx *c = user;
    const qs_run *r = &c->p->runs[job];
    char msg[1024];
    if (!qs_run_failure(r->h5, r->log, res, msg, sizeof msg)) return;
    snprintf(res->why, sizeof res->why, "%.255s", msg);
    if (qs_marker_write(r->exitfile, res->exit_code, msg))
        fprintf(stderr, "\nqsweep: cannot write %s: %s\n", r->exitfile, strerror(errno));
}

static int run_sweep(const qs_experiment *e, const qs_plan *p, const char *qtrain, int jobs)
{
    char err[1200];
    if (access(qtrain, X_OK) != 0) {
        fprintf(stderr, "qsweep: cannot run qtrain at %s: %s (use --qtrain PATH)\n", qtrain, strerror(errno));
        return 2;
    }
    /* From here a SIGINT/SIGTERM waits (pending) for the pool, which stops
     * cleanly on it, instead of killing qsweep between taking the lock and
     * starting the runs. */
    sigset_t stopsigs, pending;
    sigemptyset(&stopsigs);
    sigaddset(&stopsigs, SIGINT);
    sigaddset(&stopsigs, SIGTERM);
    sigprocmask(SIG_BLOCK, &stopsigs, NULL);
    const int lock = open_sweep_dir(p, err, sizeof err);
    if (lock < 0) return 2;
    if (record_experiment(e, p->dir, err, sizeof err)) {
        fprintf(stderr, "qsweep: %s\n", err);
        return 2;
    }
    qs_job *todo = calloc((size_t)(p->n ? p->n : 1), sizeof *todo);
    int *index = calloc((size_t)(p->n ? p->n : 1), sizeof *index);
    qs_job_result *res = calloc((size_t)(p->n ? p->n : 1), sizeof *res);
    if (!todo || !index || !res) {
        fprintf(stderr, "qsweep: out of memory\n");
        return 1;
    }
    int n = 0;
    for (int i = 0; i < p->n; i++)
        if (!qs_runfile_finished(p->runs[i].h5)) {
            todo[n] = (qs_job){p->runs[i].name, p->runs[i].argv, p->runs[i].log};
            index[n++] = i;
        }
    fprintf(stderr, "qsweep: %d runs in %s (%d finished before), %d at a time, %d thread%s each\n", p->n, p->dir,
            p->n - n, jobs, p->threads, p->threads == 1 ? "" : "s");
    /* the pool numbers only the jobs it runs: map back to runs for the callbacks */
    qs_plan sub = *p;
    qs_run *subruns = calloc((size_t)(n ? n : 1), sizeof *subruns);
    if (!subruns) {
        fprintf(stderr, "qsweep: out of memory\n");
        return 1;
    }
    for (int k = 0; k < n; k++) subruns[k] = p->runs[index[k]];
    sub.runs = subruns, sub.n = n;
    sweep_ctx ctx = {.p = &sub};
    const qs_pool_cb cb = {p->n, p->n - n, on_start, on_end, &ctx};
    int stopped = qs_pool_run(todo, n, jobs, &cb, res);
    int failed = 0, diverged = 0;
    for (int k = 0; k < n; k++) failed += res[k].outcome == QS_JOB_FAILED, diverged += res[k].outcome == QS_JOB_DIVERGED;
    int rc = 0;
    if (summarize(e, p, !stopped, err, sizeof err)) {
        fprintf(stderr, "qsweep: summary: %s\n", err);
        rc = 1;
    }
    /* a signal during the summary: it is written; still report the stop */
    if (sigpending(&pending) == 0 && (sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM))) stopped = 1;
    if (diverged) fprintf(stderr, "qsweep: %d run%s diverged (qtrain exit 3; counted as results)\n", diverged, diverged == 1 ? "" : "s");
    if (failed) {
        fprintf(stderr, "qsweep: %d of %d runs failed:\n", failed, p->n);
        for (int k = 0; k < n; k++)
            if (res[k].outcome == QS_JOB_FAILED)
                fprintf(stderr, "  %s: exit %d: %s (log: %s)\n", todo[k].name, res[k].exit_code, res[k].why, todo[k].log);
        rc = 1;
    }
    if (stopped) {
        fprintf(stderr, "qsweep: stopped; run the same command again to resume\n");
        rc = 130;
    }
    free(todo), free(index), free(res), free(subruns);
    close(lock);
    return rc;
}

static int dry_run(const qs_experiment *e, const qs_plan *p, int jobs)
{
    printf("# %s: %d run%s", e->path, p->n, p->n == 1 ? "" : "s");
    for (int a = 0; a < e->naxes; a++) printf("%s%s(%d)", a ? " x " : ": ", e->axes[a].key, e->axes[a].nvalues);
    printf("; %d at a time, --threads %d each; folder %s\n", jobs, p->threads, p->dir);
    for (int i = 0; i < p->n; i++) {
        printf("%s: ", p->runs[i].name);
        qs_shell_cmd(stdout, p->runs[i].argv);
        putchar('\n');
    }
    return 0;
}

/* The runs --submit sends: not finished, and not in the queue already (a
 * second task on a run that is still running would be refused by qtrain's
 * writer lock, and fail). Returns how many, or -1 (squeue unusable). */
static int runs_to_submit(const qs_plan *p, int *idx, int *queued, char *err, size_t errlen)
{
    qs_sched s;
    if (qs_sched_load(p->dir, p->n, 0, &s, err, errlen)) return -1;
    if (!s.have_queue) {
        snprintf(err, errlen, "cannot tell which runs are still queued, so nothing was submitted: %s", s.queue_note);
        qs_sched_free(&s);
        return -1;
    }
    int n = 0;
    *queued = 0;
    for (int i = 0; i < p->n; i++) {
        if (s.task[i].queue[0]) (*queued)++;
        else if (!qs_runfile_finished(p->runs[i].h5)) idx[n++] = i;
    }
    qs_sched_free(&s);
    return n;
}

static int write_slurm(const qs_experiment *e, const qs_plan *p, const char *self, int submit)
{
    char err[1200], path[4400], sbatch[4400];
    /* before anything is written: --submit on a machine without Slurm is bad input */
    if (submit && qs_sched_which("sbatch", sbatch, sizeof sbatch)) {
        fprintf(stderr, "qsweep: --submit: sbatch is not on PATH (not a Slurm machine?); --slurm alone writes the script\n");
        return 2;
    }
    if (qs_slurm_dir_ok(p, err, sizeof err)) {
        fprintf(stderr, "qsweep: %s\n", err);
        return 2;
    }
    const int lock = open_sweep_dir(p, err, sizeof err);
    if (lock < 0) return 2;
    snprintf(path, sizeof path, "%s/qsweep.sbatch", p->dir);
    if (record_experiment(e, p->dir, err, sizeof err) || qs_slurm_write(e, p, path, err, sizeof err)) {
        fprintf(stderr, "qsweep: %s\n", err);
        close(lock);
        return 2;
    }
    qs_slurm_res res;
    qs_slurm_resources(e, p, &res);
    if (!submit) {
        close(lock);
        printf("wrote %s: a job array of %d runs, %d task%s of %d CPUs each\n", path, p->n, res.ntasks,
               res.ntasks == 1 ? "" : "s", res.cpus_per_task);
        printf("submit:      ");
        qs_shell_word(stdout, self);
        putchar(' ');
        qs_shell_word(stdout, e->path);
        printf(" --out ");
        qs_shell_word(stdout, p->dir);
        printf(" --submit   (or: sbatch ");
        qs_shell_word(stdout, path);
        printf(")\nafterwards:  ");
        qs_shell_word(stdout, self);
        printf(" --summarize ");
        qs_shell_word(stdout, p->dir);
        printf("\n(a rerun of a task resumes its run; run files land in %s/runs, logs in %s/logs)\n", p->dir, p->dir);
        return 0;
    }
    int *idx = malloc((size_t)(p->n ? p->n : 1) * sizeof *idx), queued = 0;
    const int n = idx ? runs_to_submit(p, idx, &queued, err, sizeof err) : -1;
    int rc = 0;
    if (!idx) fprintf(stderr, "qsweep: out of memory\n"), rc = 1;
    else if (n < 0) fprintf(stderr, "qsweep: %s\n", err), rc = 1;
    else if (n == 0) {
        printf("nothing to submit: of %d runs, %d are queued and the others done or diverged (qsweep --status %s)\n",
               p->n, queued, p->dir);
    } else {
        long long job;
        if (qs_sched_submit(p->dir, path, idx, n, &job, err, sizeof err)) {
            fprintf(stderr, "qsweep: %s\n", err);
            rc = 1;
        } else {
            char tasks[512];
            qs_sched_tasklist(idx, n, tasks, sizeof tasks);
            printf("submitted job %lld: %d of %d runs (array tasks %s%s), %d task%s x %d CPUs each%s\n", job, n, p->n,
                   tasks, strlen(tasks) >= sizeof tasks - 1 ? "..." : "", res.ntasks, res.ntasks == 1 ? "" : "s",
                   res.cpus_per_task, queued ? "; the others are queued, done or diverged" : "");
            printf("status:      ");
            qs_shell_word(stdout, self);
            printf(" --status ");
            qs_shell_word(stdout, p->dir);
            printf("\nsummary:     ");
            qs_shell_word(stdout, self);
            printf(" --summarize ");
            qs_shell_word(stdout, p->dir);
            printf("   (works while the array runs)\n");
        }
    }
    free(idx);
    close(lock);
    return rc;
}

int main(int argc, char **argv)
{
    qs_cli cli;
    char qtrain[PATH_MAX], self[PATH_MAX] = "qsweep", err[1200];
    const int pa = qs_cli_parse(argc, argv, &cli, err, sizeof err);
    if (pa == QS_CLI_HELP) {
        usage(stdout);
        return 0;
    }
    if (pa == QS_CLI_VERSION) {
        printf("qsweep %s\n", qp_version());
        return 0;
    }
    if (pa == QS_CLI_MAN) {
        man(stdout);
        return 0;
    }
    if (pa != QS_CLI_OK) {
        fprintf(stderr, "qsweep: %s\n", err);
        return 2;
    }
    const char *file = cli.file, *out = cli.out, *data = cli.data, *qtrain_opt = cli.qtrain,
               *summary_dir = cli.summarize ? cli.summarize : cli.status;
    const int jobs = cli.jobs, dry = cli.dry_run, slurm = cli.slurm;
    const ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sn > 0) self[sn] = '\0';
    if (qtrain_opt ? qs_abspath(qtrain_opt, qtrain, sizeof qtrain) : default_qtrain(qtrain, sizeof qtrain)) {
        fprintf(stderr, "qsweep: cannot find qtrain (use --qtrain PATH)\n");
        return 2;
    }
    if (cli.plan) {
        const qpl_args pa = {.file = cli.plan, .out = out, .data = data, .qtrain = qtrain, .jobs = jobs,
                             .cores = cpu_count(), .dry_run = dry};
        return qpl_main(&pa);
    }
    qs_experiment e;
    qs_plan p;
    if (summary_dir) {
        char ini[4400];
        snprintf(ini, sizeof ini, "%s/qsweep.ini", summary_dir);
        if (access(ini, F_OK) != 0) {
            fprintf(stderr, "qsweep: %s: no qsweep.ini: not a qsweep folder\n", summary_dir);
            return 2;
        }
        if (qs_ini_load(ini, NULL, 0, &e, err, sizeof err) || qs_grid_expand(&e, qtrain, summary_dir, 1, &p, err, sizeof err)) {
            fprintf(stderr, "qsweep: %s\n", err);
            return 2;
        }
        const int rc = cli.status ? qs_status_print(&e, &p, stdout, err, sizeof err) : summarize(&e, &p, 1, err, sizeof err);
        if (rc) fprintf(stderr, "qsweep: %s\n", err);
        qs_grid_free(&p);
        qs_ini_free(&e);
        /* --status writes nothing: its only failure is a slurm.jobs that is not qsweep's (bad input) */
        return rc ? (cli.status ? 2 : 1) : 0;
    }
    if (qs_ini_load(file, data, 1, &e, err, sizeof err)) {
        fprintf(stderr, "qsweep: %s\n", err);
        return 2;
    }
    const int cores = cpu_count();
    /* on Slurm a run gets cpus_per_task CPUs: that many threads, unless threads_per_run says otherwise */
    const int threads = e.threads_per_run             ? e.threads_per_run
                        : slurm && e.slurm.cpus_per_task ? e.slurm.cpus_per_task
                        : cores / jobs > 1             ? cores / jobs
                                                       : 1;
    if (qs_grid_expand(&e, qtrain, out, threads, &p, err, sizeof err)) {
        fprintf(stderr, "qsweep: %s\n", err);
        qs_ini_free(&e);
        return 2;
    }
    if (!dry && !slurm && access(qtrain, X_OK) != 0) {
        fprintf(stderr, "qsweep: %s: %s (use --qtrain PATH)\n", qtrain, strerror(errno));
        qs_grid_free(&p);
        qs_ini_free(&e);
        return 2;
    }
    const int rc = dry ? dry_run(&e, &p, jobs) : slurm ? write_slurm(&e, &p, self, cli.submit) : run_sweep(&e, &p, qtrain, jobs);
    qs_grid_free(&p);
    qs_ini_free(&e);
    return rc;
}
