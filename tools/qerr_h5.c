/* qerr_h5.c — qerr --h5: the report as HDF5 tables (qp_h5table.h).
 *
 * /qerr holds one row per printed row, with every column of the column table
 * (reals as float64, Inf kept, NaN where not applicable); /qerr_summary, with
 * --summary, one row per format. Attributes record how the run was made. */
#include <stdio.h>
#include <string.h>

#include "qerr.h"
#include "qp_h5table.h"
#include "qp_tensor_file.h"
#include "qp_version.h"


static size_t str_width(const qerr_rows *rows, const qerr_col *c)
{
    size_t w = 1;
    for (size_t i = 0; i < rows->n; i++) {
        const size_t k = strlen(c->str(&rows->r[i]));
        if (k > w) w = k;
    }
    return w;
}

static int write_rows(hid_t f, const qerr_rows *rows, const qerr_opts *o, char *err, size_t errlen)
{
    qp_h5col cols[64];
    qp_h5cell cell[64];
    for (int c = 0; c < qerr_ncols; c++) {
        const qerr_col *q = &qerr_cols[c];
        cols[c].name = q->name;
        cols[c].type = q->kind == QERR_STR ? QP_H5COL_STR : q->kind == QERR_INT ? QP_H5COL_I64 : QP_H5COL_F64;
        cols[c].width = q->kind == QERR_STR ? str_width(rows, q) : 0;
    }
    qp_h5table *t = qp_h5table_create(f, "/qerr", cols, qerr_ncols, 0, err, errlen);
    if (!t) return -1;
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    char tool[64];
    snprintf(tool, sizeof tool, "qerr %s", qp_version());
    if (qp_h5table_set_attr(t, "tool", tool, err, errlen) ||
        qp_h5table_set_attr(t, "command", o->command, err, errlen) ||
        qp_h5table_set_attr(t, "seed", seed, err, errlen) ||
        qp_h5table_set_attr(t, "note", "snr_db is +inf for an exact quantization; block_scale_* are NaN "
                            "for formats without block scales", err, errlen))
        goto fail;
    for (size_t i = 0; i < rows->n; i++) {
        for (int c = 0; c < qerr_ncols; c++) {
            const qerr_col *q = &qerr_cols[c];
            if (q->kind == QERR_STR) cell[c].str = q->str(&rows->r[i]);
            else if (q->kind == QERR_INT) cell[c].i64 = q->i64(&rows->r[i]);
            else cell[c].f64 = q->f64(&rows->r[i]);
        }
        if (qp_h5table_append(t, cell, err, errlen)) goto fail;
    }
    return qp_h5table_close(t, err, errlen);
fail:;
    char ignored[QP_ERR_LEN]; /* the first message is the one to report */
    qp_h5table_close(t, ignored, sizeof ignored);
    return -1;
}

static int write_summary(hid_t f, const qerr_summary *s, int n, char *err, size_t errlen)
{
    size_t wf = 1, wt = 1, wfile = 1;
    for (int i = 0; i < n; i++) {
        if (strlen(s[i].var->name) > wf) wf = strlen(s[i].var->name);
        if (s[i].worst_tensor && strlen(s[i].worst_tensor) > wt) wt = strlen(s[i].worst_tensor);
        if (s[i].worst_file && strlen(s[i].worst_file) > wfile) wfile = strlen(s[i].worst_file);
    }
    const qp_h5col cols[] = {
        {"format", QP_H5COL_STR, wf},         {"tensors", QP_H5COL_I64, 0},
        {"exact", QP_H5COL_I64, 0},           {"mean_rel_l2", QP_H5COL_F64, 0},
        {"mean_snr_db", QP_H5COL_F64, 0},     {"mean_sat_frac", QP_H5COL_F64, 0},
        {"mean_zero_frac", QP_H5COL_F64, 0},  {"worst_file", QP_H5COL_STR, wfile},
        {"worst_tensor", QP_H5COL_STR, wt},   {"worst_rel_l2", QP_H5COL_F64, 0},
    };
    qp_h5table *t = qp_h5table_create(f, "/qerr_summary", cols, 10, 0, err, errlen);
    if (!t) return -1;
    for (int i = 0; i < n; i++) {
        qp_h5cell c[10];
        c[0].str = s[i].var->name;
        c[1].i64 = s[i].tensors;
        c[2].i64 = s[i].exact;
        c[3].f64 = s[i].mean_rel_l2;
        c[4].f64 = s[i].mean_snr_db;
        c[5].f64 = s[i].mean_sat_frac;
        c[6].f64 = s[i].mean_zero_frac;
        c[7].str = s[i].worst_file ? s[i].worst_file : "";
        c[8].str = s[i].worst_tensor ? s[i].worst_tensor : "";
        c[9].f64 = s[i].worst_rel_l2;
        if (qp_h5table_append(t, c, err, errlen)) {
            char ignored[QP_ERR_LEN];
            qp_h5table_close(t, ignored, sizeof ignored);
            return -1;
        }
    }
    return qp_h5table_close(t, err, errlen);
}

int qerr_write_h5(const char *path, const qerr_rows *rows, const qerr_summary *s, int n,
                  const qerr_opts *o, char *err, size_t errlen)
{
    char lerr[QP_ERR_LEN] = "", cerr[QP_ERR_LEN] = "";
    const hid_t f = qp_h5file_create(path, err, errlen);
    if (f < 0) return -1;
    int rc = write_rows(f, rows, o, lerr, sizeof lerr);
    if (rc == 0 && s) rc = write_summary(f, s, n, lerr, sizeof lerr);
    if (qp_h5file_close(f, cerr, sizeof cerr) && rc == 0) {
        memcpy(lerr, cerr, sizeof lerr);
        rc = -1;
    }
    if (rc) snprintf(err, errlen, "%s: %s", path, lerr);
    return rc;
}
