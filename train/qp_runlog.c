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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "qp_h5err.h"

#include "qp_h5table.h"
#include "qp_space.h"

typedef enum { COL_I64, COL_U64, COL_F64, COL_STR } col_kind;

typedef struct {
    const char *name;
    col_kind kind;
    size_t width; /* COL_STR: bytes */
    int cut;      /* COL_STR: free text, cut at the width (identifiers are never cut) */
} col;

typedef union {
    int64_t i;
    uint64_t u;
    double f;
    const char *s;
} cell;

/* A 1-D series has one column, named like its dataset. */
static const col TRAIN_COLS[] = {
    {"step", COL_I64, 0, 0},    {"loss", COL_F64, 0, 0},         {"lr", COL_F64, 0, 0},
    {"grad_norm", COL_F64, 0, 0}, {"step_ms", COL_F64, 0, 0},    {"data_wait_ms", COL_F64, 0, 0},
    {"tokens_per_s", COL_F64, 0, 0}, {"batch_hash", COL_U64, 0, 0}, {"comm_ms", COL_F64, 0, 0},
    {"power_w", COL_F64, 0, 0},   {"energy_j", COL_F64, 0, 0},   {"gpu_util", COL_F64, 0, 0},
    {"grad_comm_rel_err", COL_F64, 0, 0},
};
static const col EVAL_COLS[] = {{"step", COL_I64, 0, 0}, {"val_loss", COL_F64, 0, 0}};
static const col QERR_COLS[] = {
    {"step", COL_I64, 0, 0},     {"layer", COL_I64, 0, 0},     {"gemm", COL_STR, 32, 0},
    {"operand", COL_STR, 16, 0}, {"pass", COL_STR, 16, 0},     {"rel_l2", COL_F64, 0, 0},
    {"snr_db", COL_F64, 0, 0},   {"sat_frac", COL_F64, 0, 0},  {"zero_frac", COL_F64, 0, 0},
    {"amax", COL_F64, 0, 0},     {"scale", COL_F64, 0, 0},
};
static const col RECALIB_COLS[] = {
    {"step", COL_I64, 0, 0},      {"layer", COL_I64, 0, 0},     {"gemm", COL_STR, 32, 0},
    {"operand", COL_STR, 16, 0},  {"kind", COL_STR, 32, 0},     {"old_scale", COL_F64, 0, 0},
    {"new_scale", COL_F64, 0, 0}, {"amax", COL_F64, 0, 0},
};
static const col DIVERGENCE_COLS[] = {
    {"step", COL_I64, 0, 0}, {"loss", COL_F64, 0, 0}, {"reason", COL_STR, 256, 1}, {"action", COL_STR, 32, 0}};
static const col STATUS_COLS[] = {{"step", COL_I64, 0, 0}, {"state", COL_STR, 16, 0}, {"message", COL_STR, 512, 1}};

#define MAXCOLS 11

typedef struct {
    const char *path;
    const col *cols; /* a table's columns, or the one column of a 1-D series */
    int ncols, table;
    size_t chunk; /* rows per chunk, and per buffered write */
} spec;

/* Series are grouped: /train's thirteen and /eval's two are appended in step;
 * a group's first series holds the step. */
enum { S_TRAIN = 0, S_EVAL = 13, S_QERR = 15, S_RECALIB, S_DIVERGENCE, S_STATUS, NSERIES };

static const spec SPECS[NSERIES] = {
    {"/train/step", &TRAIN_COLS[0], 1, 0, 1024},
    {"/train/loss", &TRAIN_COLS[1], 1, 0, 1024},
    {"/train/lr", &TRAIN_COLS[2], 1, 0, 1024},
    {"/train/grad_norm", &TRAIN_COLS[3], 1, 0, 1024},
    {"/train/step_ms", &TRAIN_COLS[4], 1, 0, 1024},
    {"/train/data_wait_ms", &TRAIN_COLS[5], 1, 0, 1024},
    {"/train/tokens_per_s", &TRAIN_COLS[6], 1, 0, 1024},
    {"/train/batch_hash", &TRAIN_COLS[7], 1, 0, 1024},
    {"/train/comm_ms", &TRAIN_COLS[8], 1, 0, 1024},
    {"/train/power_w", &TRAIN_COLS[9], 1, 0, 1024},
    {"/train/energy_j", &TRAIN_COLS[10], 1, 0, 1024},
    {"/train/gpu_util", &TRAIN_COLS[11], 1, 0, 1024},
    {"/train/grad_comm_rel_err", &TRAIN_COLS[12], 1, 0, 1024},
    {"/eval/step", &EVAL_COLS[0], 1, 0, 256},
    {"/eval/val_loss", &EVAL_COLS[1], 1, 0, 256},
    {"/quant/error", QERR_COLS, 11, 1, 1024},
    {"/events/recalib", RECALIB_COLS, 8, 1, 256},
    {"/events/divergence", DIVERGENCE_COLS, 4, 1, 64},
    {"/status", STATUS_COLS, 3, 1, 64},
};

static const struct {
    int first, count;
} GROUPS[] = {{S_TRAIN, 13}, {S_EVAL, 2}, {S_QERR, 1}, {S_RECALIB, 1}, {S_DIVERGENCE, 1}, {S_STATUS, 1}};

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
    series s[NSERIES];
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

static hid_t file_type(col_kind k)
{
    return k == COL_I64 ? H5T_STD_I64LE : k == COL_U64 ? H5T_STD_U64LE : H5T_IEEE_F64LE;
}

/* Create one series' empty dataset (a table through qp_h5table). */
static int create_series(hid_t f, const spec *sp, char *err, size_t errlen)
{
    if (sp->table) {
        qp_h5col c[MAXCOLS];
        for (int i = 0; i < sp->ncols; i++) {
            c[i].name = sp->cols[i].name;
            c[i].type = sp->cols[i].kind == COL_STR ? QP_H5COL_STR
                        : sp->cols[i].kind == COL_F64 ? QP_H5COL_F64
                                                      : QP_H5COL_I64;
            c[i].width = sp->cols[i].width;
        }
        qp_h5table *t = qp_h5table_create(f, sp->path, c, sp->ncols, sp->chunk, err, errlen);
        return t ? qp_h5table_close(t, err, errlen) : -1;
    }
    const hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = sp->chunk;
    hid_t space = -1, dcpl = -1, lcpl = -1, ds = -1;
    int ok = (space = H5Screate_simple(1, &zero, &unlimited)) >= 0;
    ok = ok && (dcpl = H5Pcreate(H5P_DATASET_CREATE)) >= 0 && H5Pset_chunk(dcpl, 1, &chunk) >= 0;
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

static int kind_matches(hid_t t, col_kind k)
{
    const H5T_class_t c = H5Tget_class(t);
    if (k == COL_STR) return c == H5T_STRING && H5Tis_variable_str(t) == 0;
    if (H5Tget_size(t) != 8) return 0;
    if (k == COL_F64) return c == H5T_FLOAT;
    return c == H5T_INTEGER && H5Tget_sign(t) == (k == COL_U64 ? H5T_SGN_NONE : H5T_SGN_2);
}

/* Open a series and check that it has the schema's columns and types, so a
 * resumed file that is not a run file is refused before anything changes. */
static int open_series(hid_t f, series *s, const spec *sp, char *err, size_t errlen)
{
    s->sp = sp;
    s->last_step = INT64_MIN;
    if ((s->ds = H5Dopen2(f, sp->path, H5P_DEFAULT)) < 0) {
        snprintf(err, errlen, "not a run file: no %s", sp->path);
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
        snprintf(err, errlen, "not a run file: %s does not have the run file's layout", sp->path);
        return -1;
    }
    s->rsize = H5Tget_size(s->mtype);
    s->cap = (size_t)chunk;
    s->written = (int64_t)n;
    if (!(s->buf = calloc(s->cap, s->rsize))) {
        snprintf(err, errlen, "%s: out of memory", sp->path);
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

/* Append one row to `count` series starting at `first`; c holds their
 * columns in order, c[0] being the step. Nothing is buffered unless the whole
 * row is valid and every series has room. */
static int append(qp_runlog *l, int first, int count, const cell *c, char *err, size_t errlen)
{
    qp_h5_quiet();
    series *s = &l->s[first];
    const int64_t last = s[0].last_step;
    if (c[0].i < last || (first == S_TRAIN && c[0].i == last)) {
        snprintf(err, errlen, "%s: %s: step %lld after step %lld: steps never go back (resume to roll back)",
                 l->path, first == S_TRAIN ? "/train" : first == S_EVAL ? "/eval" : s[0].sp->path,
                 (long long)c[0].i, (long long)last);
        return -1;
    }
    for (int i = 0, k = 0; i < count; i++)
        for (int j = 0; j < s[i].sp->ncols; j++, k++) {
            const col *cl = &s[i].sp->cols[j];
            if (cl->kind != COL_STR || cl->cut) continue;
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
            if (s[i].sp->cols[j].kind != COL_STR) {
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
 * one group (a kill may leave /train's eight of different lengths) are cut
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

qp_runlog *qp_runlog_resume(const char *path, int64_t last_step, char *err, size_t errlen)
{
    qp_h5_quiet();
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
    if (open_all(l, err, errlen) || room(l, err, errlen)) goto fail;
    for (size_t g = 0; g < sizeof GROUPS / sizeof GROUPS[0]; g++)
        if (truncate_group(l, GROUPS[g].first, GROUPS[g].count, last_step, err, errlen)) goto fail;
    if (start_swmr(l, err, errlen)) goto fail;
    return l;
fail:
    free_log(l);
    return NULL;
}

int qp_runlog_train(qp_runlog *l, const qp_train_row *r, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    cell c[13];
    c[0].i = r->step;
    c[1].f = r->loss;
    c[2].f = r->lr;
    c[3].f = r->grad_norm;
    c[4].f = r->step_ms;
    c[5].f = r->data_wait_ms;
    c[6].f = r->tokens_per_s;
    c[7].u = r->batch_hash;
    c[8].f = r->comm_ms;
    c[9].f = r->power_w;
    c[10].f = r->energy_j;
    c[11].f = r->gpu_util;
    c[12].f = r->grad_comm_rel_err;
    return append(l, S_TRAIN, 13, c, err, errlen);
}

int qp_runlog_eval(qp_runlog *l, int64_t step, double val_loss, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    cell c[2];
    c[0].i = step;
    c[1].f = val_loss;
    return append(l, S_EVAL, 2, c, err, errlen);
}

int qp_runlog_qerr(qp_runlog *l, const qp_qerr_row *r, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    cell c[11];
    c[0].i = r->step;
    c[1].i = r->layer;
    c[2].s = r->gemm;
    c[3].s = r->operand;
    c[4].s = r->pass;
    c[5].f = r->rel_l2;
    c[6].f = r->snr_db;
    c[7].f = r->sat_frac;
    c[8].f = r->zero_frac;
    c[9].f = r->amax;
    c[10].f = r->scale;
    return append(l, S_QERR, 1, c, err, errlen);
}

int qp_runlog_event(qp_runlog *l, const qp_event_row *r, char *err, size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    cell c[13];
    c[0].i = r->step;
    c[1].i = r->layer;
    c[2].s = r->gemm;
    c[3].s = r->operand;
    c[4].s = r->kind;
    c[5].f = r->old_scale;
    c[6].f = r->new_scale;
    c[7].f = r->amax;
    return append(l, S_RECALIB, 1, c, err, errlen);
}

/* Divergence and status rows are rare and are what someone watching the run
 * looks for, so they are flushed at once (with everything before them). */
int qp_runlog_divergence(qp_runlog *l, int64_t step, double loss, const char *reason, const char *action, char *err,
                         size_t errlen)
{
    if (!l) return 0; /* no run file on this process (a data-parallel rank other than 0) */
    cell c[4];
    c[0].i = step;
    c[1].f = loss;
    c[2].s = reason;
    c[3].s = action;
    return append(l, S_DIVERGENCE, 1, c, err, errlen) ? -1 : qp_runlog_flush(l, err, errlen);
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
    cell c[3];
    c[0].i = step;
    c[1].s = state;
    c[2].s = message;
    return append(l, S_STATUS, 1, c, err, errlen) ? -1 : qp_runlog_flush(l, err, errlen);
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
