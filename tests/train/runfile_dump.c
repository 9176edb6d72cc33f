/* runfile_dump.c — every column of a run file as the one run-file reader
 * (train/runfile/qp_runfile.h) reads it, for test_runfile_reader.py to hold against
 * h5py's reading of the same file.
 *
 *   runfile_dump RUNFILE
 *
 * For each dataset of the schema (qp_runsets) and each of its columns, by
 * name: "absent SET COLUMN" when qp_runfile_has says the file lacks it, else
 * "column SET COLUMN ROWS" and a line per row: an integer, a float as %a
 * (exact), or a string as hex bytes ("-" when empty). Each column is read
 * twice, alone (qp_runfile_read_i64/u64/f64/str) and with every other
 * present column of its dataset into one struct (qp_runfile_read_rows, one
 * pass over a table); the two must agree byte for byte. A table's column
 * reads as many rows as the table holds, a series' as its dataset holds.
 * Exit 0; 3 for a checkpoint; 2 with the reader's one line otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_runfile.h"

static void die(const char *err)
{
    fprintf(stderr, "runfile_dump: %s\n", err);
    exit(2);
}

/* bytes a column takes in the dump's rows: 8, or the string's width and its NUL */
static size_t width(const qp_runcol *c)
{
    return c->kind == QP_RC_STR ? (size_t)c->width + 1 : 8;
}

static void print_value(const qp_runcol *c, const char *v)
{
    switch (c->kind) {
    case QP_RC_I64: {
        int64_t x;
        memcpy(&x, v, 8);
        printf("%lld\n", (long long)x);
        break;
    }
    case QP_RC_U64: {
        uint64_t x;
        memcpy(&x, v, 8);
        printf("%llu\n", (unsigned long long)x);
        break;
    }
    case QP_RC_F64: {
        double x;
        memcpy(&x, v, 8);
        printf("%a\n", x);
        break;
    }
    case QP_RC_STR:
        if (!*v) fputs("-", stdout);
        for (const unsigned char *p = (const unsigned char *)v; *p; p++) printf("%02x", *p);
        putchar('\n');
        break;
    }
}

static void read_alone(const qp_runfile *rf, qp_runset_id s, const qp_runcol *c, size_t n, char *out, char *err,
                       size_t errlen)
{
    int rc = -1;
    switch (c->kind) {
    case QP_RC_I64: rc = qp_runfile_read_i64(rf, s, c->name, 0, n, (int64_t *)(void *)out, err, errlen); break;
    case QP_RC_U64: rc = qp_runfile_read_u64(rf, s, c->name, 0, n, (uint64_t *)(void *)out, err, errlen); break;
    case QP_RC_F64: rc = qp_runfile_read_f64(rf, s, c->name, 0, n, (double *)(void *)out, err, errlen); break;
    case QP_RC_STR: rc = qp_runfile_read_str(rf, s, c->name, 0, n, out, width(c), err, errlen); break;
    }
    if (rc) die(err);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: runfile_dump RUNFILE\n");
        return 2;
    }
    char err[1024];
    qp_runfile *rf;
    const int orc = qp_runfile_open(&rf, argv[1], "runfile_dump", err, sizeof err);
    if (orc == QP_RUNFILE_CKPT) {
        printf("checkpoint\n");
        return 3;
    }
    if (orc) die(err);
    printf("version %d\n", qp_runfile_version(rf));
    for (int s = 0; s < QP_RS_COUNT; s++) {
        const qp_runset *set = &qp_runsets[s];
        /* the row struct of every present column, and the shortest length */
        qp_runbind bind[64];
        const qp_runcol *cols[64];
        int nb = 0;
        size_t rowsize = 0;
        long long rows = -1;
        for (int c = 0; c < set->ncols && nb < 64; c++) {
            const qp_runcol *col = &set->cols[c];
            if (!qp_runfile_has(rf, (qp_runset_id)s, col->name)) {
                printf("absent %s %s\n", set->name, col->name);
                continue;
            }
            const long long n = qp_runfile_rows(rf, (qp_runset_id)s, col->name, err, sizeof err);
            if (n < 0) die(err);
            if (rows < 0 || n < rows) rows = n;
            cols[nb] = col;
            bind[nb] = (qp_runbind){col->name, rowsize, width(col)};
            rowsize += width(col);
            nb++;
        }
        if (!nb) continue;
        char *all = calloc(rows ? (size_t)rows : 1, rowsize);
        if (!all) die("out of memory");
        if (qp_runfile_read_rows(rf, (qp_runset_id)s, bind, nb, rowsize, 0, (size_t)rows, all, err, sizeof err))
            die(err);
        for (int b = 0; b < nb; b++) {
            const qp_runcol *col = cols[b];
            const long long n = qp_runfile_rows(rf, (qp_runset_id)s, col->name, err, sizeof err);
            const size_t w = width(col);
            char *one = calloc(n ? (size_t)n : 1, w);
            if (!one) die("out of memory");
            read_alone(rf, (qp_runset_id)s, col, (size_t)n, one, err, sizeof err);
            for (long long r = 0; r < rows; r++)
                if (memcmp(one + (size_t)r * w, all + (size_t)r * rowsize + bind[b].offset, w)) {
                    fprintf(stderr, "runfile_dump: %s %s row %lld: read alone and read in rows differ\n", set->name,
                            col->name, r);
                    return 1;
                }
            printf("column %s %s %lld\n", set->name, col->name, n);
            for (long long r = 0; r < n; r++) print_value(col, one + (size_t)r * w);
            free(one);
        }
        free(all);
    }
    qp_runfile_close(rf);
    return 0;
}
