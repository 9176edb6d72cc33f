/* qp_runfile.c — read a run file's columns by their schema names (see
 * qp_runfile.h). Dataset paths come from qp_runsets (qp_runcol_dataset);
 * a table's column is read through a one-member compound memory type, which
 * HDF5 fills by member name from the file's rows. */
#include "qp_runfile.h"

#include "qp_ckpt.h" /* QP_CKPT_MARKER */
#include "qp_h5err.h"
#include "qp_h5open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

struct qp_runfile {
    char *path;
    hid_t file;
    int version;
    qp_runattr *attrs; /* sorted by key */
    int nattrs, cap, oom;
};

static char *dup_str(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* H5Lexists on "a/b" fails (rather than returning 0) when "a" is missing,
 * so check every component. */
static int has_link(hid_t f, const char *path)
{
    char buf[256];
    const size_t n = strlen(path);
    if (n >= sizeof buf) return 0;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        const char c = buf[i];
        buf[i] = '\0';
        const htri_t e = H5Lexists(f, buf, H5P_DEFAULT);
        buf[i] = c;
        if (e <= 0) return 0;
    }
    return 1;
}

/* ---- root attributes ------------------------------------------------------ */

/* One value as text; NULL for what is not configuration (compound, array,
 * empty attributes). */
static char *attr_text(hid_t a)
{
    const hid_t t = H5Aget_type(a);
    if (t < 0) return NULL;
    char *out = NULL;
    H5T_class_t c = H5Tget_class(t);
    /* one value only: H5Aread writes every element of an array attribute */
    const hid_t asp = H5Aget_space(a);
    const int one = asp >= 0 && H5Sget_simple_extent_type(asp) != H5S_NULL && H5Sget_simple_extent_npoints(asp) == 1;
    if (asp >= 0) H5Sclose(asp);
    if (!one) c = H5T_NO_CLASS;
    if (c == H5T_STRING && H5Tis_variable_str(t) > 0) {
        const hid_t m = H5Tcopy(H5T_C_S1);
        H5Tset_size(m, H5T_VARIABLE);
        H5Tset_cset(m, H5Tget_cset(t));
        char *s = NULL;
        if (H5Aread(a, m, &s) >= 0 && s) {
            out = dup_str(s);
            H5free_memory(s);
        }
        H5Tclose(m);
    } else if (c == H5T_STRING) {
        const size_t n = H5Tget_size(t);
        const hid_t m = H5Tcopy(H5T_C_S1);
        H5Tset_size(m, n + 1);
        H5Tset_strpad(m, H5T_STR_NULLTERM);
        out = calloc(n + 1, 1);
        if (out && H5Aread(a, m, out) < 0) {
            free(out);
            out = NULL;
        }
        H5Tclose(m);
    } else if (c == H5T_INTEGER || c == H5T_FLOAT) {
        char buf[64];
        if (c == H5T_INTEGER) {
            long long v;
            if (H5Aread(a, H5T_NATIVE_LLONG, &v) >= 0) snprintf(buf, sizeof buf, "%lld", v), out = dup_str(buf);
        } else {
            double v;
            if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0) snprintf(buf, sizeof buf, "%.17g", v), out = dup_str(buf);
        }
    }
    H5Tclose(t);
    return out;
}

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *p)
{
    (void)info;
    qp_runfile *rf = p;
    const hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return 0;
    char *v = attr_text(a);
    H5Aclose(a);
    if (!v) return 0;
    if (rf->nattrs == rf->cap) {
        const int cap = rf->cap ? 2 * rf->cap : 32;
        qp_runattr *na = realloc(rf->attrs, (size_t)cap * sizeof *na);
        if (!na) {
            free(v);
            rf->oom = 1;
            return -1;
        }
        rf->attrs = na;
        rf->cap = cap;
    }
    char *k = dup_str(name);
    if (!k) {
        free(v);
        rf->oom = 1;
        return -1;
    }
    rf->attrs[rf->nattrs].key = k;
    rf->attrs[rf->nattrs].value = v;
    rf->nattrs++;
    return 0;
}

static int cmp_attr(const void *a, const void *b)
{
    return strcmp(((const qp_runattr *)a)->key, ((const qp_runattr *)b)->key);
}

const char *qp_runfile_attr(const qp_runfile *rf, const char *key)
{
    const qp_runattr k = {(char *)key, NULL};
    const qp_runattr *hit = rf->nattrs ? bsearch(&k, rf->attrs, (size_t)rf->nattrs, sizeof k, cmp_attr) : NULL;
    return hit ? hit->value : NULL;
}

int qp_runfile_nattrs(const qp_runfile *rf) { return rf->nattrs; }
const qp_runattr *qp_runfile_attrs(const qp_runfile *rf) { return rf->attrs; }
const char *qp_runfile_path(const qp_runfile *rf) { return rf->path; }
int qp_runfile_version(const qp_runfile *rf) { return rf->version; }

qp_runattr *qp_runfile_take_attrs(qp_runfile *rf, int *n)
{
    qp_runattr *a = rf->attrs;
    *n = rf->nattrs;
    rf->attrs = NULL;
    rf->nattrs = rf->cap = 0;
    return a;
}

/* ---- open and close ------------------------------------------------------- */

void qp_runfile_close(qp_runfile *rf)
{
    if (!rf) return;
    if (rf->file >= 0) H5Fclose(rf->file);
    for (int i = 0; i < rf->nattrs; i++) {
        free(rf->attrs[i].key);
        free(rf->attrs[i].value);
    }
    free(rf->attrs);
    free(rf->path);
    free(rf);
}

int qp_runfile_open(qp_runfile **out, const char *path, const char *tool, char *err, size_t errlen)
{
    *out = NULL;
    qp_h5_quiet();
    if (qp_h5_check_file(path, err, errlen)) return -1;
    qp_runfile *rf = calloc(1, sizeof *rf);
    if (rf) rf->path = dup_str(path);
    if (!rf || !rf->path) {
        snprintf(err, errlen, "%s: out of memory", path);
        free(rf);
        return -1;
    }
    rf->file = (hid_t)qp_h5_open_read(path, 1);
    if (rf->file < 0) {
        snprintf(err, errlen, "%s: cannot open the HDF5 file (damaged, or being created right now)", path);
        qp_runfile_close(rf);
        return -1;
    }
    hsize_t idx = 0;
    H5Aiterate2(rf->file, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_cb, rf);
    if (rf->oom) {
        snprintf(err, errlen, "%s: out of memory reading attributes", path);
        qp_runfile_close(rf);
        return -1;
    }
    if (rf->nattrs) qsort(rf->attrs, (size_t)rf->nattrs, sizeof *rf->attrs, cmp_attr);
    const char *train = qp_runsets[QP_RS_TRAIN].path;
    int rc = -1;
    if (!has_link(rf->file, train) && H5Aexists(rf->file, QP_CKPT_MARKER) > 0) {
        snprintf(err, errlen, "%s: a qtrain checkpoint, not a run file", path);
        rc = QP_RUNFILE_CKPT;
    } else if (qp_runschema_check_version(qp_runfile_attr(rf, QP_RUNFILE_SCHEMA_ATTR), path, tool, &rf->version, err,
                                          errlen)) {
        /* err says why: not a version, or newer than this build reads */
    } else if (!has_link(rf->file, train)) {
        snprintf(err, errlen, "%s: not a qprec run file (no %s)", path, train);
    } else {
        *out = rf;
        return 0;
    }
    qp_runfile_close(rf);
    return rc;
}

/* ---- columns -------------------------------------------------------------- */

int qp_runfile_has(const qp_runfile *rf, qp_runset_id set, const char *col)
{
    if ((unsigned)set >= QP_RS_COUNT) return 0;
    const qp_runset *s = &qp_runsets[set];
    if (!col) return has_link(rf->file, s->path);
    const qp_runcol *c = qp_runcol_find(set, col);
    if (!c || c->since > rf->version) return 0;
    char ds[160];
    if (!has_link(rf->file, qp_runcol_dataset(set, col, ds, sizeof ds))) return 0;
    if (!s->table) return 1;
    const hid_t d = H5Dopen2(rf->file, ds, H5P_DEFAULT);
    const hid_t t = d >= 0 ? H5Dget_type(d) : -1;
    const int has = t >= 0 && H5Tget_class(t) == H5T_COMPOUND && H5Tget_member_index(t, col) >= 0;
    if (t >= 0) H5Tclose(t);
    if (d >= 0) H5Dclose(d);
    return has;
}

long long qp_runfile_rows(const qp_runfile *rf, qp_runset_id set, const char *col, char *err, size_t errlen)
{
    char ds[160];
    if ((unsigned)set >= QP_RS_COUNT || !qp_runcol_find(set, col)) {
        snprintf(err, errlen, "%s: the run file schema has no column '%s' there", rf->path, col ? col : "(null)");
        return -1;
    }
    qp_runcol_dataset(set, col, ds, sizeof ds);
    if (!has_link(rf->file, ds)) {
        snprintf(err, errlen, "%s: not a qprec run file (no %s)", rf->path, ds);
        return -1;
    }
    long long rows = -1;
    const hid_t d = H5Dopen2(rf->file, ds, H5P_DEFAULT);
    const hid_t sp = d >= 0 ? H5Dget_space(d) : -1, ft = d >= 0 ? H5Dget_type(d) : -1;
    hsize_t n = 0;
    if (sp < 0 || ft < 0 || H5Sget_simple_extent_ndims(sp) != 1) {
        snprintf(err, errlen, "%s: not a qprec run file (%s is not a 1-D dataset)", rf->path, ds);
    } else if (H5Sget_simple_extent_dims(sp, &n, NULL) < 0 ||
               !qp_h5_data_present(d, (unsigned long long)n, H5Tget_size(ft), 1ull << 26)) {
        snprintf(err, errlen, "%s: %s declares %llu rows but the file does not hold them", rf->path, ds,
                 (unsigned long long)n);
    } else {
        rows = (long long)n;
    }
    if (ft >= 0) H5Tclose(ft);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    return rows;
}

/* Rows [first, first+n) of dataset ds into out as memory type m. */
static int read_ds(const qp_runfile *rf, const char *ds, hid_t m, size_t first, size_t n, void *out)
{
    const hid_t d = H5Dopen2(rf->file, ds, H5P_DEFAULT);
    const hid_t fs = d >= 0 ? H5Dget_space(d) : -1;
    const hsize_t h0 = first, hn = n;
    const hid_t ms = H5Screate_simple(1, &hn, NULL);
    const int ok = m >= 0 && fs >= 0 && ms >= 0 && H5Sget_simple_extent_ndims(fs) == 1 &&
                   H5Sselect_hyperslab(fs, H5S_SELECT_SET, &h0, NULL, &hn, NULL) >= 0 &&
                   H5Sselect_valid(fs) > 0 && H5Dread(d, m, ms, fs, H5P_DEFAULT, out) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (d >= 0) H5Dclose(d);
    return ok ? 0 : -1;
}

/* Rows [first, first+n) of the column into out as mtype (el bytes each). */
static int read_col(const qp_runfile *rf, qp_runset_id set, const char *col, int string, hid_t mtype, size_t el,
                    size_t first, size_t n, void *out, char *err, size_t errlen)
{
    const qp_runcol *c = (unsigned)set < QP_RS_COUNT ? qp_runcol_find(set, col) : NULL;
    if (!c || (c->kind == QP_RC_STR) != string) {
        snprintf(err, errlen, "%s: the run file schema has no %s column '%s' there", rf->path,
                 string ? "string" : "numeric", col ? col : "(null)");
        return -1;
    }
    char ds[160];
    qp_runcol_dataset(set, col, ds, sizeof ds);
    if (n == 0) return 0;
    hid_t m = mtype;
    if (qp_runsets[set].table) { /* the one member, by name */
        m = H5Tcreate(H5T_COMPOUND, el);
        if (m >= 0 && H5Tinsert(m, col, 0, mtype) < 0) H5Tclose(m), m = -1;
    }
    const int ok = read_ds(rf, ds, m, first, n, out) == 0;
    if (m >= 0 && m != mtype) H5Tclose(m);
    if (!ok) {
        snprintf(err, errlen, "%s: cannot read %s of %s (wrong type or damaged file)", rf->path, col, ds);
        return -1;
    }
    return 0;
}

int qp_runfile_read_i64(const qp_runfile *rf, qp_runset_id set, const char *col, size_t first, size_t n,
                        int64_t *out, char *err, size_t errlen)
{
    return read_col(rf, set, col, 0, H5T_NATIVE_INT64, sizeof *out, first, n, out, err, errlen);
}

int qp_runfile_read_u64(const qp_runfile *rf, qp_runset_id set, const char *col, size_t first, size_t n,
                        uint64_t *out, char *err, size_t errlen)
{
    return read_col(rf, set, col, 0, H5T_NATIVE_UINT64, sizeof *out, first, n, out, err, errlen);
}

int qp_runfile_read_f64(const qp_runfile *rf, qp_runset_id set, const char *col, size_t first, size_t n,
                        double *out, char *err, size_t errlen)
{
    return read_col(rf, set, col, 0, H5T_NATIVE_DOUBLE, sizeof *out, first, n, out, err, errlen);
}

int qp_runfile_read_str(const qp_runfile *rf, qp_runset_id set, const char *col, size_t first, size_t n,
                        char *out, size_t size, char *err, size_t errlen)
{
    if (size < 1) {
        snprintf(err, errlen, "%s: a string of %zu bytes holds nothing", rf->path, size);
        return -1;
    }
    /* NUL-terminated, size bytes: HDF5 converts the file's NUL-padded width into it, cutting what does not fit */
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    const int rc = read_col(rf, set, col, 1, t, size, first, n, out, err, errlen);
    H5Tclose(t);
    return rc;
}

/* The memory type of a bound column: the schema's kind, a string of b->size bytes. */
static hid_t bind_type(const qp_runcol *c, const qp_runbind *b)
{
    switch (c->kind) {
    case QP_RC_I64: return H5Tcopy(H5T_NATIVE_INT64);
    case QP_RC_U64: return H5Tcopy(H5T_NATIVE_UINT64);
    case QP_RC_F64: return H5Tcopy(H5T_NATIVE_DOUBLE);
    case QP_RC_STR: {
        const hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, b->size);
        H5Tset_strpad(t, H5T_STR_NULLTERM);
        return t;
    }
    }
    return -1;
}

static size_t bind_size(const qp_runcol *c, const qp_runbind *b)
{
    return c->kind == QP_RC_STR ? b->size : 8;
}

int qp_runfile_read_rows(const qp_runfile *rf, qp_runset_id set, const qp_runbind *bind, int nbind, size_t rowsize,
                         size_t first, size_t n, void *rows, char *err, size_t errlen)
{
    if ((unsigned)set >= QP_RS_COUNT) {
        snprintf(err, errlen, "%s: no such run file dataset", rf->path);
        return -1;
    }
    for (int i = 0; i < nbind; i++) {
        const qp_runcol *c = qp_runcol_find(set, bind[i].column);
        if (!c || (c->kind == QP_RC_STR && bind[i].size < 1) || bind[i].offset + bind_size(c, &bind[i]) > rowsize) {
            snprintf(err, errlen, "%s: cannot bind column '%s' of %s", rf->path, bind[i].column ? bind[i].column : "",
                     qp_runsets[set].path);
            return -1;
        }
    }
    if (n == 0 || nbind == 0) return 0;
    char ds[160];
    if (qp_runsets[set].table) { /* one compound memory type: the bound members, by name, in one pass */
        const hid_t m = H5Tcreate(H5T_COMPOUND, rowsize);
        int ok = m >= 0;
        for (int i = 0; ok && i < nbind; i++) {
            const hid_t t = bind_type(qp_runcol_find(set, bind[i].column), &bind[i]);
            ok = t >= 0 && H5Tinsert(m, bind[i].column, bind[i].offset, t) >= 0;
            if (t >= 0) H5Tclose(t);
        }
        ok = ok && read_ds(rf, qp_runsets[set].path, m, first, n, rows) == 0;
        if (m >= 0) H5Tclose(m);
        if (!ok) {
            snprintf(err, errlen, "%s: cannot read %s (wrong type or damaged file)", rf->path, qp_runsets[set].path);
            return -1;
        }
        return 0;
    }
    /* a group of series: each column through a buffer, then into its place in the rows */
    char *tmp = NULL;
    size_t cap = 0;
    int rc = 0;
    for (int i = 0; !rc && i < nbind; i++) {
        const qp_runcol *c = qp_runcol_find(set, bind[i].column);
        const size_t el = bind_size(c, &bind[i]);
        if (el * n > cap) {
            char *t = realloc(tmp, el * n);
            if (!t) {
                snprintf(err, errlen, "%s: out of memory reading %s", rf->path, qp_runsets[set].path);
                rc = -1;
                break;
            }
            tmp = t, cap = el * n;
        }
        qp_runcol_dataset(set, c->name, ds, sizeof ds);
        const hid_t t = bind_type(c, &bind[i]);
        if (t < 0 || read_ds(rf, ds, t, first, n, tmp)) {
            snprintf(err, errlen, "%s: cannot read %s (wrong type or damaged file)", rf->path, ds);
            rc = -1;
        }
        if (t >= 0) H5Tclose(t);
        for (size_t r = 0; !rc && r < n; r++) memcpy((char *)rows + r * rowsize + bind[i].offset, tmp + r * el, el);
    }
    free(tmp);
    return rc;
}

int qp_runfile_read_table(const qp_runfile *rf, qp_runset_id set, const qp_runbind *bind, int nbind, size_t rowsize,
                          void **rows, size_t *n, char *err, size_t errlen)
{
    *rows = NULL;
    *n = 0;
    if (!qp_runfile_has(rf, set, NULL)) return 0;
    const long long m = qp_runfile_rows(rf, set, bind[0].column, err, errlen);
    if (m < 0) return -1;
    *rows = calloc(m ? (size_t)m : 1, rowsize);
    if (!*rows) {
        snprintf(err, errlen, "%s: out of memory reading %s", qp_runfile_path(rf), qp_runsets[set].path);
        return -1;
    }
    *n = (size_t)m;
    return qp_runfile_read_rows(rf, set, bind, nbind, rowsize, 0, (size_t)m, *rows, err, errlen);
}
