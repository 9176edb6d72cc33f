/* qp_cli.c — the command-line conventions the four tools share (see qp_cli.h). */
#include "qp_cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the walk over argv ------------------------------------------------ */

static const qp_cli_opt *find_long(const qp_cli_opt *tab, int n, const char *name, size_t len, int *at)
{
    for (int k = 0; k < n; k++)
        if (tab[k].name && strlen(tab[k].name) == len && !strncmp(tab[k].name, name, len)) {
            *at = k;
            return &tab[k];
        }
    return NULL;
}

int qp_cli_next(qp_cli_iter *it, int argc, char **argv, const qp_cli_opt *tab, int n, const char **val, char *err,
                size_t errlen)
{
    *val = NULL;
    if (it->i < 1) it->i = 1;
    if (it->i >= argc) return QP_CLI_DONE;
    const char *a = argv[it->i++];
    if (it->only_args || a[0] != '-' || !a[1]) {
        *val = a;
        return QP_CLI_ARG;
    }
    if (!strcmp(a, "--")) {
        it->only_args = true;
        return qp_cli_next(it, argc, argv, tab, n, val, err, errlen);
    }
    int k = -1;
    if (a[1] == '-') {
        const char *name = a + 2, *eq = strchr(name, '=');
        const size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const qp_cli_opt *o = find_long(tab, n, name, len, &k);
        if (!o) {
            char word[96];
            snprintf(word, sizeof word, "--%.*s", (int)(len < 80 ? len : 80), name);
            qp_cli_unknown(word, tab, n, err, errlen);
            return QP_CLI_BAD;
        }
        if (!o->arg) {
            if (eq) {
                snprintf(err, errlen, "--%s takes no value (see --help)", o->name);
                return QP_CLI_BAD;
            }
            return k;
        }
        if (eq) *val = eq + 1;
        else if (it->i < argc) *val = argv[it->i++];
        else {
            snprintf(err, errlen, "--%s needs a value (see --help)", o->name);
            return QP_CLI_BAD;
        }
        return k;
    }
    /* -x, -x VALUE, -xVALUE */
    for (int j = 0; j < n; j++)
        if (tab[j].short_name && tab[j].short_name == a[1]) k = j;
    if (k < 0 || (a[2] && !tab[k].arg)) {
        qp_cli_unknown(a, tab, n, err, errlen);
        return QP_CLI_BAD;
    }
    if (!tab[k].arg) return k;
    if (a[2]) *val = a + 2;
    else if (it->i < argc) *val = argv[it->i++];
    else {
        snprintf(err, errlen, "-%c needs a value (see --help)", a[1]);
        return QP_CLI_BAD;
    }
    return k;
}

/* ---- typos ------------------------------------------------------------- */

int qp_cli_distance(const char *a, const char *b)
{
    enum { MAX = 64 };
    const size_t la = strlen(a), lb = strlen(b);
    if (la >= MAX || lb >= MAX) return (int)(la > lb ? la : lb);
    /* three rows: i-2, i-1, i (a transposition looks two rows back) */
    int d[3][MAX + 1];
    for (size_t j = 0; j <= lb; j++) d[1][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int *cur = d[(i + 1) % 3], *prev = d[i % 3], *pp = d[(i + 2) % 3];
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int v = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < v) v = prev[j] + 1;
            if (cur[j - 1] + 1 < v) v = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < v) v = pp[j - 2] + 1;
            cur[j] = v;
        }
    }
    return d[(la + 1) % 3][lb];
}

const char *qp_cli_nearest(const char *word, const char *const *names, int n)
{
    const char *best = NULL;
    int bestd = 1 << 30;
    for (int k = 0; k < n; k++) {
        if (!names[k]) continue;
        const int d = qp_cli_distance(word, names[k]);
        if (d < bestd) bestd = d, best = names[k];
    }
    const int len = (int)strlen(word);
    int limit = len / 3 > 3 ? 3 : len / 3;
    if (limit < 1) limit = 1;
    return best && bestd <= limit ? best : NULL;
}

void qp_cli_unknown(const char *word, const qp_cli_opt *tab, int n, char *err, size_t errlen)
{
    /* long names compared without their dashes; a single-dash word is
     * compared as the long name it might have meant */
    const char *bare = word;
    while (*bare == '-') bare++;
    const char *names[256];
    int m = 0;
    for (int k = 0; k < n && m < 256; k++) names[m++] = tab[k].name;
    const char *near = *bare ? qp_cli_nearest(bare, names, m) : NULL;
    if (near) snprintf(err, errlen, "unknown option '%.80s' (did you mean --%s?)", word, near);
    else snprintf(err, errlen, "unknown option '%.80s' (see --help)", word);
}

/* ---- values ------------------------------------------------------------ */

void qp_cli_range(double lo, double hi, bool lo_open, bool hi_open, bool integer, char *buf, size_t len)
{
    const char *what = integer ? "an integer" : "a number";
    if (integer) {
        /* an integer's open end is the next integer in */
        const double l = lo_open ? lo + 1 : lo, h = hi_open ? hi - 1 : hi;
        if (h >= 9.2e18 || isinf(h)) snprintf(buf, len, "%s >= %.0f", what, l);
        else snprintf(buf, len, "%s in %.0f..%.0f", what, l, h);
    } else if (isinf(lo) && isinf(hi)) snprintf(buf, len, "a finite number");
    else if (isinf(hi)) snprintf(buf, len, "%s %s %g", what, lo_open ? ">" : ">=", lo);
    else if (isinf(lo)) snprintf(buf, len, "%s %s %g", what, hi_open ? "<" : "<=", hi);
    else snprintf(buf, len, "%s in %s%g, %g%s", what, lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]");
}

void qp_cli_expects(const char *opt, const char *values, const char *text, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s expects %s, not '%.60s'", opt, values, text);
}

int qp_cli_int(const char *opt, const char *text, long long lo, long long hi, long long *out, char *err,
               size_t errlen)
{
    char *end;
    errno = 0;
    const long long v = strtoll(text, &end, 10);
    if (!*text || *end || errno || v < lo || v > hi) {
        char want[96];
        qp_cli_range((double)lo, (double)hi, false, false, true, want, sizeof want);
        qp_cli_expects(opt, want, text, err, errlen);
        return -1;
    }
    *out = v;
    return 0;
}

int qp_cli_num(const char *opt, const char *text, double lo, double hi, bool lo_open, bool hi_open, double *out,
               char *err, size_t errlen)
{
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    const bool in = (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
    if (!*text || *end || errno || !isfinite(v) || !in) {
        char want[96];
        qp_cli_range(lo, hi, lo_open, hi_open, false, want, sizeof want);
        qp_cli_expects(opt, want, text, err, errlen);
        return -1;
    }
    *out = v;
    return 0;
}

/* ---- --help ------------------------------------------------------------ */

#define HELP_COL 22
#define HELP_WIDTH 100

/* text wrapped into [col, HELP_WIDTH), the first line starting at *at */
static void wrap(FILE *f, const char *text, int col, int at)
{
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            fputc('\n', f);
            at = 0;
            p++;
            continue;
        }
        size_t w = strcspn(p, " \n");
        if (at < col) {
            fprintf(f, "%*s", col - at, "");
            at = col;
        } else if (at > col && at + 1 + (int)w > HELP_WIDTH) {
            fprintf(f, "\n%*s", col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', f);
            at++;
        }
        fwrite(p, 1, w, f);
        at += (int)w;
        p += w;
        while (*p == ' ') p++;
    }
    fputc('\n', f);
}

void qp_cli_help(FILE *f, const qp_cli_opt *tab, int n)
{
    for (int k = 0; k < n; k++) {
        const qp_cli_opt *o = &tab[k];
        char head[128];
        int h = 0;
        if (o->short_name) h = snprintf(head, sizeof head, "  -%c, --%s", o->short_name, o->name);
        else h = snprintf(head, sizeof head, "  --%s", o->name);
        if (o->arg) h += snprintf(head + h, sizeof head - (size_t)h, " %s", o->arg);
        fputs(head, f);
        if (!o->help || !*o->help) {
            fputc('\n', f);
            continue;
        }
        if (h + 2 > HELP_COL) {
            fputc('\n', f);
            h = 0;
        }
        wrap(f, o->help, HELP_COL, h);
    }
}

/* ---- --man ------------------------------------------------------------- */

/* text as roff: backslashes and dashes escaped, a line starting with '.' or
 * '\'' protected, "\n\n" a new paragraph, "\n" before an indented line a
 * line break, any other "\n" a space (hard-wrapped text flows again) */
static void roff(FILE *f, const char *text)
{
    int bol = 1;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            if (p[1] == '\n') {
                fputs("\n.PP\n", f);
                p++;
            } else if (p[1] == ' ') {
                fputs("\n.br\n", f);
            } else {
                fputc('\n', f);
            }
            bol = 1;
            continue;
        }
        if (bol && (*p == '.' || *p == '\'')) fputs("\\&", f);
        if (bol && *p == ' ') {
            while (p[1] == ' ') p++;
            continue;
        }
        bol = 0;
        if (*p == '\\') fputs("\\e", f);
        else if (*p == '-') fputs("\\-", f);
        else fputc(*p, f);
    }
    fputc('\n', f);
}

static void upper(FILE *f, const char *s)
{
    for (; *s; s++) fputc(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s, f);
}

void qp_cli_man(FILE *f, const qp_cli_page *page, const qp_cli_opt *tab, int n)
{
    fputs(".TH ", f);
    upper(f, page->name);
    fprintf(f, " 1 \"\" \"qprec %s\" \"qprec manual\"\n", page->version ? page->version : "");
    fputs(".SH NAME\n", f);
    fprintf(f, "%s \\- ", page->name);
    roff(f, page->summary);
    fputs(".SH SYNOPSIS\n", f);
    for (const char *p = page->synopsis; *p;) {
        const size_t w = strcspn(p, "\n");
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(w < 500 ? w : 500), p);
        fprintf(f, ".B %s\n", page->name);
        roff(f, line);
        fputs(".br\n", f);
        p += w;
        if (*p) p++;
    }
    fputs(".SH DESCRIPTION\n", f);
    roff(f, page->description);
    fputs(".SH OPTIONS\n", f);
    roff(f, "A value is given as --name value or --name=value (a short option: -x value or -xvalue); -- ends the "
            "options.");
    for (int k = 0; k < n; k++) {
        const qp_cli_opt *o = &tab[k];
        fputs(".TP\n", f);
        if (o->short_name) fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
        fputs("\\fB\\-\\-", f);
        for (const char *s = o->name; *s; s++) {
            if (*s == '-') fputs("\\-", f);
            else fputc(*s, f);
        }
        fputs("\\fR", f);
        if (o->arg) {
            fputs(" \\fI", f);
            for (const char *s = o->arg; *s; s++) {
                if (*s == '-') fputs("\\-", f);
                else if (*s == '\\') fputs("\\e", f);
                else fputc(*s, f);
            }
            fputs("\\fR", f);
        }
        fputc('\n', f);
        roff(f, o->help && *o->help ? o->help : "");
    }
    fputs(".SH EXIT STATUS\n", f);
    roff(f, page->exit_status);
    fputs(".SH SEE ALSO\n", f);
    roff(f, page->see_also);
}
