/* qs_runfile.c — one run file to one summary row (see qs_runfile.h); the
 * file is read through the one run-file reader, train/runfile/qp_runfile.h. */
#define _GNU_SOURCE /* F_OFD_GETLK */
#include "qs_runfile.h"
#include "qp_runfile.h"

#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A numeric root attribute (the run file stores every attribute as text);
 * out is left alone when it is absent or not a number. */
static void attr_num(const qp_runfile *rf, const char *name, double *out)
{
    const char *v = qp_runfile_attr(rf, name);
    if (v) {
        char *end;
        const double x = strtod(v, &end);
        if (end != v && !*end) *out = x;
    }
}

/* The layer count: a count, not an allocation size, so at most 2^20. */
static void attr_layers(const qp_runfile *rf, int *out)
{
    const char *v = qp_runfile_attr(rf, "layers");
    if (!v) return;
    char *end = NULL;
    const long n = strtol(v, &end, 10);
    if (end != v && n >= 0 && n <= 1 << 20) *out = (int)n;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Rows of column col of set, the least of *n and it; -1 with err set when
 * the file cannot give them. */
static int shortest(const qp_runfile *rf, qp_runset_id set, const char *col, long long *n, char *err, size_t errlen)
{
    const long long m = qp_runfile_rows(rf, set, col, err, errlen);
    if (m < 0) return -1;
    if (*n < 0 || m < *n) *n = m;
    return 0;
}

static int read_train(const qp_runfile *rf, double target, qs_runstats *s, char *err, size_t errlen)
{
    /* the series read here and the phases the file profiles: the shortest is the row count */
    static const char *const used[] = {"step", "loss", "step_ms", "data_wait_ms", "tokens_per_s"};
    int profiled[QP_PHASE_COUNT];
    long long rows = -1;
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        if (shortest(rf, QP_RS_TRAIN, used[i], &rows, err, errlen)) return -1;
    for (int p = 0; p < QP_PHASE_COUNT; p++)
        if ((profiled[p] = qp_runfile_has(rf, QP_RS_TRAIN, qp_phases[p].column)) &&
            shortest(rf, QP_RS_TRAIN, qp_phases[p].column, &rows, err, errlen))
            return -1;
    const size_t n = (size_t)rows;
    s->steps = (int64_t)n;
    s->final_train = s->tokps_median = s->wait_share = s->step_ms_median = s->threads_median = NAN;
    for (int p = 0; p < QP_PHASE_COUNT; p++) s->phase_share[p] = NAN;
    s->steps_to_target = -1;
    if (n == 0) return 0;
    int64_t *step = malloc(n * sizeof *step);
    double *loss = malloc(n * sizeof *loss), *ms = malloc(n * sizeof *ms), *tok = malloc(n * sizeof *tok),
           *ph = malloc(n * sizeof *ph);
    int rc = -1;
    if (!step || !loss || !ms || !tok || !ph) {
        snprintf(err, errlen, "%s: out of memory reading its /train rows", qp_runfile_path(rf));
        goto done;
    }
    if (qp_runfile_read_i64(rf, QP_RS_TRAIN, "step", 0, n, step, err, errlen) ||
        qp_runfile_read_f64(rf, QP_RS_TRAIN, "loss", 0, n, loss, err, errlen) ||
        qp_runfile_read_f64(rf, QP_RS_TRAIN, "step_ms", 0, n, ms, err, errlen) ||
        qp_runfile_read_f64(rf, QP_RS_TRAIN, "tokens_per_s", 0, n, tok, err, errlen))
        goto done;
    const size_t k = n < 10 ? n : 10;
    double sum = 0;
    for (size_t i = n - k; i < n; i++) sum += loss[i];
    s->final_train = sum / (double)k;
    if (!isnan(target))
        for (size_t i = 9; i < n; i++) {
            double w = 0;
            for (size_t j = i - 9; j <= i; j++) w += loss[j];
            if (w / 10.0 <= target) {
                s->steps_to_target = step[i];
                break;
            }
        }
    /* each phase's share of the step time, over the rows that measured it */
    for (int p = 0; p < QP_PHASE_COUNT; p++) {
        if (!profiled[p]) continue;
        if (qp_runfile_read_f64(rf, QP_RS_TRAIN, qp_phases[p].column, 0, n, ph, err, errlen)) goto done;
        double sp = 0, st = 0;
        for (size_t i = 0; i < n; i++)
            if (!isnan(ph[i])) sp += ph[i], st += ms[i];
        s->phase_share[p] = st > 0 ? sp / st : NAN;
    }
    s->wait_share = s->phase_share[QP_PHASE_DATA];
    s->tokps_median = median(tok, n);
    s->step_ms_median = median(ms, n);
    /* the thread counts, from the version that records them (ph is free scratch now) */
    if (qp_runcol_find(QP_RS_TRAIN, "threads")->since <= qp_runfile_version(rf)) {
        long long m = (long long)n;
        if (shortest(rf, QP_RS_TRAIN, "threads", &m, err, errlen) ||
            qp_runfile_read_f64(rf, QP_RS_TRAIN, "threads", 0, (size_t)m, ph, err, errlen))
            goto done;
        size_t counted = 0;
        for (size_t i = 0; i < (size_t)m; i++)
            if (ph[i] > 0) ph[counted++] = ph[i];
        if (counted) s->threads_median = median(ph, counted);
    }
    rc = 0;
done:
    free(step), free(loss), free(ms), free(tok), free(ph);
    return rc;
}

static int read_val(const qp_runfile *rf, qs_runstats *s, char *err, size_t errlen)
{
    long long m = -1;
    if (shortest(rf, QP_RS_EVAL, "val_loss", &m, err, errlen) || shortest(rf, QP_RS_EVAL, "step", &m, err, errlen))
        return -1;
    s->final_val = NAN;
    return m ? qp_runfile_read_f64(rf, QP_RS_EVAL, "val_loss", (size_t)m - 1, 1, &s->final_val, err, errlen) : 0;
}

static int read_status(const qp_runfile *rf, qs_runstats *s, char *err, size_t errlen)
{
    const long long n = qp_runfile_rows(rf, QP_RS_STATUS, "state", err, errlen);
    if (n <= 0) return (int)n;
    typedef struct {
        char state[32], message[520];
    } status_row;
    static const qp_runbind cols[] = {{"state", offsetof(status_row, state), sizeof((status_row *)0)->state},
                                      {"message", offsetof(status_row, message), sizeof((status_row *)0)->message}};
    status_row row;
    if (qp_runfile_read_rows(rf, QP_RS_STATUS, cols, 2, sizeof row, (size_t)n - 1, 1, &row, err, errlen)) return -1;
    snprintf(s->state, sizeof s->state, "%s", row.state);
    snprintf(s->message, sizeof s->message, "%s", row.message);
    return 0;
}

static int read_events(const qp_runfile *rf, qs_runstats *s, char *err, size_t errlen)
{
    const long long n = qp_runfile_rows(rf, QP_RS_RECALIB, "kind", err, errlen);
    const long long nd = n < 0 ? -1 : qp_runfile_rows(rf, QP_RS_DIVERGENCE, "step", err, errlen);
    if (nd < 0) return -1;
    s->divergences = (int64_t)nd;
    if (n == 0) return 0;
    typedef char kind[64];
    kind *rows = malloc((size_t)n * sizeof *rows);
    if (!rows) {
        snprintf(err, errlen, "%s: out of memory reading its recalibration events", qp_runfile_path(rf));
        return -1;
    }
    const int rc = qp_runfile_read_str(rf, QP_RS_RECALIB, "kind", 0, (size_t)n, rows[0], sizeof *rows, err, errlen);
    for (long long i = 0; !rc && i < n; i++)
        for (int k = 0; k < QS_NKINDS; k++)
            if (!strcmp(rows[i], qs_event_kinds[k])) s->events[k]++;
    free(rows);
    return rc;
}

static int read_qerr(const qp_runfile *rf, qs_runstats *s, char *err, size_t errlen)
{
    const long long n = qp_runfile_rows(rf, QP_RS_QERR, "layer", err, errlen);
    if (n < 0) return -1;
    typedef struct {
        int64_t layer;
        double rel_l2;
    } row;
    static const qp_runbind cols[] = {{"layer", offsetof(row, layer), 0}, {"rel_l2", offsetof(row, rel_l2), 0}};
    row *rows = malloc((n ? (size_t)n : 1) * sizeof *rows);
    int rc = rows ? qp_runfile_read_rows(rf, QP_RS_QERR, cols, 2, sizeof *rows, 0, (size_t)n, rows, err, errlen) : -1;
    int nl = s->layers > 0 ? s->layers : 0;
    for (long long i = 0; !rc && i < n; i++)
        if (rows[i].layer >= nl && rows[i].layer < 1 << 20) nl = (int)rows[i].layer + 1;
    double *sum = calloc((size_t)(nl ? nl : 1), sizeof *sum);
    int64_t *cnt = calloc((size_t)(nl ? nl : 1), sizeof *cnt);
    if (!rc && sum && cnt) {
        for (long long i = 0; i < n; i++)
            if (rows[i].layer >= 0 && rows[i].layer < nl && isfinite(rows[i].rel_l2))
                sum[rows[i].layer] += rows[i].rel_l2, cnt[rows[i].layer]++;
        for (int l = 0; l < nl; l++) sum[l] = cnt[l] ? sum[l] / (double)cnt[l] : NAN;
        if (nl) { /* no layers, no array: nqerr and qerr agree */
            s->qerr = sum, s->nqerr = nl;
            sum = NULL;
        }
    } else if (!rc) {
        snprintf(err, errlen, "%s: out of memory reading its quantization errors", qp_runfile_path(rf));
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
    s->writer_alive = writer_alive(path);
    qp_runfile *rf = NULL;
    if (qp_runfile_open(&rf, path, "qsweep", err, errlen)) return -1;
    attr_layers(rf, &s->layers); /* absent in a foreign file: layers come from the rows then */
    attr_num(rf, "params_nonembedding", &s->params_nonembedding);
    attr_num(rf, "tokens_total", &s->tokens_total);
    attr_num(rf, "tokens_per_param", &s->tokens_per_param);
    attr_num(rf, "epochs", &s->epochs);
    const int rc = read_status(rf, s, err, errlen) || read_train(rf, target_loss, s, err, errlen) ||
                   read_val(rf, s, err, errlen) || read_events(rf, s, err, errlen) || read_qerr(rf, s, err, errlen);
    qp_runfile_close(rf);
    if (rc) {
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

int qs_runfile_finished(const char *path)
{
    qs_runstats st;
    char err[600];
    if (access(path, F_OK) != 0 || qs_runfile_read(path, NAN, &st, err, sizeof err)) return 0;
    const int fin = !strcmp(st.state, "done") || !strcmp(st.state, "diverged");
    qs_runstats_free(&st);
    return fin;
}
