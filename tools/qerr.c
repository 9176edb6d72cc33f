/* qerr.c — command line and main of qerr: quantization error of every
 * tensor in safetensors, HDF5 or raw float32 files, per number format.
 *
 * Everything is computed before anything is printed: a run that fails on any
 * input prints nothing on stdout and exits 2 (see qerr.h for the pieces). */
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qerr.h"
#include "qp_raw.h"

#ifndef QP_VERSION
#define QP_VERSION "unknown"
#endif

#define DEFAULT_FORMATS "bf16,fp8-e4m3,mxfp8,mxfp4,nvfp4"

static const char *const OPTIONS =
    "--formats, --rht, --sr, --seed, --raw, --csv, --json, --h5, --match, --sort, --top, --summary, "
    "--threads, --help, --version";

static void usage(FILE *f)
{
    fprintf(f,
"usage: qerr [options] FILE...\n"
"Quantization error of every float tensor in safetensors or HDF5 FILEs (HDF5 by\n"
"extension .h5/.hdf5/.hdf/.he5 or signature), per format. A tensor is rows x cols,\n"
"cols = its last dimension. Non-float tensors and empty ones are skipped (note).\n"
"  --formats LIST   comma list (default " DEFAULT_FORMATS "),\n"
"                   of: %s\n"
"  --rht            also FMT+rht: 16-point random Hadamard transform first, error\n"
"                   in the rotated basis (skipped, with a note, if cols %% 16 != 0)\n"
"  --sr             also FMT+sr: stochastic rounding (with --rht also FMT+rht+sr)\n"
"  --seed N         RHT signs and SR seed (default 1); SR stream = hash of the name\n"
"  --raw f32:RxC FILE  also FILE as little-endian float32, exactly R*C*4 bytes\n"
"  --match REGEX    only tensors whose name matches (POSIX extended)\n"
"  --sort KEY       any column, worst first: rel_l2 max_abs sat_frac zero_frac\n"
"                   n_nonfinite descending, snr_db cosine ascending, other numbers\n"
"                   descending, tensor format file ascending; n/a last, stable\n"
"  --top N          only the first N rows (after --sort)\n"
"  --summary        per format: tensors, mean rel_l2, mean snr_db (finite ones;\n"
"                   \"exact\" counts the rest), worst tensor by rel_l2\n"
"  --csv            CSV with header (inf for +inf, empty field = n/a)\n"
"  --json           array of objects; non-finite numbers are null (snr_db of an\n"
"                   exact result, block_scale_* of formats without block scales)\n"
"  --h5 OUT         also the printed rows as HDF5 table /qerr (+ /qerr_summary)\n"
"  --threads N      N tensors at a time, 1..256 (default 1; same output)\n"
"  -h, --help       this text;  -V, --version  the version\n"
"Columns: rel_l2 = ||x-y||/||x||, snr_db = 10 log10(||x||^2/||x-y||^2), max_abs,\n"
"cosine, sat_frac (saturated/elements), zero_frac (non-zeros flushed to 0/non-zeros),\n"
"amax, scale, n_blocks, block_scale_min/max/log2_mean, n_nonfinite (NaN/Inf inputs,\n"
"left out); text shows the main ones, --csv/--json/--h5 all, plus file.\n"
"Progress goes to stderr when it is a terminal and a file has >= 16 tensors.\n"
"Exit: 0 ok, 2 any error (one line on stderr, nothing on stdout).\n",
            qp_format_names());
}

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("qerr: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static unsigned long long parse_uint(const char *opt, const char *s, unsigned long long max)
{
    char *end;
    errno = 0;
    if (s[0] < '0' || s[0] > '9') die("%s: '%s' is not a non-negative integer", opt, s);
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max) die("%s: '%s' is not an integer in 0..%llu", opt, s, max);
    return v;
}

static void add_variant(qerr_opts *o, const qp_format_traits *f, int rht, int sr)
{
    qerr_variant *v = &o->var[o->nvar++];
    snprintf(v->name, sizeof v->name, "%s%s%s", f->name, rht ? "+rht" : "", sr ? "+sr" : "");
    v->fmt = f->fmt;
    v->rht = rht;
    v->sr = sr;
}

static void parse_formats(qerr_opts *o, const char *list, int rht, int sr)
{
    const qp_format_traits *seen[QP_FMT_COUNT];
    int nseen = 0;
    char *copy = strdup(list);
    if (!copy) die("out of memory");
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const qp_format_traits *f = qp_format_by_name(tok);
        if (!f) die("unknown format '%s' (valid: %s)", tok, qp_format_names());
        int dup = 0;
        for (int k = 0; k < nseen; k++) dup |= seen[k] == f;
        if (dup) continue;
        seen[nseen++] = f;
        add_variant(o, f, 0, 0);
        if (rht) add_variant(o, f, 1, 0);
        if (sr) add_variant(o, f, 0, 1);
        if (rht && sr) add_variant(o, f, 1, 1);
    }
    free(copy);
    if (nseen == 0) die("--formats: no format given (valid: %s)", qp_format_names());
}

static char *join_args(int argc, char **argv)
{
    size_t n = 1;
    for (int i = 0; i < argc; i++) n += strlen(argv[i]) + 1;
    char *s = malloc(n), *p = s;
    if (!s) die("out of memory");
    for (int i = 0; i < argc; i++) p += sprintf(p, "%s%s", i ? " " : "", argv[i]);
    *p = '\0';
    return s;
}

/* Long options take "--opt VALUE" or "--opt=VALUE"; --raw takes two words. */
static void parse_args(int argc, char **argv, qerr_opts *o)
{
    const char *formats = DEFAULT_FORMATS, *match = NULL;
    int rht = 0, sr = 0, only_files = 0;
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->threads = 1;
    o->top = -1;
    o->in = calloc((size_t)argc, sizeof *o->in);
    if (!o->in) die("out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_files || a[0] != '-' || !strcmp(a, "-")) {
            o->in[o->nin++] = (qerr_input){QERR_IN_FILE, a, 0, 0};
            continue;
        }
        if (!strcmp(a, "--")) {
            only_files = 1;
            continue;
        }
        char name[64];
        const char *eq = strchr(a, '='), *val = NULL;
        const size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        snprintf(name, sizeof name, "%.*s", (int)(nlen < sizeof name ? nlen : sizeof name - 1), a);
        static const char *const with_value[] = {"--formats", "--seed", "--raw", "--h5", "--match",
                                                 "--sort", "--top", "--threads"};
        int takes = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) takes |= !strcmp(name, with_value[k]);
        if (takes) {
            if (eq) val = eq + 1;
            else if (i + 1 < argc) val = argv[++i];
            else die("option '%s' needs a value (see --help)", name);
        } else if (eq) {
            die("option '%s' takes no value", name);
        }
        if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(name, "-V") || !strcmp(name, "--version")) {
            printf("qerr %s\n", QP_VERSION);
            exit(0);
        } else if (!strcmp(name, "--formats")) formats = val;
        else if (!strcmp(name, "--rht")) rht = 1;
        else if (!strcmp(name, "--sr")) sr = 1;
        else if (!strcmp(name, "--csv")) o->csv = 1;
        else if (!strcmp(name, "--json")) o->json = 1;
        else if (!strcmp(name, "--summary")) o->summary = 1;
        else if (!strcmp(name, "--seed")) o->seed = parse_uint("--seed", val, UINT64_MAX);
        else if (!strcmp(name, "--threads")) o->threads = (int)parse_uint("--threads", val, 256);
        else if (!strcmp(name, "--top")) o->top = (long long)parse_uint("--top", val, (unsigned long long)LLONG_MAX);
        else if (!strcmp(name, "--h5")) o->h5_out = val;
        else if (!strcmp(name, "--match")) match = val;
        else if (!strcmp(name, "--sort")) {
            if (!qerr_col_by_name(val)) die("unknown --sort key '%s' (valid: %s)", val, qerr_col_names());
            o->sort_key = val;
        } else if (!strcmp(name, "--raw")) {
            char err[QP_ERR_LEN];
            qerr_input in = {QERR_IN_RAW, NULL, 0, 0};
            if (qp_raw_parse_spec(val, &in.rows, &in.cols, err, sizeof err)) die("%s", err);
            if (i + 1 >= argc) die("--raw %s needs a FILE after the spec", val);
            in.path = argv[++i];
            o->in[o->nin++] = in;
        } else {
            die("unknown option '%s' (valid: %s)", name, OPTIONS);
        }
    }
    if (o->csv && o->json) die("--csv and --json exclude each other");
    if (o->threads < 1) die("--threads: must be 1..256");
    if (o->nin == 0) die("no input files (see --help)");
    parse_formats(o, formats, rht, sr);
    if (match) {
        const int rc = regcomp(&o->match, match, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char msg[256];
            regerror(rc, &o->match, msg, sizeof msg);
            die("--match: bad regular expression '%s': %s", match, msg);
        }
        o->have_match = 1;
    }
    o->command = join_args(argc, argv);
}

int main(int argc, char **argv)
{
    qerr_opts o;
    qerr_rows rows;
    qerr_summary sum[QERR_MAX_VARIANTS];
    char err[QP_ERR_LEN];
    parse_args(argc, argv, &o);

    if (qerr_run(&o, &rows, err, sizeof err)) die("%s", err);
    if (rows.n == 0) fprintf(stderr, "qerr: note: no tensors to report%s\n", o.have_match ? " (--match)" : "");
    if (o.summary) qerr_summarize(&rows, &o, sum);
    if (o.sort_key) qerr_sort(&rows, qerr_col_by_name(o.sort_key));
    qerr_rows shown = rows;
    if (o.top >= 0 && (size_t)o.top < shown.n) shown.n = (size_t)o.top;

    if (o.h5_out && qerr_write_h5(o.h5_out, &shown, o.summary ? sum : NULL, o.nvar, &o, err, sizeof err))
        die("%s", err);

    int rc;
    if (o.summary)
        rc = o.json ? qerr_print_summary_json(stdout, sum, o.nvar)
           : o.csv  ? qerr_print_summary_csv(stdout, sum, o.nvar)
                    : qerr_print_summary_text(stdout, sum, o.nvar);
    else {
        /* The text table shows the file only when there is more than one. */
        rc = o.json ? qerr_print_json(stdout, &shown)
           : o.csv  ? qerr_print_csv(stdout, &shown)
                    : qerr_print_text(stdout, &shown, o.nin > 1);
    }
    if (rc || fflush(stdout) != 0) die("writing the report: %s", strerror(errno));

    qerr_rows_free(&rows);
    if (o.have_match) regfree(&o.match);
    free(o.in);
    free((char *)o.command);
    return 0;
}
