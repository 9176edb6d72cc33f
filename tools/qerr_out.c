/* qerr_out.c — qerr's stdout reports: aligned text, CSV (RFC 4180) and JSON.
 *
 * Machine formats print reals with %.17g, so they round-trip to the same
 * doubles the --h5 table holds. JSON has no Inf/NaN: a non-finite number
 * (snr_db of an exact quantization, block-scale columns of a format without
 * block scales) is null. CSV writes inf/-inf, and an empty field for "not
 * applicable" (NaN). Text shows "inf" and "-". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qerr.h"
#include "qp_csv.h"
#include "qp_json.h"

/* --- aligned text --- */

typedef struct {
    int ncols;
    size_t nrows;            /* including the header row */
    char **cell;             /* nrows x ncols, malloc'ed strings */
    int *right;              /* right-align column */
} grid;

static int grid_init(grid *g, int ncols, size_t nrows)
{
    g->ncols = ncols;
    g->nrows = nrows;
    g->cell = calloc(nrows * (size_t)ncols, sizeof *g->cell);
    g->right = calloc((size_t)ncols, sizeof *g->right);
    return g->cell && g->right ? 0 : -1;
}

static void grid_free(grid *g)
{
    if (g->cell)
        for (size_t i = 0; i < g->nrows * (size_t)g->ncols; i++) free(g->cell[i]);
    free(g->cell);
    free(g->right);
}

static int grid_set(grid *g, size_t row, int col, const char *s)
{
    return (g->cell[row * (size_t)g->ncols + (size_t)col] = strdup(s)) ? 0 : -1;
}

/* Display width: UTF-8 continuation bytes take no column. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static int grid_print(FILE *f, const grid *g)
{
    size_t *w = calloc((size_t)g->ncols, sizeof *w);
    if (!w) return -1;
    for (size_t r = 0; r < g->nrows; r++)
        for (int c = 0; c < g->ncols; c++) {
            const size_t k = width(g->cell[r * (size_t)g->ncols + (size_t)c]);
            if (k > w[c]) w[c] = k;
        }
    for (size_t r = 0; r < g->nrows; r++) {
        for (int c = 0; c < g->ncols; c++) {
            const char *s = g->cell[r * (size_t)g->ncols + (size_t)c];
            const int pad = (int)(w[c] - width(s));
            const int last = c == g->ncols - 1;
            if (c) fputs("  ", f);
            if (g->right[c]) fprintf(f, "%*s%s", pad, "", s);
            else if (last) fputs(s, f); /* no trailing blanks */
            else fprintf(f, "%s%*s", s, pad, "");
        }
        fputc('\n', f);
    }
    free(w);
    return ferror(f) ? -1 : 0;
}

/* A tensor name on one line: control characters escaped. */
static void text_name(const char *s, char *out, size_t n)
{
    size_t o = 0;
    for (; *s && o + 5 < n; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7F) o += (size_t)snprintf(out + o, n - o, "\\x%02x", c);
        else out[o++] = (char)c;
    }
    out[o] = '\0';
}

static void text_real(char *buf, size_t n, const char *fmt, double x)
{
    if (isnan(x)) snprintf(buf, n, "-");
    else if (isinf(x)) snprintf(buf, n, x > 0 ? "inf" : "-inf");
    else snprintf(buf, n, fmt, x);
}

int qerr_print_text(FILE *f, const qerr_rows *rows, int show_file)
{
    const qerr_col *cols[64];
    int nc = 0;
    for (int c = 0; c < qerr_ncols; c++)
        if (qerr_cols[c].in_text || (show_file && !strcmp(qerr_cols[c].name, "file"))) cols[nc++] = &qerr_cols[c];
    grid g;
    int rc = -1;
    if (grid_init(&g, nc, rows->n + 1)) goto done;
    for (int c = 0; c < nc; c++) {
        g.right[c] = cols[c]->kind != QERR_STR;
        if (grid_set(&g, 0, c, cols[c]->name)) goto done;
    }
    for (size_t r = 0; r < rows->n; r++) {
        const qerr_row *row = &rows->r[r];
        for (int c = 0; c < nc; c++) {
            char buf[1024];
            if (cols[c]->kind == QERR_STR) text_name(cols[c]->str(row), buf, sizeof buf);
            else if (cols[c]->kind == QERR_INT) snprintf(buf, sizeof buf, "%lld", (long long)cols[c]->i64(row));
            else text_real(buf, sizeof buf, cols[c]->text_fmt, cols[c]->f64(row));
            if (grid_set(&g, r + 1, c, buf)) goto done;
        }
    }
    rc = grid_print(f, &g);
done:
    grid_free(&g);
    return rc;
}

int qerr_print_summary_text(FILE *f, const qerr_summary *s, int n)
{
    static const char *head[] = {"format", "tensors", "mean_rel_l2", "mean_snr_db", "exact", "worst_rel_l2",
                                 "worst_tensor"};
    const int nc = 7;
    grid g;
    int rc = -1;
    if (grid_init(&g, nc, (size_t)n + 1)) goto done;
    for (int c = 0; c < nc; c++) {
        g.right[c] = c >= 1 && c <= 5;
        if (grid_set(&g, 0, c, head[c])) goto done;
    }
    for (int i = 0; i < n; i++) {
        char b[7][1024];
        snprintf(b[0], sizeof b[0], "%s", s[i].var->name);
        snprintf(b[1], sizeof b[1], "%lld", (long long)s[i].tensors);
        text_real(b[2], sizeof b[2], "%.4g", s[i].mean_rel_l2);
        text_real(b[3], sizeof b[3], "%.2f", s[i].mean_snr_db);
        snprintf(b[4], sizeof b[4], "%lld", (long long)s[i].exact);
        text_real(b[5], sizeof b[5], "%.4g", s[i].worst_rel_l2);
        if (s[i].worst_tensor) text_name(s[i].worst_tensor, b[6], sizeof b[6]);
        else snprintf(b[6], sizeof b[6], "-");
        for (int c = 0; c < nc; c++)
            if (grid_set(&g, (size_t)i + 1, c, b[c])) goto done;
    }
    rc = grid_print(f, &g);
done:
    grid_free(&g);
    return rc;
}

/* --- CSV --- */

int qerr_print_csv(FILE *f, const qerr_rows *rows)
{
    for (int c = 0; c < qerr_ncols; c++) fprintf(f, "%s%s", c ? "," : "", qerr_cols[c].name);
    fputc('\n', f);
    for (size_t r = 0; r < rows->n; r++) {
        for (int c = 0; c < qerr_ncols; c++) {
            const qerr_col *col = &qerr_cols[c];
            if (c) fputc(',', f);
            if (col->kind == QERR_STR) qp_csv_str(f, col->str(&rows->r[r]));
            else if (col->kind == QERR_INT) fprintf(f, "%lld", (long long)col->i64(&rows->r[r]));
            else qp_csv_real(f, col->f64(&rows->r[r]));
        }
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

int qerr_print_summary_csv(FILE *f, const qerr_summary *s, int n)
{
    fputs("format,tensors,exact,mean_rel_l2,mean_snr_db,mean_sat_frac,mean_zero_frac,worst_file,worst_tensor,"
          "worst_rel_l2\n", f);
    for (int i = 0; i < n; i++) {
        qp_csv_str(f, s[i].var->name);
        fprintf(f, ",%lld,%lld,", (long long)s[i].tensors, (long long)s[i].exact);
        qp_csv_real(f, s[i].mean_rel_l2);
        fputc(',', f);
        qp_csv_real(f, s[i].mean_snr_db);
        fputc(',', f);
        qp_csv_real(f, s[i].mean_sat_frac);
        fputc(',', f);
        qp_csv_real(f, s[i].mean_zero_frac);
        fputc(',', f);
        qp_csv_str(f, s[i].worst_file ? s[i].worst_file : "");
        fputc(',', f);
        qp_csv_str(f, s[i].worst_tensor ? s[i].worst_tensor : "");
        fputc(',', f);
        qp_csv_real(f, s[i].worst_rel_l2);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

/* --- JSON --- */

/* Escaped as JSON requires; bytes that are not UTF-8 (possible in HDF5
 * names) become U+FFFD so the output always parses. */
static void json_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    fputc('"', f);
    while (n) {
        const unsigned char c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
        } else if (c >= 0x80) {
            const size_t k = qp_utf8_seq_len(p, n);
            if (k == 0) {
                fputs("\\ufffd", f);
                p++;
                n--;
                continue;
            }
            fwrite(p, 1, k, f);
            p += k;
            n -= k;
            continue;
        } else {
            fputc(c, f);
        }
        p++;
        n--;
    }
    fputc('"', f);
}

static void json_real(FILE *f, double x)
{
    if (!isfinite(x)) fputs("null", f);
    else fprintf(f, "%.17g", x);
}

int qerr_print_json(FILE *f, const qerr_rows *rows)
{
    fputc('[', f);
    for (size_t r = 0; r < rows->n; r++) {
        fputs(r ? ",\n  {" : "\n  {", f);
        for (int c = 0; c < qerr_ncols; c++) {
            const qerr_col *col = &qerr_cols[c];
            if (c) fputs(", ", f);
            json_str(f, col->name);
            fputs(": ", f);
            if (col->kind == QERR_STR) json_str(f, col->str(&rows->r[r]));
            else if (col->kind == QERR_INT) fprintf(f, "%lld", (long long)col->i64(&rows->r[r]));
            else json_real(f, col->f64(&rows->r[r]));
        }
        fputc('}', f);
    }
    fputs(rows->n ? "\n]\n" : "]\n", f);
    return ferror(f) ? -1 : 0;
}

int qerr_print_summary_json(FILE *f, const qerr_summary *s, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        fputs(i ? ",\n  {\"format\": " : "\n  {\"format\": ", f);
        json_str(f, s[i].var->name);
        fprintf(f, ", \"tensors\": %lld, \"exact\": %lld, \"mean_rel_l2\": ", (long long)s[i].tensors,
                (long long)s[i].exact);
        json_real(f, s[i].mean_rel_l2);
        fputs(", \"mean_snr_db\": ", f);
        json_real(f, s[i].mean_snr_db);
        fputs(", \"mean_sat_frac\": ", f);
        json_real(f, s[i].mean_sat_frac);
        fputs(", \"mean_zero_frac\": ", f);
        json_real(f, s[i].mean_zero_frac);
        fputs(", \"worst_file\": ", f);
        if (s[i].worst_file) json_str(f, s[i].worst_file);
        else fputs("null", f);
        fputs(", \"worst_tensor\": ", f);
        if (s[i].worst_tensor) json_str(f, s[i].worst_tensor);
        else fputs("null", f);
        fputs(", \"worst_rel_l2\": ", f);
        json_real(f, s[i].worst_rel_l2);
        fputc('}', f);
    }
    fputs(n ? "\n]\n" : "]\n", f);
    return ferror(f) ? -1 : 0;
}
