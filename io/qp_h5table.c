/* qp_h5table.c — append-only compound tables (see qp_h5table.h). */
#include "qp_h5table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct qp_h5table {
    hid_t ds, mtype;
    int ncols;
    qp_h5col_type *type;
    size_t *width, *off;
    char **name;
    size_t row_size;
    size_t chunk;
    uint8_t *buf;         /* chunk rows */
    size_t pending;       /* rows in buf */
    int64_t written;      /* rows in the dataset */
};

static void quiet(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

hid_t qp_h5file_create(const char *path, char *err, size_t errlen)
{
    quiet();
    const hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) snprintf(err, errlen, "%s: cannot create HDF5 file", path);
    return f;
}

int qp_h5file_close(hid_t file, char *err, size_t errlen)
{
    quiet();
    if (H5Fclose(file) < 0) {
        snprintf(err, errlen, "cannot close HDF5 file (disk full?)");
        return -1;
    }
    return 0;
}

int qp_h5_set_attr_str(hid_t obj, const char *name, const char *value, char *err, size_t errlen)
{
    quiet();
    int rc = -1;
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR), a = -1;
    if (t < 0 || sp < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0)
        goto done;
    if (H5Aexists(obj, name) > 0 && H5Adelete(obj, name) < 0) goto done;
    a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, t, &value) < 0) goto done;
    rc = 0;
done:
    if (rc) snprintf(err, errlen, "cannot write HDF5 attribute '%s'", name);
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    return rc;
}

static void table_free(qp_h5table *t)
{
    if (t->name)
        for (int i = 0; i < t->ncols; i++) free(t->name[i]);
    free(t->name);
    free(t->type);
    free(t->width);
    free(t->off);
    free(t->buf);
    free(t);
}

qp_h5table *qp_h5table_create(hid_t loc, const char *path, const qp_h5col *cols, int ncols,
                              size_t chunk_rows, char *err, size_t errlen)
{
    quiet();
    if (ncols < 1) {
        snprintf(err, errlen, "table '%s': no columns", path);
        return NULL;
    }
    qp_h5table *t = calloc(1, sizeof *t);
    if (!t) goto oom;
    t->ds = t->mtype = -1;
    t->ncols = ncols;
    t->chunk = chunk_rows ? chunk_rows : 1024;
    t->type = calloc((size_t)ncols, sizeof *t->type);
    t->width = calloc((size_t)ncols, sizeof *t->width);
    t->off = calloc((size_t)ncols, sizeof *t->off);
    t->name = calloc((size_t)ncols, sizeof *t->name);
    if (!t->type || !t->width || !t->off || !t->name) goto oom;

    /* Native layout in column order: numbers 8-byte aligned, strings unaligned. */
    size_t off = 0;
    for (int i = 0; i < ncols; i++) {
        if (cols[i].type == QP_H5COL_STR && cols[i].width < 1) {
            snprintf(err, errlen, "table '%s': string column '%s' needs a width", path, cols[i].name);
            table_free(t);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(cols[i].name, cols[j].name)) {
                snprintf(err, errlen, "table '%s': duplicate column '%s'", path, cols[i].name);
                table_free(t);
                return NULL;
            }
        t->type[i] = cols[i].type;
        t->width[i] = cols[i].type == QP_H5COL_STR ? cols[i].width : 8;
        if (cols[i].type != QP_H5COL_STR) off = (off + 7) & ~(size_t)7;
        t->off[i] = off;
        off += t->width[i];
        if (!(t->name[i] = strdup(cols[i].name))) goto oom;
    }
    t->row_size = (off + 7) & ~(size_t)7;
    if (!(t->buf = calloc(t->chunk, t->row_size))) goto oom;

    int ok = (t->mtype = H5Tcreate(H5T_COMPOUND, t->row_size)) >= 0;
    for (int i = 0; ok && i < ncols; i++) {
        hid_t ct;
        if (t->type[i] == QP_H5COL_STR) {
            ct = H5Tcopy(H5T_C_S1);
            ok = ct >= 0 && H5Tset_size(ct, t->width[i]) >= 0 && H5Tset_strpad(ct, H5T_STR_NULLPAD) >= 0;
        } else {
            ct = H5Tcopy(t->type[i] == QP_H5COL_F64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64);
            ok = ct >= 0;
        }
        ok = ok && H5Tinsert(t->mtype, t->name[i], t->off[i], ct) >= 0;
        if (ct >= 0) H5Tclose(ct);
    }
    hid_t ftype = -1, space = -1, dcpl = -1, lcpl = -1;
    const hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = t->chunk;
    ok = ok && (ftype = H5Tcopy(t->mtype)) >= 0 && H5Tpack(ftype) >= 0;
    ok = ok && (space = H5Screate_simple(1, &zero, &unlimited)) >= 0;
    ok = ok && (dcpl = H5Pcreate(H5P_DATASET_CREATE)) >= 0 && H5Pset_chunk(dcpl, 1, &chunk) >= 0;
    ok = ok && (lcpl = H5Pcreate(H5P_LINK_CREATE)) >= 0 && H5Pset_create_intermediate_group(lcpl, 1) >= 0;
    ok = ok && (t->ds = H5Dcreate2(loc, path, ftype, space, lcpl, dcpl, H5P_DEFAULT)) >= 0;
    if (lcpl >= 0) H5Pclose(lcpl);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    if (ftype >= 0) H5Tclose(ftype);
    if (!ok) {
        snprintf(err, errlen, "table '%s': cannot create dataset (exists already?)", path);
        if (t->mtype >= 0) H5Tclose(t->mtype);
        table_free(t);
        return NULL;
    }
    return t;
oom:
    snprintf(err, errlen, "table '%s': out of memory", path);
    if (t) table_free(t);
    return NULL;
}

int qp_h5table_set_attr(qp_h5table *t, const char *name, const char *value, char *err, size_t errlen)
{
    return qp_h5_set_attr_str(t->ds, name, value, err, errlen);
}

static int write_pending(qp_h5table *t, char *err, size_t errlen)
{
    if (t->pending == 0) return 0;
    const hsize_t start = (hsize_t)t->written, count = t->pending, total = start + count;
    int ok = H5Dset_extent(t->ds, &total) >= 0;
    hid_t fs = -1, ms = -1;
    ok = ok && (fs = H5Dget_space(t->ds)) >= 0;
    ok = ok && H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0;
    ok = ok && (ms = H5Screate_simple(1, &count, NULL)) >= 0;
    ok = ok && H5Dwrite(t->ds, t->mtype, ms, fs, H5P_DEFAULT, t->buf) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (!ok) {
        snprintf(err, errlen, "cannot write %zu table rows (disk full?)", t->pending);
        return -1;
    }
    t->written += (int64_t)t->pending;
    t->pending = 0;
    memset(t->buf, 0, t->chunk * t->row_size); /* string padding must be NULs */
    return 0;
}

int qp_h5table_append(qp_h5table *t, const qp_h5cell *row, char *err, size_t errlen)
{
    quiet();
    /* Check every cell before touching the buffer, so a bad row leaves no trace. */
    for (int i = 0; i < t->ncols; i++) {
        if (t->type[i] != QP_H5COL_STR) continue;
        const size_t k = row[i].str ? strlen(row[i].str) : 0;
        if (k > t->width[i]) {
            snprintf(err, errlen, "column '%s': string of %zu bytes exceeds the width %zu", t->name[i], k,
                     t->width[i]);
            return -1;
        }
    }
    /* A full buffer here means an earlier write failed: retry it, never
     * write past the buffer. */
    if (t->pending == t->chunk && write_pending(t, err, errlen)) return -1;
    uint8_t *r = t->buf + t->pending * t->row_size;
    for (int i = 0; i < t->ncols; i++) {
        if (t->type[i] == QP_H5COL_F64) memcpy(r + t->off[i], &row[i].f64, 8);
        else if (t->type[i] == QP_H5COL_I64) memcpy(r + t->off[i], &row[i].i64, 8);
        else if (row[i].str) memcpy(r + t->off[i], row[i].str, strlen(row[i].str));
    }
    t->pending++;
    return t->pending == t->chunk ? write_pending(t, err, errlen) : 0;
}

int qp_h5table_flush(qp_h5table *t, char *err, size_t errlen)
{
    quiet();
    if (write_pending(t, err, errlen)) return -1;
    if (H5Fflush(t->ds, H5F_SCOPE_LOCAL) < 0) {
        snprintf(err, errlen, "cannot flush HDF5 file");
        return -1;
    }
    return 0;
}

int64_t qp_h5table_rows(const qp_h5table *t)
{
    return t->written + (int64_t)t->pending;
}

int qp_h5table_close(qp_h5table *t, char *err, size_t errlen)
{
    quiet();
    int rc = write_pending(t, err, errlen);
    if (H5Dclose(t->ds) < 0 && rc == 0) {
        snprintf(err, errlen, "cannot close table");
        rc = -1;
    }
    H5Tclose(t->mtype);
    table_free(t);
    return rc;
}
