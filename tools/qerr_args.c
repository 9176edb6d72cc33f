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
#include "qp_hadamard.h"
#include "qp_raw.h"

static const char *const OPTIONS =
    "--formats, --rht, --rht-signs, --sr, --seed, --raw, --csv, --json, --h5, --match, --sort, --top, --summary, "
    "--threads, --help, --version";

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

static int parse_uint(ctx *c, const char *opt, const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (s[0] < '0' || s[0] > '9') return fail(c, "%s: '%s' is not a non-negative integer", opt, s);
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max) return fail(c, "%s: '%s' is not an integer in 0..%llu", opt, s, max);
    *out = v;
    return 0;
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
    int rht = 0, rht_kind = QP_RHT_SEEDED, sr = 0, only_files = 0;
    o->in = calloc((size_t)argc, sizeof *o->in);
    if (!o->in) return fail(c, "out of memory");
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
                                                 "--sort", "--top", "--threads", "--rht-signs"};
        int takes = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) takes |= !strcmp(name, with_value[k]);
        if (takes) {
            if (eq) val = eq + 1;
            else if (i + 1 < argc) val = argv[++i];
            else return fail(c, "option '%s' needs a value (see --help)", name);
        } else if (eq) {
            return fail(c, "option '%s' takes no value", name);
        }
        unsigned long long u = 0;
        if (!strcmp(name, "-h") || !strcmp(name, "--help")) return QERR_ARGS_HELP;
        else if (!strcmp(name, "-V") || !strcmp(name, "--version")) return QERR_ARGS_VERSION;
        else if (!strcmp(name, "--formats")) formats = val;
        else if (!strcmp(name, "--rht")) rht = 1;
        else if (!strcmp(name, "--rht-signs")) {
            if (!strcmp(val, "te")) rht_kind = QP_RHT_TE;
            else if (!strcmp(val, "seed")) rht_kind = QP_RHT_SEEDED;
            else return fail(c, "--rht-signs: '%s' is not seed or te", val);
        }
        else if (!strcmp(name, "--sr")) sr = 1;
        else if (!strcmp(name, "--csv")) o->csv = 1;
        else if (!strcmp(name, "--json")) o->json = 1;
        else if (!strcmp(name, "--summary")) o->summary = 1;
        else if (!strcmp(name, "--seed")) {
            if (parse_uint(c, "--seed", val, UINT64_MAX, &u)) return -1;
            o->seed = u;
        } else if (!strcmp(name, "--threads")) {
            if (parse_uint(c, "--threads", val, 256, &u)) return -1;
            o->threads = (int)u;
        } else if (!strcmp(name, "--top")) {
            if (parse_uint(c, "--top", val, (unsigned long long)LLONG_MAX, &u)) return -1;
            o->top = (long long)u;
        } else if (!strcmp(name, "--h5")) o->h5_out = val;
        else if (!strcmp(name, "--match")) match = val;
        else if (!strcmp(name, "--sort")) {
            if (!qerr_col_by_name(val)) return fail(c, "unknown --sort key '%s' (valid: %s)", val, qerr_col_names());
            o->sort_key = val;
        } else if (!strcmp(name, "--raw")) {
            char err[QP_ERR_LEN];
            qerr_input in = {QERR_IN_RAW, NULL, 0, 0};
            if (qp_raw_parse_spec(val, &in.rows, &in.cols, err, sizeof err)) return fail(c, "%s", err);
            if (i + 1 >= argc) return fail(c, "--raw %s needs a FILE after the spec", val);
            in.path = argv[++i];
            o->in[o->nin++] = in;
        } else {
            return fail(c, "unknown option '%s' (valid: %s)", name, OPTIONS);
        }
    }
    if (o->csv && o->json) return fail(c, "--csv and --json exclude each other");
    if (o->threads < 1) return fail(c, "--threads: must be 1..256");
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
