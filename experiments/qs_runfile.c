/* qs_runfile.c — one run file to one summary row (see qs_runfile.h). */
#define _GNU_SOURCE /* F_OFD_GETLK */
#include "qs_runfile.h"
#include "qp_h5open.h"

#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "qp_h5err.h"

const char *const qs_event_kinds[QS_NKINDS] = {"scale_change", "overflow", "underflow", "nonfinite"};

/* qtrain holds an open-file-description write lock while it writes the file
 * (docs/runfile.md, "One writer"); F_OFD_GETLK sees it from here. */
static int writer_alive(const char *path)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    const int alive = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    return alive;
}

static hsize_t length(hid_t file, const char *name)
{
    const hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
    if (ds < 0) return (hsize_t)-1;
    const hid_t sp = H5Dget_space(ds), ft = H5Dget_type(ds);
    hsize_t n = (hsize_t)-1;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1) H5Sget_simple_extent_dims(sp, &n, NULL);
    /* a length the file does not hold is not read (nor allocated for) */
    if (n != (hsize_t)-1 && (ft < 0 || !qp_h5_data_present(ds, n, H5Tget_size(ft), 1ull << 26))) n = (hsize_t)-1;
    if (ft >= 0) H5Tclose(ft);
    if (sp >= 0) H5Sclose(sp);
    H5Dclose(ds);
    return n;
}

/* Rows [first, first+n) of a 1-D dataset (or table, with a compound mtype). */
static int read_rows(hid_t file, const char *name, hid_t mtype, hsize_t first, hsize_t n, void *out)
{
    if (n == 0) return 0;
    const hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
    if (ds < 0) return -1;
    const hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(1, &n, NULL);
    int ok = fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, &first, NULL, &n, NULL) >= 0 &&
             H5Dread(ds, mtype, ms, fs, H5P_DEFAULT, out) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    H5Dclose(ds);
    return ok ? 0 : -1;
}

/* A NUL-terminated string member of `size` bytes (HDF5 converts the file's
 * NUL-padded width into it, cutting what does not fit). */
static hid_t str_type(size_t size)
{
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A string root attribute (malloc'ed), NULL when absent or not one string. */
static char *read_attr_str(hid_t file, const char *name)
{
    if (H5Aexists(file, name) <= 0) return NULL;
    const hid_t a = H5Aopen(file, name, H5P_DEFAULT);
    if (a < 0) return NULL;
    const hid_t sp = H5Aget_space(a), ft = H5Aget_type(a);
    const int one = sp >= 0 && H5Sget_simple_extent_type(sp) != H5S_NULL && H5Sget_simple_extent_npoints(sp) == 1 &&
                    ft >= 0 && H5Tget_class(ft) == H5T_STRING && H5Tis_variable_str(ft) > 0;
    if (sp >= 0) H5Sclose(sp);
    if (ft >= 0) H5Tclose(ft);
    char *v = NULL, *out = NULL;
    if (one) {
        const hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        H5Tset_cset(t, H5T_CSET_UTF8);
        if (H5Aread(a, t, &v) >= 0 && v) out = strdup(v);
        if (v) H5free_memory(v);
        H5Tclose(t);
    }
    H5Aclose(a);
    return out ? out : one ? NULL : strdup("(not a string)");
}

/* A numeric root attribute (the run file stores every attribute as text);
 * out is left alone when it is absent or not a number. */
static void read_attr_num(hid_t file, const char *name, double *out)
{
    char *v = read_attr_str(file, name);
    if (v) {
        char *end;
        const double x = strtod(v, &end);
        if (end != v && !*end) *out = x;
    }
    free(v);
}

static int read_attr_int(hid_t file, const char *name, int *out)
{
    if (H5Aexists(file, name) <= 0) return -1;
    const hid_t a = H5Aopen(file, name, H5P_DEFAULT);
    if (a < 0) return -1;
    /* one string only: H5Aread writes every element of an array attribute */
    const hid_t sp = H5Aget_space(a);
    const int one = sp >= 0 && H5Sget_simple_extent_type(sp) != H5S_NULL && H5Sget_simple_extent_npoints(sp) == 1;
    if (sp >= 0) H5Sclose(sp);
    if (!one) {
        H5Aclose(a);
        return -1;
    }
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    char *v = NULL;
    const int ok = H5Aread(a, t, &v) >= 0 && v;
    char *end = NULL;
    const long n = ok ? strtol(v, &end, 10) : 0;
    if (ok && end != v && n >= 0 && n <= 1 << 20) *out = (int)n; /* a layer count, not an allocation size */
    if (v) H5free_memory(v);
    H5Tclose(t);
    H5Aclose(a);
    return ok ? 0 : -1;
}

static double median(double *v, hsize_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int read_train(hid_t file, int version, double target, qs_runstats *s, const char **what)
{
    /* the series read here (and, from version 2 on, the phases): the shortest is the row count */
    static const char *const used[] = {"step", "loss", "step_ms", "data_wait_ms", "tokens_per_s"};
    static char names[QP_PHASE_COUNT + 8][96];
    hsize_t n = (hsize_t)-1;
    for (int i = 0; i < (int)(sizeof used / sizeof used[0]) + QP_PHASE_COUNT; i++) {
        const int nu = (int)(sizeof used / sizeof used[0]);
        const qp_runcol *c = qp_runcol_find(QP_RS_TRAIN, i < nu ? used[i] : qp_phases[i - nu].column);
        if (c->since > version) {
            if (i >= nu) names[i - nu][0] = 0;
            continue;
        }
        char *path = i < nu ? names[QP_PHASE_COUNT + i] : names[i - nu];
        snprintf(path, 96, "train/%s", c->name);
        if (i >= nu && H5Lexists(file, "train", H5P_DEFAULT) > 0 && H5Lexists(file, path, H5P_DEFAULT) <= 0) {
            path[0] = 0; /* a phase this file does not have: not profiled */
            continue;
        }
        const hsize_t m = length(file, path);
        if (m == (hsize_t)-1) {
            *what = path;
            return -1;
        }
        if (m < n) n = m;
    }
    s->steps = (int64_t)n;
    s->final_train = s->tokps_median = s->wait_share = s->step_ms_median = s->threads_median = NAN;
    for (int p = 0; p < QP_PHASE_COUNT; p++) s->phase_share[p] = NAN;
    s->steps_to_target = -1;
    if (n == 0) return 0;
    int64_t *step = malloc(n * sizeof *step);
    double *loss = malloc(n * sizeof *loss), *ms = malloc(n * sizeof *ms), *tok = malloc(n * sizeof *tok),
           *ph = malloc(n * sizeof *ph);
    const char *bad = NULL;
    if (!step || !loss || !ms || !tok || !ph) bad = "train (out of memory)";
    else if (read_rows(file, "train/step", H5T_NATIVE_INT64, 0, n, step)) bad = "train/step";
    else if (read_rows(file, "train/loss", H5T_NATIVE_DOUBLE, 0, n, loss)) bad = "train/loss";
    else if (read_rows(file, "train/step_ms", H5T_NATIVE_DOUBLE, 0, n, ms)) bad = "train/step_ms";
    else if (read_rows(file, "train/tokens_per_s", H5T_NATIVE_DOUBLE, 0, n, tok)) bad = "train/tokens_per_s";
    const int rc = bad ? -1 : 0;
    if (bad) {
        *what = bad;
        goto done;
    }
    const hsize_t k = n < 10 ? n : 10;
    double sum = 0;
    for (hsize_t i = n - k; i < n; i++) sum += loss[i];
    s->final_train = sum / (double)k;
    if (!isnan(target))
        for (hsize_t i = 9; i < n; i++) {
            double w = 0;
            for (hsize_t j = i - 9; j <= i; j++) w += loss[j];
            if (w / 10.0 <= target) {
                s->steps_to_target = step[i];
                break;
            }
        }
    /* each phase's share of the step time, over the rows that measured it */
    for (int p = 0; p < QP_PHASE_COUNT; p++) {
        const qp_runcol *c = qp_runcol_find(QP_RS_TRAIN, qp_phases[p].column);
        if (c->since > version || !names[p][0]) continue; /* not profiled */
        if (read_rows(file, names[p], H5T_NATIVE_DOUBLE, 0, n, ph)) {
            *what = names[p];
            free(step), free(loss), free(ms), free(tok), free(ph);
            return -1;
        }
        double sp = 0, st = 0;
        for (hsize_t i = 0; i < n; i++)
            if (!isnan(ph[i])) sp += ph[i], st += ms[i];
        s->phase_share[p] = st > 0 ? sp / st : NAN;
    }
    s->wait_share = s->phase_share[QP_PHASE_DATA];
    s->tokps_median = median(tok, n);
    s->step_ms_median = median(ms, n);
    /* the thread counts, from the version that records them (ph is free scratch now) */
    if (qp_runcol_find(QP_RS_TRAIN, "threads")->since <= version) {
        const hsize_t m = length(file, "train/threads"), k = m < n ? m : n;
        if (m == (hsize_t)-1 || read_rows(file, "train/threads", H5T_NATIVE_DOUBLE, 0, k, ph)) {
            *what = "train/threads";
            free(step), free(loss), free(ms), free(tok), free(ph);
            return -1;
        }
        hsize_t counted = 0;
        for (hsize_t i = 0; i < k; i++)
            if (ph[i] > 0) ph[counted++] = ph[i];
        if (counted) s->threads_median = median(ph, counted);
    }
done:
    free(step), free(loss), free(ms), free(tok), free(ph);
    return rc;
}

static int read_val(hid_t file, qs_runstats *s)
{
    const hsize_t n = length(file, "eval/val_loss"), ns = length(file, "eval/step");
    if (n == (hsize_t)-1 || ns == (hsize_t)-1) return -1;
    const hsize_t m = n < ns ? n : ns;
    s->final_val = NAN;
    return m ? read_rows(file, "eval/val_loss", H5T_NATIVE_DOUBLE, m - 1, 1, &s->final_val) : 0;
}

static int read_status(hid_t file, qs_runstats *s)
{
    const hsize_t n = length(file, "status");
    if (n == (hsize_t)-1) return -1;
    if (n == 0) return 0;
    typedef struct {
        char state[32], message[520];
    } status_row;
    status_row row;
    const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof row), st = str_type(sizeof row.state), sm = str_type(sizeof row.message);
    H5Tinsert(t, "state", offsetof(status_row, state), st);
    H5Tinsert(t, "message", offsetof(status_row, message), sm);
    const int rc = read_rows(file, "status", t, n - 1, 1, &row);
    H5Tclose(t), H5Tclose(st), H5Tclose(sm);
    if (!rc) {
        snprintf(s->state, sizeof s->state, "%s", row.state);
        snprintf(s->message, sizeof s->message, "%s", row.message);
    }
    return rc;
}

static int read_events(hid_t file, qs_runstats *s)
{
    const hsize_t n = length(file, "events/recalib"), nd = length(file, "events/divergence");
    if (n == (hsize_t)-1 || nd == (hsize_t)-1) return -1;
    s->divergences = (int64_t)nd;
    if (n == 0) return 0;
    typedef struct {
        char kind[64];
    } row;
    row *rows = malloc(n * sizeof *rows);
    if (!rows) return -1;
    const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(row)), sk = str_type(sizeof rows->kind);
    H5Tinsert(t, "kind", 0, sk);
    const int rc = read_rows(file, "events/recalib", t, 0, n, rows);
    H5Tclose(t), H5Tclose(sk);
    for (hsize_t i = 0; !rc && i < n; i++)
        for (int k = 0; k < QS_NKINDS; k++)
            if (!strcmp(rows[i].kind, qs_event_kinds[k])) s->events[k]++;
    free(rows);
    return rc;
}

static int read_qerr(hid_t file, qs_runstats *s)
{
    const hsize_t n = length(file, "quant/error");
    if (n == (hsize_t)-1) return -1;
    typedef struct {
        int64_t layer;
        double rel_l2;
    } row;
    row *rows = malloc((n ? n : 1) * sizeof *rows);
    if (!rows) return -1;
    const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(row));
    H5Tinsert(t, "layer", offsetof(row, layer), H5T_NATIVE_INT64);
    H5Tinsert(t, "rel_l2", offsetof(row, rel_l2), H5T_NATIVE_DOUBLE);
    int rc = read_rows(file, "quant/error", t, 0, n, rows);
    H5Tclose(t);
    int nl = s->layers > 0 ? s->layers : 0;
    for (hsize_t i = 0; !rc && i < n; i++)
        if (rows[i].layer >= nl && rows[i].layer < 1 << 20) nl = (int)rows[i].layer + 1;
    double *sum = calloc((size_t)(nl ? nl : 1), sizeof *sum);
    int64_t *cnt = calloc((size_t)(nl ? nl : 1), sizeof *cnt);
    if (!rc && sum && cnt) {
        for (hsize_t i = 0; i < n; i++)
            if (rows[i].layer >= 0 && rows[i].layer < nl && isfinite(rows[i].rel_l2))
                sum[rows[i].layer] += rows[i].rel_l2, cnt[rows[i].layer]++;
        for (int l = 0; l < nl; l++) sum[l] = cnt[l] ? sum[l] / (double)cnt[l] : NAN;
        if (nl) { /* no layers, no array: nqerr and qerr agree */
            s->qerr = sum, s->nqerr = nl;
            sum = NULL;
        }
    } else {
        rc = -1;
    }
    free(sum), free(cnt), free(rows);
    return rc;
}

int qs_runfile_read(const char *path, double target_loss, qs_runstats *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->final_train = s->final_val = s->tokps_median = s->wait_share = s->step_ms_median = s->threads_median = NAN;
    for (int p = 0; p < QP_PHASE_COUNT; p++) s->phase_share[p] = NAN;
    s->params_nonembedding = s->tokens_total = s->tokens_per_param = s->epochs = NAN;
    s->steps_to_target = -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    s->writer_alive = writer_alive(path);
    const hid_t file = (hid_t)qp_h5_open_read(path, 1);
    if (file < 0) {
        snprintf(err, errlen, "%s: not a readable run file (HDF5 cannot open it%s)", path,
                 s->writer_alive ? "; qtrain is still creating it" : "");
        return -1;
    }
    const char *what = NULL;
    read_attr_int(file, "layers", &s->layers); /* absent in a foreign file: layers come from the rows then */
    read_attr_num(file, "params_nonembedding", &s->params_nonembedding);
    read_attr_num(file, "tokens_total", &s->tokens_total);
    read_attr_num(file, "tokens_per_param", &s->tokens_per_param);
    read_attr_num(file, "epochs", &s->epochs);
    int version = 1;
    char *vs = read_attr_str(file, QP_RUNFILE_SCHEMA_ATTR);
    const int vrc = qp_runschema_check_version(vs, path, "qsweep", &version, err, errlen);
    free(vs);
    if (vrc) {
        H5Fclose(file);
        return -1;
    }
    if (read_status(file, s)) what = "status";
    else if (read_train(file, version, target_loss, s, &what)) {
    } else if (read_val(file, s)) what = "eval";
    else if (read_events(file, s)) what = "events";
    else if (read_qerr(file, s)) what = "quant/error";
    H5Fclose(file);
    if (what) {
        snprintf(err, errlen, "%s: cannot read /%s", path, what);
        qs_runstats_free(s);
        return -1;
    }
    return 0;
}

void qs_runstats_free(qs_runstats *s)
{
    free(s->qerr);
    s->qerr = NULL, s->nqerr = 0;
}
