/* qp_figcsv.c — a figure's data file as CSV (see qp_figcsv.h). */
#define _GNU_SOURCE /* getline */
#include "qp_figcsv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qp_csv.h"

/* A growing array of strings. */
typedef struct {
    char **s;
    int n, cap;
} strs;

static int strs_add(strs *l, const char *s, size_t len)
{
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 16;
        char **ns = realloc(l->s, (size_t)cap * sizeof *ns);
        if (!ns) return -1;
        l->s = ns, l->cap = cap;
    }
    if (!(l->s[l->n] = strndup(s, len))) return -1;
    l->n++;
    return 0;
}

static void strs_clear(strs *l)
{
    for (int i = 0; i < l->n; i++) free(l->s[i]);
    l->n = 0;
}

static void strs_free(strs *l)
{
    strs_clear(l);
    free(l->s);
    memset(l, 0, sizeof *l);
}

static int strs_find(const strs *l, const char *s)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->s[i], s)) return i;
    return -1;
}

/* Fields of a data line: blank-separated, "..." one field (without quotes). */
static int data_fields(const char *line, strs *out)
{
    strs_clear(out);
    for (const char *c = line;;) {
        while (*c == ' ' || *c == '\t') c++;
        if (!*c || *c == '#') return 0;
        const char *start = c;
        if (*c == '"') {
            start = ++c;
            while (*c && *c != '"') c++;
            if (strs_add(out, start, (size_t)(c - start))) return -1;
            if (*c) c++;
        } else {
            while (*c && *c != ' ' && *c != '\t') c++;
            if (strs_add(out, start, (size_t)(c - start))) return -1;
        }
    }
}

/* Column names of a header comment: words, parentheses grouping. */
static int name_words(const char *s, strs *out)
{
    strs_clear(out);
    for (const char *c = s;;) {
        while (*c == ' ' || *c == '\t') c++;
        if (!*c) return 0;
        const char *start = c;
        int depth = 0;
        while (*c && (depth || (*c != ' ' && *c != '\t'))) {
            depth += *c == '(';
            depth -= *c == ')' && depth > 0;
            c++;
        }
        if (strs_add(out, start, (size_t)(c - start))) return -1;
    }
}

/* One block as read: its header comment, its rows (fields flattened, with
 * each row's length), and once all is read the union column of its field k. */
typedef struct {
    char *header;   /* the first comment, without '#'; NULL if none */
    strs cells;
    int *len;       /* fields of each row */
    int nrows, rowcap, ncol;
    char *series;
    int *col;
} block;

typedef struct {
    block *b;
    int n, cap;
    strs names;     /* the union of column names */
} table;

static void table_free(table *t)
{
    for (int i = 0; i < t->n; i++) {
        block *b = &t->b[i];
        free(b->header), free(b->series), free(b->col), free(b->len);
        strs_free(&b->cells);
    }
    free(t->b);
    strs_free(&t->names);
}

static block *new_block(table *t, const char *header)
{
    if (t->n == t->cap) {
        const int cap = t->cap ? 2 * t->cap : 8;
        block *nb = realloc(t->b, (size_t)cap * sizeof *nb);
        if (!nb) return NULL;
        t->b = nb, t->cap = cap;
    }
    block *b = &t->b[t->n];
    memset(b, 0, sizeof *b);
    if (header && !(b->header = strdup(header))) return NULL;
    t->n++;
    return b;
}

static int add_row(block *b, const strs *fields)
{
    if (b->nrows == b->rowcap) {
        const int cap = b->rowcap ? 2 * b->rowcap : 64;
        int *nl = realloc(b->len, (size_t)cap * sizeof *nl);
        if (!nl) return -1;
        b->len = nl, b->rowcap = cap;
    }
    for (int k = 0; k < fields->n; k++)
        if (strs_add(&b->cells, fields->s[k], strlen(fields->s[k]))) return -1;
    b->len[b->nrows++] = fields->n;
    if (fields->n > b->ncol) b->ncol = fields->n;
    return 0;
}

/* The series and columns of a block, from its header (or col1..colN), merged into the union. */
static int block_columns(table *t, block *b)
{
    const char *h = b->header ? b->header : "";
    const char *colon = strstr(h, ": ");
    b->series = colon ? strndup(h, (size_t)(colon - h)) : strdup("");
    strs words = {0};
    int rc = !b->series || name_words(colon ? colon + 2 : h, &words);
    const int named = !rc && words.n == b->ncol;
    if (!rc && !(b->col = malloc((size_t)(b->ncol ? b->ncol : 1) * sizeof *b->col))) rc = -1;
    for (int k = 0; !rc && k < b->ncol; k++) {
        char generic[32];
        snprintf(generic, sizeof generic, "col%d", k + 1);
        const char *name = named ? words.s[k] : generic;
        int j = strs_find(&t->names, name);
        if (j < 0) {
            rc = strs_add(&t->names, name, strlen(name));
            j = t->names.n - 1;
        }
        b->col[k] = j;
    }
    strs_free(&words);
    return rc ? -1 : 0;
}

static int read_table(FILE *in, table *t, char *err, size_t errlen)
{
    char *line = NULL, *header = NULL;
    size_t cap = 0;
    int blanks = 0, rc = 0;
    block *cur = NULL;
    strs fields = {0};
    while (!rc && getline(&line, &cap, in) >= 0) {
        line[strcspn(line, "\r\n")] = '\0';
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) {
            blanks++;
            continue;
        }
        if (blanks >= 2) { /* a new gnuplot index */
            cur = NULL;
            free(header);
            header = NULL;
        }
        blanks = 0;
        if (*p == '#') {
            if (!cur && !header) {
                p++;
                while (*p == ' ') p++;
                if (!(header = strdup(p))) rc = -1;
            }
            continue;
        }
        if (data_fields(p, &fields) || (!cur && !(cur = new_block(t, header))) || add_row(cur, &fields)) rc = -1;
    }
    for (int i = 0; !rc && i < t->n; i++) rc = block_columns(t, &t->b[i]);
    if (!rc && ferror(in)) {
        snprintf(err, errlen, "read error: %s", strerror(errno));
        rc = -1;
    } else if (rc) {
        snprintf(err, errlen, "out of memory");
    }
    free(line);
    free(header);
    strs_free(&fields);
    return rc;
}

static void write_csv(FILE *f, const table *t)
{
    fputs("index,series", f);
    for (int j = 0; j < t->names.n; j++) {
        fputc(',', f);
        qp_csv_str(f, t->names.s[j]);
    }
    fputc('\n', f);
    const char **row = calloc((size_t)(t->names.n ? t->names.n : 1), sizeof *row);
    if (!row) return; /* the caller sees the short file as a write error below */
    for (int i = 0; i < t->n; i++) {
        const block *b = &t->b[i];
        for (int r = 0, off = 0; r < b->nrows; off += b->len[r++]) {
            for (int j = 0; j < t->names.n; j++) row[j] = "";
            for (int k = 0; k < b->len[r]; k++) row[b->col[k]] = b->cells.s[off + k];
            fprintf(f, "%d,", i);
            qp_csv_str(f, b->series);
            for (int j = 0; j < t->names.n; j++) {
                fputc(',', f);
                qp_csv_str(f, row[j]);
            }
            fputc('\n', f);
        }
    }
    free(row);
}

int qp_figcsv_write(const char *datafile, const char *csv, char *err, size_t errlen)
{
    FILE *in = fopen(datafile, "r");
    if (!in) {
        snprintf(err, errlen, "%s: %s", datafile, strerror(errno));
        return -1;
    }
    table t = {0};
    char why[256];
    const int rc = read_table(in, &t, why, sizeof why);
    fclose(in);
    if (rc) {
        snprintf(err, errlen, "%s: %s", datafile, why);
        table_free(&t);
        return -1;
    }
    char tmp[4200];
    const char *slash = strrchr(csv, '/');
    snprintf(tmp, sizeof tmp, "%.*s.%s.qplot-%ld.tmp", slash ? (int)(slash - csv + 1) : 0, csv, slash ? slash + 1 : csv,
             (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        table_free(&t);
        return -1;
    }
    write_csv(f, &t);
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    table_free(&t);
    if (bad || rename(tmp, csv) != 0) {
        snprintf(err, errlen, "%s: cannot write (%s)", csv, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
