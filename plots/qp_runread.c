/* qp_runread.c — read a run file (see qp_runread.h). */
#include "qp_h5err.h"
#include "qp_h5open.h"
#include "qp_runread.h"
#include "qp_ckpt.h" /* QP_CKPT_MARKER */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <hdf5.h>

/* Everything one load allocates hangs off the qp_run; on failure it is all
 * released through qp_run_free, so the readers below only need to leave
 * HDF5 handles closed. */

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}


/* H5Lexists on "a/b" fails (rather than returning 0) when "a" is missing,
 * so check every component. */
static int has_path(hid_t f, const char *path)
{
    char buf[256];
    size_t n = strlen(path);
    if (n >= sizeof buf) return 0;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char c = buf[i];
        buf[i] = '\0';
        htri_t e = H5Lexists(f, buf, H5P_DEFAULT);
        buf[i] = c;
        if (e <= 0) return 0;
    }
    return 1;
}

/* Read a whole 1-D dataset converted to mtype (elements of size el) into a
 * fresh buffer. Returns 0, or -1 with err set. */
static int read_1d(hid_t f, const char *file, const char *name, hid_t mtype, size_t el, void **buf, size_t *n,
                   char *err, size_t errlen)
{
    *buf = NULL;
    *n = 0;
    int rc = -1;
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    hid_t sp = ds >= 0 ? H5Dget_space(ds) : -1;
    if (sp < 0 || H5Sget_simple_extent_ndims(sp) != 1) {
        snprintf(err, errlen, "%s: not a qprec run file (%s is not a 1-D dataset)", file, name);
        goto out;
    }
    hsize_t dim;
    H5Sget_simple_extent_dims(sp, &dim, NULL);
    if (!qp_h5_data_present(ds, (unsigned long long)dim, el, 1ull << 26)) {
        snprintf(err, errlen, "%s: %s declares %llu rows but the file does not hold them", file, name,
                 (unsigned long long)dim);
        goto out;
    }
    /* calloc(0) may return NULL; keep one element so a valid empty read has a buffer */
    *buf = calloc(dim ? (size_t)dim : 1, el);
    if (!*buf) {
        snprintf(err, errlen, "%s: out of memory reading %s", file, name);
        goto out;
    }
    if (dim && H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *buf) < 0) {
        snprintf(err, errlen, "%s: cannot read %s (wrong type or damaged file)", file, name);
        free(*buf);
        *buf = NULL;
        goto out;
    }
    *n = (size_t)dim;
    rc = 0;
out:
    if (sp >= 0) H5Sclose(sp);
    if (ds >= 0) H5Dclose(ds);
    return rc;
}

/* ---- root attributes ------------------------------------------------------ */

typedef struct {
    qp_run *r;
    int cap, failed;
} attr_ctx;

/* Attributes become text: strings as they are, numbers printed (the schema
 * stores strings only; numbers are accepted so a hand-made file reads too). */
static char *attr_text(hid_t a)
{
    hid_t t = H5Aget_type(a);
    if (t < 0) return NULL;
    char *out = NULL;
    H5T_class_t c = H5Tget_class(t);
    /* one value only: H5Aread writes every element of an array attribute */
    hid_t asp = H5Aget_space(a);
    const int one = asp >= 0 && H5Sget_simple_extent_type(asp) != H5S_NULL && H5Sget_simple_extent_npoints(asp) == 1;
    if (asp >= 0) H5Sclose(asp);
    if (!one) c = H5T_NO_CLASS;
    if (c == H5T_STRING && H5Tis_variable_str(t) > 0) {
        hid_t m = H5Tcopy(H5T_C_S1);
        H5Tset_size(m, H5T_VARIABLE);
        H5Tset_cset(m, H5Tget_cset(t));
        char *s = NULL;
        if (H5Aread(a, m, &s) >= 0 && s) {
            out = dup_str(s);
            H5free_memory(s);
        }
        H5Tclose(m);
    } else if (c == H5T_STRING) {
        size_t n = H5Tget_size(t);
        hid_t m = H5Tcopy(H5T_C_S1);
        H5Tset_size(m, n + 1);
        H5Tset_strpad(m, H5T_STR_NULLTERM);
        out = calloc(n + 1, 1);
        if (out && H5Aread(a, m, out) < 0) {
            free(out);
            out = NULL;
        }
        H5Tclose(m);
    } else if (c == H5T_INTEGER || c == H5T_FLOAT) {
        hid_t sp = H5Aget_space(a);
        if (sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1) {
            char buf[64];
            if (c == H5T_INTEGER) {
                long long v;
                if (H5Aread(a, H5T_NATIVE_LLONG, &v) >= 0) snprintf(buf, sizeof buf, "%lld", v), out = dup_str(buf);
            } else {
                double v;
                if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0) snprintf(buf, sizeof buf, "%.17g", v), out = dup_str(buf);
            }
        }
        if (sp >= 0) H5Sclose(sp);
    }
    H5Tclose(t);
    return out;
}

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *p)
{
    (void)info;
    attr_ctx *c = p;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return 0;
    char *v = attr_text(a);
    H5Aclose(a);
    if (!v) return 0; /* compound or array attributes: not configuration */
    qp_run *r = c->r;
    if (r->nattrs == c->cap) {
        int cap = c->cap ? 2 * c->cap : 32;
        qp_attr *na = realloc(r->attrs, (size_t)cap * sizeof *na);
        if (!na) {
            free(v);
            c->failed = 1;
            return -1;
        }
        r->attrs = na;
        c->cap = cap;
    }
    char *k = dup_str(name);
    if (!k) {
        free(v);
        c->failed = 1;
        return -1;
    }
    r->attrs[r->nattrs].key = k;
    r->attrs[r->nattrs].value = v;
    r->nattrs++;
    return 0;
}

static int cmp_attr(const void *a, const void *b)
{
    return strcmp(((const qp_attr *)a)->key, ((const qp_attr *)b)->key);
}

const char *qp_run_attr(const qp_run *r, const char *key)
{
    qp_attr k = {(char *)key, NULL};
    const qp_attr *hit = r->nattrs ? bsearch(&k, r->attrs, (size_t)r->nattrs, sizeof k, cmp_attr) : NULL;
    return hit ? hit->value : NULL;
}

/* ---- tables ------------------------------------------------------------- */

/* A native string member: fixed width n bytes plus a NUL, which HDF5 fills
 * in converting from the file's NUL-padded column. */
static hid_t str_type(size_t n)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, n);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    return t;
}

/* Compound conversion matches members by name, so these memory types read
 * just the columns a figure needs, whatever else the table holds. A table
 * that lacks one of them fails the read. */
static hid_t qerr_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(qp_qerr_rec));
    hid_t g = str_type(QP_GEMM_LEN), s = str_type(QP_NAME_LEN);
    H5Tinsert(t, "step", HOFFSET(qp_qerr_rec, step), H5T_NATIVE_INT64);
    H5Tinsert(t, "layer", HOFFSET(qp_qerr_rec, layer), H5T_NATIVE_INT64);
    H5Tinsert(t, "gemm", HOFFSET(qp_qerr_rec, gemm), g);
    H5Tinsert(t, "operand", HOFFSET(qp_qerr_rec, operand), s);
    H5Tinsert(t, "pass", HOFFSET(qp_qerr_rec, pass), s);
    H5Tinsert(t, "rel_l2", HOFFSET(qp_qerr_rec, rel_l2), H5T_NATIVE_DOUBLE);
    H5Tclose(g);
    H5Tclose(s);
    return t;
}

static hid_t event_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(qp_event_rec));
    hid_t g = str_type(QP_GEMM_LEN), s = str_type(QP_NAME_LEN);
    H5Tinsert(t, "step", HOFFSET(qp_event_rec, step), H5T_NATIVE_INT64);
    H5Tinsert(t, "layer", HOFFSET(qp_event_rec, layer), H5T_NATIVE_INT64);
    H5Tinsert(t, "gemm", HOFFSET(qp_event_rec, gemm), g);
    H5Tinsert(t, "operand", HOFFSET(qp_event_rec, operand), s);
    H5Tinsert(t, "kind", HOFFSET(qp_event_rec, kind), g);
    H5Tclose(g);
    H5Tclose(s);
    return t;
}

static hid_t bshist_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(qp_bshist_rec));
    hid_t g = str_type(QP_GEMM_LEN), s = str_type(QP_NAME_LEN);
    H5Tinsert(t, "step", HOFFSET(qp_bshist_rec, step), H5T_NATIVE_INT64);
    H5Tinsert(t, "layer", HOFFSET(qp_bshist_rec, layer), H5T_NATIVE_INT64);
    H5Tinsert(t, "gemm", HOFFSET(qp_bshist_rec, gemm), g);
    H5Tinsert(t, "operand", HOFFSET(qp_bshist_rec, operand), s);
    H5Tinsert(t, "pass", HOFFSET(qp_bshist_rec, pass), s);
    H5Tinsert(t, "bin", HOFFSET(qp_bshist_rec, bin), H5T_NATIVE_INT64);
    H5Tinsert(t, "count", HOFFSET(qp_bshist_rec, count), H5T_NATIVE_INT64);
    H5Tclose(g);
    H5Tclose(s);
    return t;
}

static hid_t outlier_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(qp_outlier_rec));
    hid_t g = str_type(QP_GEMM_LEN);
    H5Tinsert(t, "step", HOFFSET(qp_outlier_rec, step), H5T_NATIVE_INT64);
    H5Tinsert(t, "layer", HOFFSET(qp_outlier_rec, layer), H5T_NATIVE_INT64);
    H5Tinsert(t, "gemm", HOFFSET(qp_outlier_rec, gemm), g);
    H5Tinsert(t, "amax", HOFFSET(qp_outlier_rec, amax), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "kurtosis", HOFFSET(qp_outlier_rec, kurtosis), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "topk_frac", HOFFSET(qp_outlier_rec, topk_frac), H5T_NATIVE_DOUBLE);
    H5Tclose(g);
    return t;
}

typedef struct {
    char state[QP_NAME_LEN];
} status_rec;

static hid_t status_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(status_rec));
    hid_t s = str_type(QP_NAME_LEN);
    H5Tinsert(t, "state", HOFFSET(status_rec, state), s);
    H5Tclose(s);
    return t;
}

/* ---- the run ------------------------------------------------------------ */

/* A /train or /eval column the schema says a file of r's version has. */
static int read_col(qp_run *r, hid_t f, qp_runset_id set, const char *name, void **buf, size_t *n, char *err,
                    size_t errlen)
{
    const qp_runcol *c = qp_runcol_find(set, name);
    char path[128];
    snprintf(path, sizeof path, "%s/%s", qp_runsets[set].path + 1, name);
    if (c->kind == QP_RC_F64) return read_1d(f, r->path, path, H5T_NATIVE_DOUBLE, sizeof(double), buf, n, err, errlen);
    return read_1d(f, r->path, path, H5T_NATIVE_INT64, sizeof(int64_t), buf, n, err, errlen);
}

static int load_train(qp_run *r, hid_t f, char *err, size_t errlen)
{
    /* The series a figure reads (the schema names them; phases from
     * version 2 on); the shortest length is the number of complete rows. */
    static const char *const used[] = {"step", "loss", "step_ms", "data_wait_ms", "tokens_per_s"};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "train/%s", used[i]);
        if (!has_path(f, path)) {
            snprintf(err, errlen, "%s: not a qprec run file (no /%s)", r->path, path);
            return -1;
        }
    }
    size_t n[6 + QP_PHASE_COUNT];
    if (read_col(r, f, QP_RS_TRAIN, "step", (void **)&r->step, &n[0], err, errlen) ||
        read_col(r, f, QP_RS_TRAIN, "loss", (void **)&r->loss, &n[1], err, errlen) ||
        read_col(r, f, QP_RS_TRAIN, "step_ms", (void **)&r->step_ms, &n[2], err, errlen) ||
        read_col(r, f, QP_RS_TRAIN, "data_wait_ms", (void **)&r->data_wait_ms, &n[3], err, errlen) ||
        read_col(r, f, QP_RS_TRAIN, "tokens_per_s", (void **)&r->tokens_per_s, &n[4], err, errlen))
        return -1;
    int k = 5;
    for (int p = 0; p < QP_PHASE_COUNT; p++) {
        const qp_runcol *c = qp_runcol_find(QP_RS_TRAIN, qp_phases[p].column);
        char path[128];
        snprintf(path, sizeof path, "train/%s", c->name);
        if (c->since > r->version || !has_path(f, path)) continue; /* not profiled (NULL) */
        if (read_col(r, f, QP_RS_TRAIN, c->name, (void **)&r->phase_ms[p], &n[k++], err, errlen)) return -1;
    }
    if (qp_runcol_find(QP_RS_TRAIN, "threads")->since <= r->version && has_path(f, "train/threads") &&
        read_col(r, f, QP_RS_TRAIN, "threads", (void **)&r->threads, &n[k++], err, errlen))
        return -1;
    size_t m = n[0];
    for (int i = 1; i < k; i++)
        if (n[i] < m) m = n[i];
    r->n_train = m;
    if (m == 0) {
        snprintf(err, errlen, "%s: empty run file (no /train rows)", r->path);
        return QP_RUN_EMPTY;
    }
    return 0;
}

static int load_eval(qp_run *r, hid_t f, char *err, size_t errlen)
{
    if (!has_path(f, "eval/step") || !has_path(f, "eval/val_loss")) return 0; /* no validation logged */
    size_t a, b;
    if (read_col(r, f, QP_RS_EVAL, "step", (void **)&r->eval_step, &a, err, errlen) ||
        read_col(r, f, QP_RS_EVAL, "val_loss", (void **)&r->val_loss, &b, err, errlen))
        return -1;
    r->n_eval = a < b ? a : b;
    return 0;
}

static int load_table(qp_run *r, hid_t f, const char *name, hid_t (*mk)(void), size_t el, void **buf, size_t *n,
                      char *err, size_t errlen)
{
    if (!has_path(f, name)) return 0; /* an absent table has no rows */
    hid_t t = mk();
    int rc = read_1d(f, r->path, name, t, el, buf, n, err, errlen);
    H5Tclose(t);
    return rc;
}

static int load_state(qp_run *r, hid_t f)
{
    status_rec *s = NULL;
    size_t n = 0;
    char dummy[8];
    if (load_table(r, f, "status", status_type, sizeof *s, (void **)&s, &n, dummy, sizeof dummy) == 0 && n)
        memcpy(r->state, s[n - 1].state, sizeof r->state);
    free(s); /* a missing or odd status table only loses the state, never the plot */
    return 0;
}

int qp_run_load(qp_run *r, const char *path, unsigned what, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->seed = -1;
    qp_h5_quiet();

    if (qp_h5_check_file(path, err, errlen)) return -1;
    r->path = dup_str(path);
    if (!r->path) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    hid_t f = (hid_t)qp_h5_open_read(path, 1);
    if (f < 0) {
        snprintf(err, errlen, "%s: cannot open the HDF5 file (damaged, or being created right now)", path);
        qp_run_free(r);
        return -1;
    }
    int rc = -1;
    attr_ctx ac = {r, 0, 0};
    hsize_t idx = 0;
    H5Aiterate2(f, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_cb, &ac);
    if (ac.failed) {
        snprintf(err, errlen, "%s: out of memory reading attributes", path);
        goto out;
    }
    if (r->nattrs) qsort(r->attrs, (size_t)r->nattrs, sizeof *r->attrs, cmp_attr);
    if (!has_path(f, "train") && H5Aexists(f, QP_CKPT_MARKER) > 0) {
        snprintf(err, errlen, "%s: a qtrain checkpoint, not a run file", path);
        rc = QP_RUN_CKPT;
        goto out;
    }
    if (qp_runschema_check_version(qp_run_attr(r, QP_RUNFILE_SCHEMA_ATTR), path, "qplot", &r->version, err, errlen))
        goto out;
    if (!has_path(f, "train")) {
        snprintf(err, errlen, "%s: not a qprec run file (no /train)", path);
        goto out;
    }
    if ((rc = load_train(r, f, err, errlen)) != 0) goto out;
    rc = -1;
    r->recipe = qp_run_attr(r, "recipe");
    if (!r->recipe || !*r->recipe) {
        snprintf(err, errlen, "%s: not a qprec run file (no 'recipe' attribute)", path);
        goto out;
    }
    const char *seed = qp_run_attr(r, "seed");
    if (seed) {
        char *end;
        long long s = strtoll(seed, &end, 10);
        if (end != seed && *end == '\0') r->seed = s;
    }
    if (load_eval(r, f, err, errlen)) goto out;
    if ((what & QP_RUN_QERR) && load_table(r, f, "quant/error", qerr_type, sizeof(qp_qerr_rec), (void **)&r->qerr,
                                           &r->n_qerr, err, errlen))
        goto out;
    if ((what & QP_RUN_EVENTS) && load_table(r, f, "events/recalib", event_type, sizeof(qp_event_rec),
                                             (void **)&r->events, &r->n_events, err, errlen))
        goto out;
    if ((what & QP_RUN_OUTLIERS) && load_table(r, f, "quant/outliers", outlier_type, sizeof(qp_outlier_rec),
                                               (void **)&r->outliers, &r->n_outliers, err, errlen))
        goto out;
    /* the dataset's path from the schema (a table of version 5 and later) */
    if ((what & QP_RUN_BSCALES) &&
        load_table(r, f, qp_runsets[QP_RS_BSHIST].path, bshist_type, sizeof(qp_bshist_rec), (void **)&r->bshist,
                   &r->n_bshist, err, errlen))
        goto out;
    load_state(r, f);
    rc = 0;
out:
    H5Fclose(f);
    if (rc) qp_run_free(r);
    return rc;
}

void qp_run_free(qp_run *r)
{
    for (int i = 0; i < r->nattrs; i++) {
        free(r->attrs[i].key);
        free(r->attrs[i].value);
    }
    free(r->attrs);
    free(r->path);
    free(r->step);
    free(r->loss);
    free(r->step_ms);
    free(r->data_wait_ms);
    free(r->tokens_per_s);
    for (int p = 0; p < QP_PHASE_COUNT; p++) free(r->phase_ms[p]);
    free(r->threads);
    free(r->eval_step);
    free(r->val_loss);
    free(r->qerr);
    free(r->outliers);
    free(r->bshist);
    free(r->events);
    memset(r, 0, sizeof *r);
    r->seed = -1;
}
