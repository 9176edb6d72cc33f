/* qplot.c — figures from qtrain run files, drawn by gnuplot.
 *
 *   qplot KIND RUN.h5... -o FIG.{png,svg,pdf} [options]   (and its twins: FIG in the other two
 *                                                         formats, FIG.csv with the data drawn)
 *   qplot all SWEEPDIR [options]        (run files DIR/runs/NAME.h5 -> DIR/fig/KIND.{png,svg,pdf,csv})
 *   qplot kinds                         (the figure kinds, one per line: QP_FIG_KINDS)
 *
 * Owns: the command line, the rounds (one, or one every --interval seconds
 * with --follow) and exit codes: 0 drawn (or --follow stopped by SIGINT or
 * SIGTERM), 2 anything wrong, reported as one line "qplot: ..." per
 * problem. "all" draws what it can: a run file it cannot read, or a
 * figure that cannot be drawn (no baseline for the gap), is reported and
 * makes the exit 2, the other figures are still written; a run file without
 * a row yet (a sweep still starting) is left out with a note.
 * Every round re-opens the run files, so --follow picks up the
 * rows a live qtrain has flushed since; a round that fails (a run that has
 * no row yet, a file still being created) is reported once and retried. */
#define _GNU_SOURCE /* mkdtemp, sigtimedwait */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "qp_cli.h"
#include "qp_draw.h"
#include "qp_fig.h"
#include "qp_note.h"
#include "qp_runread.h"
#include "qp_sweep.h"
#include "qp_version.h"

#define ERRLEN 1024

typedef struct {
    const char *kind; /* a figure kind, or "all" */
    char **runs;      /* KIND: the run files; all: the sweep directory */
    int nruns;
    const char *out;
    qp_fig_opts fig;
    int keep_data, follow;
    double interval;
} options;

enum { O_OUTPUT, O_SMOOTH, O_LOGX, O_LOGY, O_BASELINE, O_KEEP, O_FOLLOW, O_INTERVAL, O_HELP, O_VERSION, O_MAN,
       O_COUNT };
/* qplot's options: the table the parser reads and --help and --man print (qp_cli.h) */
static const qp_cli_opt OPTIONS[] = {
    {.id = O_OUTPUT, .name = "output", .short_name = 'o', .arg = "FILE",
     .help = "figure file, .png, .svg or .pdf (the other two formats and FIG.csv are written beside it)"},
    {.id = O_SMOOTH, .name = "smooth", .arg = "A",
     .help = "EMA factor for training-loss curves, a number in [0, 1) (default 0.9)"},
    {.id = O_LOGX, .name = "logx", .help = "logarithmic step axis (loss)"},
    {.id = O_LOGY, .name = "logy", .help = "logarithmic loss axis (loss)"},
    {.id = O_BASELINE, .name = "baseline", .arg = "R", .help = "reference recipe of the gap figure (default bf16)"},
    {.id = O_KEEP, .name = "keep-data",
     .help = "write the extracted data next to the figure (FIG.dat), not to a temporary directory"},
    {.id = O_FOLLOW, .name = "follow",
     .help = "redraw every --interval seconds while runs are written, until SIGINT/SIGTERM (then exit 0); prints "
             "a line per redraw"},
    {.id = O_INTERVAL, .name = "interval", .arg = "S",
     .help = "seconds between redraws, a number in (0, 86400] (default 5)"},
    {.id = O_HELP, .name = "help", .short_name = 'h', .help = "this text"},
    {.id = O_VERSION, .name = "version", .help = "print qplot's version and exit"},
    {.id = O_MAN, .name = "man", .help = "print this manual as a roff man page and exit"},
};
#define N_OPTIONS ((int)(sizeof OPTIONS / sizeof OPTIONS[0]))
_Static_assert(sizeof OPTIONS / sizeof OPTIONS[0] == O_COUNT, "a row per option");

static const char *const HEAD =
    "Figures from qtrain run files (docs/runfile.md), drawn by gnuplot with plots/KIND.gp.\n"
    "KIND:\n"
    "  loss        training loss per recipe: mean over seeds (EMA-smoothed) with its 95% band,\n"
    "              validation as markers\n"
    "  gap         % loss gap to the baseline recipe per step, paired by seed: mean, 95% band\n"
    "  qerr        per-layer x GEMM x pass x operand quantization error over steps, a panel per run\n"
    "  events      recalibration events by step, layer and kind (a panel per run)\n"
    "  throughput  median tokens/s (IQR bars), data-wait share and threads per run; step time by\n"
    "              phase per recipe\n"
    "  recalib     recalibration events per run of each recipe, by block, GEMM and operand\n"
    "  outliers    every block GEMM input's amax, kurtosis and top-k channel energy share over\n"
    "              steps (/quant/outliers), a column per run\n"
    "  bscales     the block-scale histogram over steps: per logged step the share of blocks per\n"
    "              log2-scale bin, a row per GEMM x pass, a column per run\n"
    "  all         every figure of a sweep: SWEEPDIR/runs/*.h5 -> SWEEPDIR/fig/KIND.*\n"
    "Every figure is written as PNG, SVG and PDF, with the exact data it was drawn from\n"
    "beside it as CSV (FIG.csv: one row per data point, the block and series it belongs to).\n"
    "Checkpoint files among the RUN.h5 (RUN.ckpt.h5, as a glob over runs/ finds them) are left out\n"
    "with a note.\n";
static const char *const TAIL =
    "Environment: QP_PLOTS_DIR (directory of the .gp scripts), QP_GNUPLOT (gnuplot executable),\n"
    "  QP_PNG_DPI (the PNG's dots per inch, 30 to 1200; default 300).\n";
static const char *const EXIT_STATUS = "0 done, 2 bad input or a failed figure (one line on stderr each).";

static void usage(FILE *f)
{
    fprintf(f, "usage: qplot KIND RUN.h5... -o FIGURE [options]\n       qplot all SWEEPDIR [options]\n"
            "       qplot kinds                   (the figure kinds, one per line)\n%soptions:\n",
            HEAD);
    qp_cli_help(f, OPTIONS, N_OPTIONS);
    fprintf(f, "%sExit: %s\n", TAIL, EXIT_STATUS);
}

static void man(FILE *f)
{
    char desc[4096];
    snprintf(desc, sizeof desc, "%s\n%s", HEAD, TAIL);
    const qp_cli_page page = {
        .name = "qplot",
        .summary = "figures from qtrain run files and qsweep folders, drawn by gnuplot",
        .synopsis = "KIND RUN.h5... -o FIGURE [options]\nall SWEEPDIR [options]\nkinds",
        .description = desc,
        .exit_status = EXIT_STATUS,
        .see_also = "qtrain(1), qsweep(1), qerr(1), gnuplot(1); docs/runfile.md in the qprec sources",
        .version = qp_version(),
    };
    qp_cli_man(f, &page, OPTIONS, N_OPTIONS);
}

/* one line on stderr; returns the exit code for bad input */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("qplot: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->fig.smooth = 0.9;
    o->fig.baseline = "bf16";
    o->interval = 5;
    /* the words that are not options: KIND, then the run files */
    static char **words; /* (kept: o->runs points into it) */
    words = calloc((size_t)argc + 1, sizeof *words);
    if (!words) return fail("out of memory");
    int nw = 0;
    char err[ERRLEN];
    qp_cli_iter it = {1, false};
    for (;;) {
        const char *val;
        const int k = qp_cli_next(&it, argc, argv, OPTIONS, N_OPTIONS, &val, err, sizeof err);
        if (k == QP_CLI_DONE) break;
        if (k == QP_CLI_BAD) return fail("%s", err);
        if (k == QP_CLI_ARG) {
            words[nw++] = (char *)val;
            continue;
        }
        switch (OPTIONS[k].id) {
        case O_OUTPUT: o->out = val; break;
        case O_SMOOTH:
            if (qp_cli_num("--smooth", val, 0, 1, false, true, &o->fig.smooth, err, sizeof err)) return fail("%s", err);
            break;
        case O_LOGX: o->fig.logx = 1; break;
        case O_LOGY: o->fig.logy = 1; break;
        case O_BASELINE:
            if (!*val) return fail("--baseline needs a recipe name");
            o->fig.baseline = val;
            break;
        case O_KEEP: o->keep_data = 1; break;
        case O_FOLLOW: o->follow = 1; break;
        case O_INTERVAL:
            if (qp_cli_num("--interval", val, 0, 86400, true, false, &o->interval, err, sizeof err))
                return fail("%s", err);
            break;
        case O_HELP: usage(stdout); exit(0);
        case O_VERSION: printf("qplot %s\n", qp_version()); exit(0);
        case O_MAN: man(stdout); exit(0);
        case O_COUNT: return fail("no such option");
        }
    }
    argc = nw;
    argv = words;
    int optind = 0;
    if (optind >= argc) return fail("no figure kind given (%s, all)", qp_fig_names());
    o->kind = argv[optind++];
    if (!strcmp(o->kind, "kinds")) { /* the table itself, for scripts and tests */
        if (optind < argc) return fail("kinds takes no arguments");
        for (int k = 0; k < QP_FIG_NKINDS; k++) puts(QP_FIG_KINDS[k].name);
        exit(0);
    }
    o->runs = argv + optind;
    o->nruns = argc - optind;
    if (!strcmp(o->kind, "all")) {
        if (o->nruns != 1) return fail("all takes one sweep directory");
        if (o->out) return fail("all writes into SWEEPDIR/fig/; -o is for single figures");
        return 0;
    }
    if (!qp_fig_find(o->kind))
        return fail("unknown figure kind '%s' (%s, all)", o->kind, qp_fig_names());
    if (!o->nruns) return fail("%s: no run files given", o->kind);
    if (!o->out) return fail("%s: no output file (-o FILE.png|.svg|.pdf)", o->kind);
    if (!qp_term_for(o->out)) {
        const char *dot = strrchr(o->out, '.'), *slash = strrchr(o->out, '/');
        if (!dot || (slash && dot < slash)) return fail("%s: no figure format extension (use .png, .svg or .pdf)", o->out);
        return fail("%s: unknown figure format '%s' (use .png, .svg or .pdf)", o->out, dot);
    }
    return 0;
}

/* ---- a round: load runs, draw ----------------------------------------- */

/* One round's messages; --follow prints them only when they differ from the
 * previous round's, so a run that stays empty for a minute says so once. */
typedef struct {
    char text[8192];
    size_t len;
} msgs;

static void msg_add(msgs *m, const char *line)
{
    int k = snprintf(m->text + m->len, sizeof m->text - m->len, "qplot: %s\n", line);
    if (k > 0) m->len = m->len + (size_t)k < sizeof m->text ? m->len + (size_t)k : sizeof m->text - 1;
}

typedef struct {
    int nruns;
    long long last_step;
    int running;
    int drawn, figures; /* figure files written / attempted this round */
} round_info;

static void note_runs(round_info *ri, const qp_run *runs, int n)
{
    ri->nruns = n;
    ri->last_step = -1;
    ri->running = 0;
    for (int i = 0; i < n; i++) {
        long long s = runs[i].step[runs[i].n_train - 1];
        if (s > ri->last_step) ri->last_step = s;
        ri->running += !strcmp(runs[i].state, "running");
    }
}

/* Loads what can be drawn. A checkpoint among the files is left out; *ckpts
 * counts them and the caller notes them (or, when nothing else is left,
 * makes them its one error line). */
static int load_all(char **paths, int n, unsigned what, qp_run *runs, int skip_empty, int *loaded, int *ckpts,
                    char *is_ckpt, msgs *m)
{
    char err[ERRLEN];
    int k = 0, rc = 0;
    *ckpts = 0;
    memset(is_ckpt, 0, (size_t)n);
    for (int i = 0; i < n; i++) {
        int r = qp_run_load(&runs[k], paths[i], what, err, sizeof err);
        if (r == 0)
            k++;
        else if (r == QP_RUN_EMPTY && skip_empty)
            qp_note("%s left out: no /train rows yet", paths[i]);
        else if (r == QP_RUN_CKPT)
            ++*ckpts, is_ckpt[i] = 1;
        else {
            msg_add(m, err);
            rc = -1;
        }
    }
    *loaded = k;
    return rc;
}

/* one note for the checkpoints left out (a glob over runs/ finds one per run) */
static void note_ckpts(char **paths, int n, const char *is_ckpt, int ckpts)
{
    int first = 0;
    while (first < n && !is_ckpt[first]) first++;
    if (first == n) return;
    if (ckpts == 1) qp_note("%s left out: a qtrain checkpoint, not a run file", paths[first]);
    else qp_note("%d qtrain checkpoints left out, not run files (%s, ...)", ckpts, paths[first]);
}

static void free_runs(qp_run *runs, int n)
{
    for (int i = 0; i < n; i++) qp_run_free(&runs[i]);
}

static int round_kind(const options *o, const char *scratch, round_info *ri, msgs *m)
{
    const qp_fig_kind *kind = qp_fig_find(o->kind);
    qp_run *runs = calloc((size_t)o->nruns, sizeof *runs);
    const qp_run **ptrs = calloc((size_t)o->nruns, sizeof *ptrs);
    char *is_ckpt = calloc((size_t)o->nruns, 1);
    char err[ERRLEN];
    int n = 0, rc = -1;
    if (!runs || !ptrs || !is_ckpt) {
        msg_add(m, "out of memory");
        goto out;
    }
    int ckpts;
    const int bad = load_all(o->runs, o->nruns, kind->load, runs, 0, &n, &ckpts, is_ckpt, m);
    if (!n && ckpts && !bad) {
        snprintf(err, sizeof err, "%s: no run file to draw: %s%s a qtrain checkpoint", o->kind,
                 ckpts == 1 ? o->runs[0] : "the files given", ckpts == 1 ? " is" : " are each");
        msg_add(m, err);
        goto out;
    }
    if (ckpts) note_ckpts(o->runs, o->nruns, is_ckpt, ckpts);
    if (bad) goto out;
    for (int i = 0; i < n; i++) ptrs[i] = &runs[i];
    ri->figures = 1;
    if (qp_draw(kind, ptrs, n, &o->fig, o->out, scratch, o->keep_data, err, sizeof err)) {
        msg_add(m, err);
        goto out;
    }
    ri->drawn = 1;
    note_runs(ri, runs, n);
    rc = 0;
out:
    if (runs) free_runs(runs, n);
    free(runs);
    free(ptrs);
    free(is_ckpt);
    return rc;
}

static int round_all(const options *o, const char *scratch, round_info *ri, msgs *m)
{
    const char *dir = o->runs[0];
    char err[ERRLEN], figdir[4096], out[4200];
    char **paths = NULL;
    int npaths = qp_sweep_list(dir, &paths, err, sizeof err);
    if (npaths < 0) {
        msg_add(m, err);
        return -1;
    }
    qp_run *runs = calloc((size_t)npaths, sizeof *runs);
    const qp_run **ptrs = calloc((size_t)npaths, sizeof *ptrs);
    int *pick = calloc((size_t)npaths, sizeof *pick);
    char *is_ckpt = calloc((size_t)npaths ? (size_t)npaths : 1, 1);
    int n = 0, rc = -1;
    if (!runs || !ptrs || !pick || !is_ckpt) {
        msg_add(m, "out of memory");
        goto out;
    }
    /* a run file that cannot be read is reported (and fails the round), but
     * the figures of the others are still drawn */
    int ckpts;
    int bad = load_all(paths, npaths, QP_RUN_QERR | QP_RUN_EVENTS | QP_RUN_OUTLIERS | QP_RUN_BSCALES, runs, 1, &n,
                       &ckpts, is_ckpt, m);
    if (ckpts) note_ckpts(paths, npaths, is_ckpt, ckpts);
    if (!n) {
        if (!bad) {
            snprintf(err, sizeof err, "%.900s/runs: no run has logged a step yet", dir);
            msg_add(m, err);
        }
        rc = -1;
        goto out;
    }
    snprintf(figdir, sizeof figdir, "%s/fig", dir);
    if (mkdir(figdir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, sizeof err, "%.900s: %s", figdir, strerror(errno));
        msg_add(m, err);
        goto out;
    }
    rc = bad;
    for (int i = 0; i < n; i++) ptrs[i] = &runs[i];
    ri->figures = QP_FIG_NKINDS;
    for (int k = 0; k < QP_FIG_NKINDS; k++) {
        const qp_fig_kind *kind = &QP_FIG_KINDS[k];
        err[0] = '\0';
        int np = qp_sweep_pick(kind->name, ptrs, n, o->fig.baseline, pick, err, sizeof err);
        if (!np && !err[0]) {
            /* a figure of data no run of this sweep has (bscales: no format with block scales) */
            ri->figures--;
            continue;
        }
        if (!np) {
            msg_add(m, err);
            rc = -1;
            continue;
        }
        const qp_run **sel = calloc((size_t)np, sizeof *sel);
        if (!sel) {
            msg_add(m, "out of memory");
            rc = -1;
            break;
        }
        for (int i = 0; i < np; i++) sel[i] = &runs[pick[i]];
        /* KIND.png, and its twins KIND.svg, KIND.pdf, KIND.csv (qp_draw.h) */
        snprintf(out, sizeof out, "%s/%s.png", figdir, kind->name);
        if (qp_draw(kind, sel, np, &o->fig, out, scratch, o->keep_data, err, sizeof err)) {
            msg_add(m, err);
            rc = -1;
        } else {
            ri->drawn++;
        }
        free(sel);
    }
    note_runs(ri, runs, n);
out:
    if (runs) free_runs(runs, n);
    free(runs);
    free(ptrs);
    free(pick);
    free(is_ckpt);
    for (int i = 0; i < npaths; i++) free(paths[i]);
    free(paths);
    return rc;
}

/* ---- scratch directory ------------------------------------------------- */

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[4400];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

/* ---- main -------------------------------------------------------------- */

int main(int argc, char **argv)
{
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;

    /* --follow: SIGINT/SIGTERM stay blocked and are taken by sigtimedwait
     * between rounds, so a stop request can never cut a round in half (a
     * half-written data file, a stray temporary figure) and never be lost
     * between a check and a sleep. gnuplot gets the default mask back. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    if (o.follow) sigprocmask(SIG_BLOCK, &stop, NULL);

    char scratch[4096] = "";
    if (!o.keep_data) {
        const char *tmp = getenv("TMPDIR");
        snprintf(scratch, sizeof scratch, "%s/qplot.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(scratch)) {
            fprintf(stderr, "qplot: %s: %s\n", scratch, strerror(errno));
            return 2;
        }
    }
    int is_all = !strcmp(o.kind, "all");
    msgs prev = {"", 0};
    for (;;) {
        msgs m = {"", 0};
        round_info ri = {0, -1, 0, 0, 0};
        int r = is_all ? round_all(&o, scratch, &ri, &m) : round_kind(&o, scratch, &ri, &m);
        if (!o.follow || strcmp(m.text, prev.text)) fputs(m.text, stderr);
        prev = m;
        if (!o.follow) {
            rc = r ? 2 : 0;
            break;
        }
        /* a sweep whose gap figure cannot be drawn yet still gets the rest */
        if (ri.drawn) {
            if (is_all)
                printf("qplot: drew %s/fig (%d of %d figures; ", o.runs[0], ri.drawn, ri.figures);
            else
                printf("qplot: drew %s (", o.out);
            printf("%d run%s, up to step %lld, %d still running)\n", ri.nruns, ri.nruns == 1 ? "" : "s",
                   ri.last_step, ri.running);
            fflush(stdout);
        }
        struct timespec ts;
        ts.tv_sec = (time_t)o.interval;
        ts.tv_nsec = (long)((o.interval - (double)ts.tv_sec) * 1e9);
        int sig = sigtimedwait(&stop, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            rc = 0;
            break;
        }
    }
    if (!o.keep_data) remove_dir(scratch);
    return rc;
}
