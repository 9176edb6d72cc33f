/* qerr_args.c — qerr's command line: arguments in, qerr_opts out (see
 * qerr.h). No exit and no printing, so the fuzzer can drive it; qerr.c
 * prints the message with "qerr: " in front and exits 2. */
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qerr.h"
#include "qp_cli.h"
#include "qp_hadamard.h"
#include "qp_raw.h"

/* qerr's options: the table the parser below reads and --help and --man
 * print (qp_cli.h). */
enum { O_FORMATS, O_RHT, O_RHT_SIGNS, O_SR, O_SEED, O_RAW, O_MATCH, O_SORT, O_TOP, O_SUMMARY, O_CSV, O_JSON, O_H5, O_THREADS,
       O_HELP, O_VERSION, O_MAN, O_COUNT };
const qp_cli_opt qerr_options[] = {
    {.id = O_FORMATS, .name = "formats", .arg = "LIST",
     .help = "comma list of formats (default " QERR_DEFAULT_FORMATS "; the formats are listed above)"},
    {.id = O_RHT, .name = "rht", .help = "also FMT+rht: 16-point random Hadamard transform first, error in the "
                                         "rotated basis (skipped, with a note, if cols % 16 != 0)"},
    {.id = O_RHT_SIGNS, .name = "rht-signs", .arg = "S",
     .help = "seed (default): the RHT's signs from --seed; te: Transformer Engine's transform, its fixed signs "
             "on H's rows (FMT+rht-te)"},
    {.id = O_SR, .name = "sr", .help = "also FMT+sr: stochastic rounding (with --rht also FMT+rht+sr)"},
    {.id = O_SEED, .name = "seed", .arg = "N",
     .help = "RHT signs and SR seed, an integer >= 0 (default 1); SR stream = hash of the name"},
    {.id = O_RAW, .name = "raw", .arg = "f32:RxC FILE",
     .help = "also FILE as little-endian float32, exactly R*C*4 bytes"},
    {.id = O_MATCH, .name = "match", .arg = "REGEX", .help = "only tensors whose name matches (POSIX extended)"},
    {.id = O_SORT, .name = "sort", .arg = "KEY",
     .help = "any column, worst first: rel_l2 max_abs sat_frac zero_frac n_nonfinite descending, snr_db cosine "
             "ascending, other numbers descending, tensor format file ascending; n/a last, stable"},
    {.id = O_TOP, .name = "top", .arg = "N", .help = "only the first N rows (after --sort)"},
    {.id = O_SUMMARY, .name = "summary",
     .help = "per format: tensors, mean rel_l2, mean snr_db (finite ones; \"exact\" counts the rest), worst "
             "tensor by rel_l2"},
    {.id = O_CSV, .name = "csv", .help = "CSV with header (inf for +inf, empty field = n/a)"},
    {.id = O_JSON, .name = "json", .help = "array of objects; non-finite numbers are null (snr_db of an exact "
                                           "result, block_scale_* of formats without block scales)"},
    {.id = O_H5, .name = "h5", .arg = "OUT", .help = "also the printed rows as HDF5 table /qerr (+ /qerr_summary)"},
    {.id = O_THREADS, .name = "threads", .arg = "N", .help = "N tensors at a time, 1..256 (default 1; same output)"},
    {.id = O_HELP, .name = "help", .short_name = 'h', .help = "this text"},
    {.id = O_VERSION, .name = "version", .short_name = 'V', .help = "the version"},
    {.id = O_MAN, .name = "man", .help = "this manual as a roff man page"},
};
const int qerr_n_options = (int)(sizeof qerr_options / sizeof qerr_options[0]);
_Static_assert(sizeof qerr_options / sizeof qerr_options[0] == O_COUNT, "a row per option");

typedef struct {
    char *err;
    size_t errlen;
} ctx;

__attribute__((format(printf, 2, 3))) static int fail(ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static void add_variant(qerr_opts *o, const qp_format_traits *f, int rht, int sr)
{
    qerr_variant *v = &o->var[o->nvar++];
    snprintf(v->name, sizeof v->name, "%s%s%s", f->name,
             rht == QP_RHT_TE ? "+rht-te" : rht ? "+rht" : "", sr ? "+sr" : "");
    v->fmt = f->fmt;
    v->rht = rht;
    v->sr = sr;
}

static int parse_formats(ctx *c, qerr_opts *o, const char *list, int rht, int sr)
{
    const qp_format_traits *seen[QP_FMT_COUNT];
    int nseen = 0;
    char *copy = strdup(list);
    if (!copy) return fail(c, "out of memory");
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const qp_format_traits *f = qp_format_by_name(tok);
        if (!f) {
            fail(c, "unknown format '%s' (valid: %s)", tok, qp_format_names());
            free(copy);
            return -1;
        }
        int dup = 0;
        for (int k = 0; k < nseen; k++) dup |= seen[k] == f;
        if (dup) continue;
        seen[nseen++] = f;
        add_variant(o, f, 0, 0);
        if (rht) add_variant(o, f, rht, 0);
        if (sr) add_variant(o, f, 0, 1);
        if (rht && sr) add_variant(o, f, rht, 1);
    }
    free(copy);
    if (nseen == 0) return fail(c, "--formats: no format given (valid: %s)", qp_format_names());
    return 0;
}

static char *join_args(int argc, char **argv)
{
    size_t n = 1;
    for (int i = 0; i < argc; i++) n += strlen(argv[i]) + 1;
    char *s = malloc(n), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < argc; i++) p += sprintf(p, "%s%s", i ? " " : "", argv[i]);
    *p = '\0';
    return s;
}

/* The options part; on failure the caller frees what *o holds. Long options
 * take "--opt VALUE" or "--opt=VALUE"; --raw takes two words. */
static int parse(ctx *c, int argc, char **argv, qerr_opts *o)
{
    const char *formats = QERR_DEFAULT_FORMATS, *match = NULL;
    int rht = 0, rht_kind = QP_RHT_SEEDED, sr = 0;
    o->in = calloc((size_t)argc, sizeof *o->in);
    if (!o->in) return fail(c, "out of memory");
    qp_cli_iter it = {1, false};
    for (;;) {
        const char *val;
        const int k = qp_cli_next(&it, argc, argv, qerr_options, qerr_n_options, &val, c->err, c->errlen);
        if (k == QP_CLI_DONE) break;
        if (k == QP_CLI_BAD) return -1;
        if (k == QP_CLI_ARG) {
            o->in[o->nin++] = (qerr_input){QERR_IN_FILE, val, 0, 0};
            continue;
        }
        long long u = 0;
        switch (qerr_options[k].id) {
        case O_HELP: return QERR_ARGS_HELP;
        case O_VERSION: return QERR_ARGS_VERSION;
        case O_MAN: return QERR_ARGS_MAN;
        case O_FORMATS: formats = val; break;
        case O_RHT: rht = 1; break;
        case O_RHT_SIGNS:
            if (!strcmp(val, "te")) rht_kind = QP_RHT_TE;
            else if (!strcmp(val, "seed")) rht_kind = QP_RHT_SEEDED;
            else return fail(c, "--rht-signs: '%s' is not seed or te", val);
            break;
        case O_SR: sr = 1; break;
        case O_CSV: o->csv = 1; break;
        case O_JSON: o->json = 1; break;
        case O_SUMMARY: o->summary = 1; break;
        case O_SEED: {
            /* the whole uint64 range */
            char *end;
            errno = 0;
            const unsigned long long v = strtoull(val, &end, 10);
            if (val[0] < '0' || val[0] > '9' || *end || errno) {
                qp_cli_expects("--seed", "an integer in 0..18446744073709551615", val, c->err, c->errlen);
                return -1;
            }
            o->seed = v;
            break;
        }
        case O_THREADS:
            if (qp_cli_int("--threads", val, 1, 256, &u, c->err, c->errlen)) return -1;
            o->threads = (int)u;
            break;
        case O_TOP:
            if (qp_cli_int("--top", val, 0, LLONG_MAX, &u, c->err, c->errlen)) return -1;
            o->top = u;
            break;
        case O_H5: o->h5_out = val; break;
        case O_MATCH: match = val; break;
        case O_SORT:
            if (!qerr_col_by_name(val)) return fail(c, "unknown --sort key '%s' (valid: %s)", val, qerr_col_names());
            o->sort_key = val;
            break;
        case O_RAW: {
            char err[QP_ERR_LEN];
            qerr_input in = {QERR_IN_RAW, NULL, 0, 0};
            if (qp_raw_parse_spec(val, &in.rows, &in.cols, err, sizeof err)) return fail(c, "%s", err);
            if (it.i >= argc) return fail(c, "--raw %s needs a FILE after the spec", val);
            in.path = argv[it.i++];
            o->in[o->nin++] = in;
            break;
        }
        case O_COUNT: return fail(c, "%s: no such option", argv[it.i - 1]);
        }
    }
    if (o->csv && o->json) return fail(c, "--csv and --json exclude each other");
    if (o->nin == 0) return fail(c, "no input files (see --help)");
    if (parse_formats(c, o, formats, rht ? rht_kind : 0, sr)) return -1;
    if (match) {
        const int rc = regcomp(&o->match, match, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char msg[256];
            regerror(rc, &o->match, msg, sizeof msg);
            return fail(c, "--match: bad regular expression '%s': %s", match, msg);
        }
        o->have_match = 1;
    }
    if (!(o->command = join_args(argc, argv))) return fail(c, "out of memory");
    return QERR_ARGS_OK;
}

int qerr_parse_args(int argc, char **argv, qerr_opts *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->threads = 1;
    o->top = -1;
    err[0] = '\0';
    ctx c = {err, errlen};
    const int rc = parse(&c, argc, argv, o);
    if (rc == QERR_ARGS_OK) return rc;
    qerr_opts_free(o);
    return rc < 0 ? QERR_ARGS_BAD : rc;
}

void qerr_opts_free(qerr_opts *o)
{
    if (o->have_match) regfree(&o->match);
    free(o->in);
    free((char *)o->command);
    o->in = NULL, o->command = NULL, o->have_match = 0, o->nin = 0;
}
