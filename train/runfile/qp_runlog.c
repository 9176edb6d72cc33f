/* qp_runlog.c — the HDF5 run file (see qp_runlog.h and docs/runfile.md).
 *
 * Every dataset is a 1-D chunked series with an unlimited extent. The four
 * tables are created by qp_h5table (io/), so their layout is the one every
 * qprec table has, and then reopened here like the 1-D series: qp_h5table
 * can neither reopen nor shrink a table, which resuming needs, and one
 * append path for new and resumed files means resumed runs write exactly
 * what fresh ones do.
 *
 * Concurrency: HDF5 1.10 gives up its own file lock once SWMR writing starts
 * (readers need that), so nothing would stop a second trainer from
 * truncating or "resuming" a file that is still being written. The writer
 * therefore holds an open-file-description lock (F_OFD_SETLK) on the run
 * file for as long as it is open; the kernel drops it when the process
 * dies, which is also what makes clearing a killed writer's "open for
 * writing" mark safe in qp_runlog_resume. */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include "qp_runlog.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "qp_h5err.h"

#include "qp_h5table.h"
#include "qp_runschema.h"
#include "qp_space.h"

typedef union {
    int64_t i;
    uint64_t u;
    double f;
    const char *s;
} cell;

/* The datasets come from the schema (qp_runschema.h): a table is one
 * series; a group (/train, /eval) is a series per column, named like it. */
#define MAXCOLS 32
#define MAXSERIES 64

typedef struct {
    char path[96];
    const qp_runcol *cols; /* a table's columns, or the one column of a 1-D series */
    int ncols, table;
    size_t chunk; /* rows per chunk, and per buffered write */
} spec;

static spec SPECS[MAXSERIES];
static int NSERIES;
static int FIRST[QP_RS_COUNT]; /* each dataset's first series; a group's first series holds the step */

static void build_specs(void)
{
    if (NSERIES) return;
    for (int d = 0; d < QP_RS_COUNT; d++) {
        const qp_runset *rs = &qp_runsets[d];
        FIRST[d] = NSERIES;
        for (int c = 0; c < (rs->table ? 1 : rs->ncols); c++) {
            spec *sp = &SPECS[NSERIES++];
            sp->table = rs->table;
            sp->chunk = (size_t)rs->chunk;
            sp->cols = rs->table ? rs->cols : &rs->cols[c];
            sp->ncols = rs->table ? rs->ncols : 1;
            if (rs->table) snprintf(sp->path, sizeof sp->path, "%s", rs->path);
            else snprintf(sp->path, sizeof sp->path, "%s/%s", rs->path, rs->cols[c].name);
        }
    }
}

static int set_series(int d) { return qp_runsets[d].table ? 1 : qp_runsets[d].ncols; }

static const char *const STATES[] = {"running", "done", "diverged", "stopped", "failed"};

typedef struct {
    const spec *sp;
    hid_t ds, mtype;          /* mtype: native layout of one row */
    size_t rsize, cap, pending;
    size_t off[MAXCOLS], width[MAXCOLS];
    uint8_t *buf;             /* cap rows, zeroed so strings are NUL-padded */
    int64_t written, last_step;
} series;

struct qp_runlog {
    char *path;
    hid_t file;
    int lockfd;
    int64_t margin; /* bytes reserved past the end before each write (see room) */
    series s[MAXSERIES];
    int version; /* the file's schema version (qp_runschema.h) */
};

/* Reserve room for what the next write can add (rows, a new chunk of every
 * series, metadata) before HDF5 writes anything: on a full disk or past
 * ulimit -f the run then stops here with the file as of its last flush,
 * instead of HDF5 failing half-way and leaving a file that does not open. */
static int room(qp_runlog *l, char *err, size_t errlen)
{
    hsize_t size = 0;
    char why[256];
    if (l->file < 0 || l->lockfd < 0 || H5Fget_filesize(l->file, &size) < 0) return 0;
    if (qp_space_reserve(l->lockfd, (int64_t)size + l->margin, why, sizeof why)) {
        snprintf(err, errlen, "%s: no room for the next rows (%lld bytes past its %lld): %s; it holds every row "
                 "flushed before", l->path, (long long)l->margin, (long long)size, why);
        return -1;
    }
    return 0;
}


static hid_t latest_fapl(void)
{
    /* SWMR needs the 1.10 file format; SEMI makes closing the file fail
     * loudly if a handle were left open, instead of silently not closing. */
    const hid_t p = H5Pcreate(H5P_FILE_ACCESS);
    if (p >= 0 && (H5Pset_libver_bounds(p, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0 ||
                   H5Pset_fclose_degree(p, H5F_CLOSE_SEMI) < 0)) {
        H5Pclose(p);
        return -1;
    }
    return p;
}

static hid_t file_type(qp_runcol_kind k)
{
    switch (k) {
    case QP_RC_I64: return H5T_STD_I64LE;
    case QP_RC_U64: return H5T_STD_U64LE;
    case QP_RC_F64: return H5T_IEEE_F64LE;
    case QP_RC_STR: break; /* strings live in tables (qp_h5table) */
    }
    return -1;
}

/* Create one series' empty dataset (a table through qp_h5table). */
static int create_series(hid_t f, const spec *sp, char *err, size_t errlen)
{
    if (sp->table) {
        qp_h5col c[MAXCOLS];
        for (int i = 0; i < sp->ncols; i++) {
            c[i].name = sp->cols[i].name;
            c[i].type = sp->cols[i].kind == QP_RC_STR ? QP_H5COL_STR
                        : sp->cols[i].kind == QP_RC_F64 ? QP_H5COL_F64
                                                        : QP_H5COL_I64;
            c[i].width = (size_t)sp->cols[i].width;
        }
        qp_h5table *t = qp_h5table_create(f, sp->path, c, sp->ncols, sp->chunk, err, errlen);
        return t ? qp_h5table_close(t, err, errlen) : -1;
    }
    const hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = sp->chunk;
    hid_t space = -1, dcpl = -1, lcpl = -1, ds = -1;
    int ok = (space = H5Screate_simple(1, &zero, &unlimited)) >= 0;
    /* rows a resumed older file never had read NaN ("not measured") */
    const double nan = NAN;
    ok = ok && (dcpl = H5Pcreate(H5P_DATASET_CREATE)) >= 0 && H5Pset_chunk(dcpl, 1, &chunk) >= 0;
    ok = ok && (sp->cols[0].kind != QP_RC_F64 || H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &nan) >= 0);
    ok = ok && (lcpl = H5Pcreate(H5P_LINK_CREATE)) >= 0 && H5Pset_create_intermediate_group(lcpl, 1) >= 0;
    ok = ok && (ds = H5Dcreate2(f, sp->path, file_type(sp->cols[0].kind), space, lcpl, dcpl, H5P_DEFAULT)) >= 0;
    if (!ok) {
        char why[256];
        snprintf(err, errlen, "cannot create %s: %s", sp->path, qp_h5_why(why, sizeof why));
    }
    if (ds >= 0) H5Dclose(ds);
    if (lcpl >= 0) H5Pclose(lcpl);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return ok ? 0 : -1;
}

static int kind_matches(hid_t t, qp_runcol_kind k)
{
    const H5T_class_t c = H5Tget_class(t);
    if (k == QP_RC_STR) return c == H5T_STRING && H5Tis_variable_str(t) == 0;
    if (H5Tget_size(t) != 8) return 0;
    if (k == QP_RC_F64) return c == H5T_FLOAT;
    return c == H5T_INTEGER && H5Tget_sign(t) == (k == QP_RC_U64 ? H5T_SGN_NONE : H5T_SGN_2);
}

/* Open a series and check that it has the schema's columns and types, so a
 * resumed file that is not a run file is refused before anything changes. */
static int open_series(hid_t f, series *s, const spec *sp, char *err, size_t errlen)
{
    s->sp = sp;
    s->last_step = INT64_MIN;
    if ((s->ds = H5Dopen2(f, sp->path, H5P_DEFAULT)) < 0) {
        snprintf(err, errlen, "not a run file: no %.90s", sp->path);
        return -1;
    }
    const hid_t ft = H5Dget_type(s->ds), space = H5Dget_space(s->ds), dcpl = H5Dget_create_plist(s->ds);
    s->mtype = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
    hsize_t n = 0, chunk = 0;
    int ok = s->mtype >= 0 && space >= 0 && dcpl >= 0 && H5Sget_simple_extent_ndims(space) == 1 &&
             H5Sget_simple_extent_dims(space, &n, NULL) == 1 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
             H5Pget_chunk(dcpl, 1, &chunk) == 1 && chunk > 0;
    if (ok && sp->table) {
        ok = H5Tget_class(s->mtype) == H5T_COMPOUND;
        for (int i = 0; ok && i < sp->ncols; i++) {
            const int idx = H5Tget_member_index(s->mtype, sp->cols[i].name);
            hid_t mt = idx >= 0 ? H5Tget_member_type(s->mtype, (unsigned)idx) : -1;
            ok = mt >= 0 && kind_matches(mt, sp->cols[i].kind);
            if (ok) {
                s->off[i] = H5Tget_member_offset(s->mtype, (unsigned)idx);
                s->width[i] = H5Tget_size(mt);
            }
            if (mt >= 0) H5Tclose(mt);
        }
    } else if (ok) {
        ok = kind_matches(s->mtype, sp->cols[0].kind);
        s->off[0] = 0;
        s->width[0] = 8;
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    if (ft >= 0) H5Tclose(ft);
    if (!ok) {
        snprintf(err, errlen, "not a run file: %.90s does not have the run file's layout", sp->path);
        return -1;
    }
    s->rsize = H5Tget_size(s->mtype);
    s->cap = (size_t)chunk;
    s->written = (int64_t)n;
    if (!(s->buf = calloc(s->cap, s->rsize))) {
        snprintf(err, errlen, "%.90s: out of memory", sp->path);
        return -1;
    }
    return 0;
}

static void close_series(series *s)
{
    if (s->ds > 0) H5Dclose(s->ds);
    if (s->mtype > 0) H5Tclose(s->mtype);
    free(s->buf);
    memset(s, 0, sizeof *s);
}

static int write_pending(qp_runlog *l, series *s, char *err, size_t errlen)
{
    if (s->pending == 0) return 0;
    if (room(l, err, errlen)) return -1;
    const hsize_t start = (hsize_t)s->written, count = s->pending, total = start + count;
    hid_t fs = -1, ms = -1;
    int ok = H5Dset_extent(s->ds, &total) >= 0;
    ok = ok && (fs = H5Dget_space(s->ds)) >= 0;
    ok = ok && H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0;
    ok = ok && (ms = H5Screate_simple(1, &count, NULL)) >= 0;
    ok = ok && H5Dwrite(s->ds, s->mtype, ms, fs, H5P_DEFAULT, s->buf) >= 0;
    char why[256];
    if (!ok) qp_h5_why(why, sizeof why);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (!ok) {
        snprintf(err, errlen, "%s: %s: cannot write %zu rows: %s", l->path, s->sp->path, s->pending, why);
        return -1;
    }
    s->written += (int64_t)s->pending;
    s->pending = 0;
    memset(s->buf, 0, s->cap * s->rsize);
    return 0;
}

/* Bytes of a free-text string to store: at most width, never splitting a
 * UTF-8 character. */
static size_t cut_utf8(const char *p, size_t len, size_t width)
{
    if (len <= width) return len;
    size_t w = width;
    while (w > 0 && ((unsigned char)p[w] & 0xC0) == 0x80) w--;
    return w;
}

/* The cells of one row of dataset d, from its row struct (qp_runschema.h). */
static int row_cells(int d, const void *rec, cell *c)
{
    const qp_runset *rs = &qp_runsets[d];
    const char *base = rec;
    for (int k = 0; k < rs->ncols; k++) {
        const qp_runcol *col = &rs->cols[k];
        const char *v = base + col->offset;
        switch (col->kind) {
        case QP_RC_I64: memcpy(&c[k].i, v, 8); break;
        case QP_RC_U64: memcpy(&c[k].u, v, 8); break;
        case QP_RC_F64: memcpy(&c[k].f, v, 8); break;
        case QP_RC_STR: memcpy(&c[k].s, v, sizeof c[k].s); break;
        }
    }
    return rs->ncols;
}

/* Append one row (rec: the dataset's row struct) to dataset d — its one
 * table, or every series of its group. Nothing is buffered unless the whole
 * row is valid and every series has room. */
static int append(qp_runlog *l, int d, const void *rec, char *err, size_t errlen)
{
    qp_h5_quiet();
    cell c[MAXCOLS];
    row_cells(d, rec, c);
    const int count = set_series(d);
    series *s = &l->s[FIRST[d]];
    const int64_t last = s[0].last_step;
    if (c[0].i < last || (d == QP_RS_TRAIN && c[0].i == last)) {
        snprintf(err, errlen, "%s: %s: step %lld after step %lld: steps never go back (resume to roll back)",
                 l->path, qp_runsets[d].path, (long long)c[0].i, (long long)last);
        return -1;
    }
    for (int i = 0, k = 0; i < count; i++)
        for (int j = 0; j < s[i].sp->ncols; j++, k++) {
            const qp_runcol *cl = &s[i].sp->cols[j];
            if (cl->kind != QP_RC_STR || cl->cut) continue;
            const size_t n = c[k].s ? strlen(c[k].s) : 0;
            if (n > s[i].width[j]) {
                snprintf(err, errlen, "%s: %s: %s '%.40s' has %zu bytes, more than the %zu the column holds", l->path,
                         s[i].sp->path, cl->name, c[k].s, n, s[i].width[j]);
                return -1;
            }
        }
    for (int i = 0; i < count; i++)
        if (s[i].pending == s[i].cap && write_pending(l, &s[i], err, errlen)) return -1;
    for (int i = 0, k = 0; i < count; i++) {
        uint8_t *row = s[i].buf + s[i].pending * s[i].rsize;
        for (int j = 0; j < s[i].sp->ncols; j++, k++) {
            uint8_t *dst = row + s[i].off[j];
            if (s[i].sp->cols[j].kind != QP_RC_STR) {
                memcpy(dst, &c[k], 8);
            } else if (c[k].s) {
                const size_t n = strlen(c[k].s);
                memcpy(dst, c[k].s, cut_utf8(c[k].s, n, s[i].width[j]));
            }
        }
        s[i].pending++;
    }
    s[0].last_step = c[0].i;
    return 0;
}

static void free_log(qp_runlog *l)
{
    for (int i = 0; i < NSERIES; i++) close_series(&l->s[i]);
    if (l->file >= 0) H5Fclose(l->file);
    if (l->lockfd >= 0) close(l->lockfd);
    free(l->path);
    free(l);
}

static qp_runlog *new_log(const char *path, char *err, size_t errlen)
{
    qp_runlog *l = calloc(1, sizeof *l);
    if (l && !(l->path = strdup(path))) {
        free(l);
        l = NULL;
    }
    if (!l) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    l->file = l->lockfd = -1;
    return l;
}

/* Take the writer's lock on the run file (see the top of this file). A file
 * system without lock support just goes unprotected. */
static int lock_run_file(qp_runlog *l, char *err, size_t errlen)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(l->lockfd, F_OFD_SETLK, &fl) == 0) return 0;
    if (errno == EAGAIN || errno == EACCES) {
        snprintf(err, errlen, "%s: another process is writing this run file", l->path);
        return -1;
    }
    return 0;
}

static int open_all(qp_runlog *l, char *err, size_t errlen)
{
    char e[384];
    l->margin = 1 << 20;
    for (int i = 0; i < NSERIES; i++) {
        if (open_series(l->file, &l->s[i], &SPECS[i], e, sizeof e)) {
            snprintf(err, errlen, "%s: %s", l->path, e);
            return -1;
        }
        l->margin += 2 * (int64_t)(l->s[i].cap * l->s[i].rsize);
    }
    return 0;
}

static int start_swmr(qp_runlog *l, char *err, size_t errlen)
{
    if (H5Fstart_swmr_write(l->file) < 0) {
        char why[256];
        snprintf(err, errlen, "%s: cannot start SWMR writing: %s", l->path, qp_h5_why(why, sizeof why));
        return -1;
    }
    return 0;
}

qp_runlog *qp_runlog_create(const char *path, const qp_kv *attrs, int nattrs, char *err, size_t errlen)
{
    qp_h5_quiet();
    build_specs();
    char why[256], e[384];
    if (nattrs < 0 || (nattrs > 0 && !attrs)) {
        snprintf(err, errlen, "%s: bad attribute list", path);
        return NULL;
    }
    for (int i = 0; i < nattrs; i++) {
        if (!attrs[i].key || !*attrs[i].key || !attrs[i].value) {
            snprintf(err, errlen, "%s: attribute %d has no key or no value", path, i);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(attrs[i].key, attrs[j].key)) {
                snprintf(err, errlen, "%s: attribute '%s' given twice", path, attrs[i].key);
                return NULL;
            }
        if (!strcmp(attrs[i].key, QP_RUNFILE_SCHEMA_ATTR)) {
            snprintf(err, errlen, "%s: attribute '%s' is the run file's own", path, attrs[i].key);
            return NULL;
        }
    }
    qp_runlog *l = new_log(path, err, errlen);
    if (!l) return NULL;
    /* Opening it ourselves first gives the OS's reason when it cannot be
     * created, and the lock before HDF5 truncates anything. */
    const int existed = access(path, F_OK) == 0;
    int created = 0;
    if ((l->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        goto fail;
    }
    if (lock_run_file(l, err, errlen)) goto fail; /* someone else's file: leave it */
    created = !existed;
    const hid_t fapl = latest_fapl();
    l->file = fapl >= 0 ? H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : -1;
    if (l->file < 0) qp_h5_why(why, sizeof why);
    if (fapl >= 0) H5Pclose(fapl);
    if (l->file < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", path, why);
        goto fail;
    }
    created = 1;
    for (int i = 0; i < nattrs; i++)
        if (qp_h5_set_attr_str(l->file, attrs[i].key, attrs[i].value, e, sizeof e)) {
            snprintf(err, errlen, "%s: %s", path, e);
            goto fail;
        }
    char ver[16];
    snprintf(ver, sizeof ver, "%d", QP_RUNFILE_SCHEMA);
    if (qp_h5_set_attr_str(l->file, QP_RUNFILE_SCHEMA_ATTR, ver, e, sizeof e)) {
        snprintf(err, errlen, "%s: %s", path, e);
        goto fail;
    }
    l->version = QP_RUNFILE_SCHEMA;
    for (int i = 0; i < NSERIES; i++)
        if (create_series(l->file, &SPECS[i], e, sizeof e)) {
            snprintf(err, errlen, "%s: %s", path, e);
            goto fail;
        }
    if (open_all(l, err, errlen) || start_swmr(l, err, errlen)) goto fail;
    return l;
fail:
    /* A file without the whole schema is of no use to anyone; one that was
     * never touched (locked by another writer) is left alone. */
    if (created) unlink(path);
    free_log(l);
    return NULL;
}

/* The HDF5 file, opened for writing. A writer that was killed leaves the
 * superblock marked "open for writing" and 1.10 refuses to open such a file
 * (h5py can still read it with swmr=True). h5clear removes the mark through
 * the file-access property "clear_status_flags", which HDF5 registers but
 * does not document; we do the same, and only after taking the run file's
 * lock, so the writer that set the mark is known to be gone. */
static hid_t open_for_resume(const char *path, char *why, size_t len)
{
    const hid_t fapl = latest_fapl();
    if (fapl < 0) {
        qp_h5_why(why, len);
        return -1;
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    if (f < 0) {
        qp_h5_why(why, len);
        hbool_t clear = 1;
        if (H5Pset(fapl, "clear_status_flags", &clear) >= 0 && (f = H5Fopen(path, H5F_ACC_RDWR, fapl)) < 0)
            qp_h5_why(why, len);
    }
    H5Pclose(fapl);
    return f;
}

/* The step of row i; on failure why holds HDF5's reason. */
static int read_step(const series *s, hsize_t i, int64_t *v, char *why, size_t whylen)
{
    hid_t mt = H5T_NATIVE_INT64, fs = -1, ms = -1;
    const hsize_t one = 1;
    int ok = 1;
    if (s->sp->table)
        ok = (mt = H5Tcreate(H5T_COMPOUND, sizeof *v)) >= 0 && H5Tinsert(mt, "step", 0, H5T_NATIVE_INT64) >= 0;
    ok = ok && (fs = H5Dget_space(s->ds)) >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, &i, NULL, &one, NULL) >= 0;
    ok = ok && (ms = H5Screate_simple(1, &one, NULL)) >= 0 && H5Dread(s->ds, mt, ms, fs, H5P_DEFAULT, v) >= 0;
    if (!ok) qp_h5_why(why, whylen);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (s->sp->table && mt >= 0) H5Tclose(mt);
    return ok ? 0 : -1;
}

/* Cut a group of series to its rows with step <= last_step. Steps never go
 * back within a series, so that is a prefix, found by bisection; series of
 * one group (a kill may leave /train's series at different lengths) are cut
 * to a common length. */
static int truncate_group(qp_runlog *l, int first, int count, int64_t last_step, char *err, size_t errlen)
{
    series *s = &l->s[first];
    char why[256] = "";
    int64_t n = s[0].written;
    for (int i = 1; i < count; i++)
        if (s[i].written < n) n = s[i].written;
    int64_t lo = 0, hi = n, v = 0; /* rows [0, lo) have step <= last_step, rows [hi, n) have more */
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (read_step(&s[0], (hsize_t)mid, &v, why, sizeof why)) goto fail;
        if (v <= last_step) lo = mid + 1;
        else hi = mid;
    }
    for (int i = 0; i < count; i++) {
        const hsize_t keep = (hsize_t)lo;
        if (H5Dset_extent(s[i].ds, &keep) < 0) {
            qp_h5_why(why, sizeof why);
            goto fail;
        }
        s[i].written = lo;
    }
    if (lo > 0 && read_step(&s[0], (hsize_t)(lo - 1), &s[0].last_step, why, sizeof why)) goto fail;
    return 0;
fail:
    snprintf(err, errlen, "%s: %s: cannot cut to step %lld: %s", l->path, s[0].sp->path, (long long)last_step,
             why);
    return -1;
}

/* The file's schema version: its attribute, 1 without one. */
static int read_version(qp_runlog *l, char *err, size_t errlen)
{
    char *v = NULL;
    if (H5Aexists(l->file, QP_RUNFILE_SCHEMA_ATTR) > 0) {
        const hid_t a = H5Aopen(l->file, QP_RUNFILE_SCHEMA_ATTR, H5P_DEFAULT), t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        H5Tset_cset(t, H5T_CSET_UTF8);
        if (a < 0 || H5Aread(a, t, &v) < 0) v = NULL;
        H5Tclose(t);
        if (a >= 0) H5Aclose(a);
        if (!v) {
            snprintf(err, errlen, "%s: cannot read its %s attribute", l->path, QP_RUNFILE_SCHEMA_ATTR);
            return -1;
        }
    }
    const int rc = qp_runschema_check_version(v, l->path, "qtrain", &l->version, err, errlen);
    if (v) H5free_memory(v);
    return rc;
}

/* A file an older qtrain wrote gets the columns added since, NaN for the
 * rows it already has ("not measured"), and the current version. */
static int upgrade(qp_runlog *l, char *err, size_t errlen)
{
    if (read_version(l, err, errlen)) return -1;
    if (l->version == QP_RUNFILE_SCHEMA) return 0;
    char e[384], why[256];
    for (int d = 0; d < QP_RS_COUNT; d++) {
        const qp_runset *rs = &qp_runsets[d];
        hsize_t rows = 0;
        if (rs->table && rs->cols[0].since > l->version) {
            /* a table added since: empty for the steps the file already has */
            const spec *sp = &SPECS[FIRST[d]];
            if (H5Lexists(l->file, sp->path, H5P_DEFAULT) <= 0 && create_series(l->file, sp, e, sizeof e)) {
                snprintf(err, errlen, "%s: %s", l->path, e);
                return -1;
            }
            continue;
        }
        for (int c = 0; c < rs->ncols; c++) {
            if (rs->cols[c].since <= l->version) continue;
            if (rs->table || c == 0) {
                snprintf(err, errlen, "%s: run file schema version %d cannot be continued by this qtrain (%s changed); "
                         "start a new run", l->path, l->version, rs->path);
                return -1;
            }
            const spec *sp = &SPECS[FIRST[d] + c];
            if (rows == 0) {
                /* the group's length: its step series, which every version has */
                const hid_t ds = H5Dopen2(l->file, SPECS[FIRST[d]].path, H5P_DEFAULT), space = ds >= 0 ? H5Dget_space(ds) : -1;
                if (space < 0 || H5Sget_simple_extent_dims(space, &rows, NULL) != 1) rows = (hsize_t)-1;
                if (space >= 0) H5Sclose(space);
                if (ds >= 0) H5Dclose(ds);
                if (rows == (hsize_t)-1) {
                    snprintf(err, errlen, "%s: not a run file: no %s", l->path, SPECS[FIRST[d]].path);
                    return -1;
                }
            }
            if (H5Lexists(l->file, sp->path, H5P_DEFAULT) > 0) continue;
            if (create_series(l->file, sp, e, sizeof e)) {
                snprintf(err, errlen, "%s: %s", l->path, e);
                return -1;
            }
            const hid_t ds = H5Dopen2(l->file, sp->path, H5P_DEFAULT);
            const int ok = ds >= 0 && H5Dset_extent(ds, &rows) >= 0;
            if (!ok) qp_h5_why(why, sizeof why);
            if (ds >= 0) H5Dclose(ds);
            if (!ok) {
                snprintf(err, errlen, "%s: cannot add %s: %s", l->path, sp->path, why);
                return -1;
            }
        }
    }
    char ver[16];
    snprintf(ver, sizeof ver, "%d", QP_RUNFILE_SCHEMA);
    if (qp_h5_set_attr_str(l->file, QP_RUNFILE_SCHEMA_ATTR, ver, e, sizeof e)) {
        snprintf(err, errlen, "%s: %s", l->path, e);
        return -1;
    }
    l->version = QP_RUNFILE_SCHEMA;
    return 0;
}

qp_runlog *qp_runlog_resume(const char *path, int64_t last_step, char *err, size_t errlen)
{
    qp_h5_quiet();
    build_specs();
    char why[256];
    qp_runlog *l = new_log(path, err, errlen);
    if (!l) return NULL;
    if ((l->lockfd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    if (lock_run_file(l, err, errlen)) goto fail;
    if ((l->file = open_for_resume(path, why, sizeof why)) < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, why);
        goto fail;
    }
    if (upgrade(l, err, errlen) || open_all(l, err, errlen) || room(l, err, errlen)) goto fail;
    for (int d = 0; d < QP_RS_COUNT; d++)
        if (truncate_group(l, FIRST[d], set_series(d), last_step, err, errlen)) goto fail;
    if (start_swmr(l, err, errlen)) goto fail;
    return l;
fail:
    free_log(l);
    return NULL;
}

int qp_runlog_train(qp_runlog *l, const qp_train_row *r, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    return append(l, QP_RS_TRAIN, r, err, errlen);
}

int qp_runlog_eval(qp_runlog *l, int64_t step, double val_loss, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    const qp_eval_row r = {.step = step, .val_loss = val_loss};
    return append(l, QP_RS_EVAL, &r, err, errlen);
}

int qp_runlog_qerr(qp_runlog *l, const qp_qerr_row *r, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    return append(l, QP_RS_QERR, r, err, errlen);
}

int qp_runlog_outlier(qp_runlog *l, const qp_outlier_row *r, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    return append(l, QP_RS_OUTLIERS, r, err, errlen);
}

int qp_runlog_bscale(qp_runlog *l, const qp_bscale_row *r, const int64_t *hist, int nbins, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    if (append(l, QP_RS_BSCALE, r, err, errlen)) return -1;
    for (int k = 0; k < nbins; k++) {
        if (!hist[k]) continue;
        const qp_bshist_row h = {r->step, r->layer, r->gemm, r->operand, r->pass, k, hist[k]};
        if (append(l, QP_RS_BSHIST, &h, err, errlen)) return -1;
    }
    return 0;
}

int qp_runlog_event(qp_runlog *l, const qp_event_row *r, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    return append(l, QP_RS_RECALIB, r, err, errlen);
}

/* Divergence and status rows are rare and are what someone watching the run
 * looks for, so they are flushed at once (with everything before them). */
int qp_runlog_divergence(qp_runlog *l, int64_t step, double loss, const char *reason, const char *action, char *err,
                         size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    const qp_divergence_row r = {.step = step, .loss = loss, .reason = reason, .action = action};
    return append(l, QP_RS_DIVERGENCE, &r, err, errlen) ? -1 : qp_runlog_flush(l, err, errlen);
}

int qp_runlog_status(qp_runlog *l, int64_t step, const char *state, const char *message, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    int known = 0;
    for (size_t i = 0; i < sizeof STATES / sizeof STATES[0]; i++) known |= state && !strcmp(state, STATES[i]);
    if (!known) {
        snprintf(err, errlen, "%s: unknown run state '%s' (running, done, diverged, stopped, failed)", l->path,
                 state ? state : "(null)");
        return -1;
    }
    const qp_status_row r = {.step = step, .state = state, .message = message};
    return append(l, QP_RS_STATUS, &r, err, errlen) ? -1 : qp_runlog_flush(l, err, errlen);
}

int qp_runlog_flush(qp_runlog *l, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    qp_h5_quiet();
    if (room(l, err, errlen)) return -1;
    for (int i = 0; i < NSERIES; i++)
        if (write_pending(l, &l->s[i], err, errlen)) return -1;
    if (H5Fflush(l->file, H5F_SCOPE_GLOBAL) < 0) {
        char why[256];
        snprintf(err, errlen, "%s: cannot flush: %s", l->path, qp_h5_why(why, sizeof why));
        return -1;
    }
    return 0;
}

int qp_runlog_close(qp_runlog *l, char *err, size_t errlen)
{
    if (!l) return 0;
    qp_h5_quiet();
    int rc = qp_runlog_flush(l, err, errlen);
    for (int i = 0; i < NSERIES; i++) close_series(&l->s[i]);
    if (H5Fclose(l->file) < 0 && rc == 0) {
        char why[256];
        snprintf(err, errlen, "%s: cannot close: %s", l->path, qp_h5_why(why, sizeof why));
        rc = -1;
    }
    l->file = -1;
    qp_space_release(l->lockfd); /* what room() reserved past the end */
    free_log(l);
    return rc;
}
