/* qp_runread.c — a run file's figure columns into a qp_run (see
 * qp_runread.h), through train/runfile/qp_runfile.h. */
#include "qp_runread.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything one load allocates hangs off the qp_run; on failure it is all
 * released through qp_run_free. */

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

/* Rows [0, n) of a numeric series column, into a fresh buffer of int64_t
 * (i64) or double. */
static int series(qp_runfile *rf, qp_runset_id set, const char *col, int i64, size_t n, void **out, char *err,
                  size_t errlen)
{
    *out = calloc(n ? n : 1, 8);
    if (!*out) {
        snprintf(err, errlen, "%s: out of memory reading %s", qp_runfile_path(rf), col);
        return -1;
    }
    return i64 ? qp_runfile_read_i64(rf, set, col, 0, n, *out, err, errlen)
               : qp_runfile_read_f64(rf, set, col, 0, n, *out, err, errlen);
}

/* The /train series a figure reads (phases and threads where the file has
 * them); the shortest length is the number of complete rows. */
static int load_train(qp_run *r, qp_runfile *rf, char *err, size_t errlen)
{
    typedef struct {
        const char *col;
        int i64;
        void **dst;
    } want_col;
    want_col want[7 + QP_PHASE_COUNT] = {
        {"step", 1, (void **)&r->step},
        {"loss", 0, (void **)&r->loss},
        {"step_ms", 0, (void **)&r->step_ms},
        {"data_wait_ms", 0, (void **)&r->data_wait_ms},
        {"tokens_per_s", 0, (void **)&r->tokens_per_s},
    };
    int k = 5;
    for (int p = 0; p < QP_PHASE_COUNT; p++) /* not profiled (schema version 1): NULL */
        if (qp_runfile_has(rf, QP_RS_TRAIN, qp_phases[p].column))
            want[k++] = (want_col){qp_phases[p].column, 0, (void **)&r->phase_ms[p]};
    if (qp_runfile_has(rf, QP_RS_TRAIN, "threads")) want[k++] = (want_col){"threads", 1, (void **)&r->threads};
    long long m = -1;
    for (int i = 0; i < k; i++) {
        const long long n = qp_runfile_rows(rf, QP_RS_TRAIN, want[i].col, err, errlen);
        if (n < 0) return -1;
        if (m < 0 || n < m) m = n;
    }
    r->n_train = (size_t)m;
    if (m == 0) {
        snprintf(err, errlen, "%s: empty run file (no /train rows)", r->path);
        return QP_RUN_EMPTY;
    }
    for (int i = 0; i < k; i++)
        if (series(rf, QP_RS_TRAIN, want[i].col, want[i].i64, r->n_train, want[i].dst, err, errlen)) return -1;
    return 0;
}

static int load_eval(qp_run *r, qp_runfile *rf, char *err, size_t errlen)
{
    if (!qp_runfile_has(rf, QP_RS_EVAL, "step") || !qp_runfile_has(rf, QP_RS_EVAL, "val_loss")) return 0; /* none logged */
    const long long a = qp_runfile_rows(rf, QP_RS_EVAL, "step", err, errlen);
    const long long b = a < 0 ? -1 : qp_runfile_rows(rf, QP_RS_EVAL, "val_loss", err, errlen);
    if (b < 0) return -1;
    r->n_eval = (size_t)(a < b ? a : b);
    return series(rf, QP_RS_EVAL, "step", 1, r->n_eval, (void **)&r->eval_step, err, errlen) ||
           series(rf, QP_RS_EVAL, "val_loss", 0, r->n_eval, (void **)&r->val_loss, err, errlen);
}

#define BIND(type, field) {#field, offsetof(type, field), sizeof(((type *)0)->field)}
static const qp_runbind QERR_COLS[] = {BIND(qp_qerr_rec, step), BIND(qp_qerr_rec, layer), BIND(qp_qerr_rec, gemm),
                                       BIND(qp_qerr_rec, operand), BIND(qp_qerr_rec, pass), BIND(qp_qerr_rec, rel_l2)};
static const qp_runbind EVENT_COLS[] = {BIND(qp_event_rec, step), BIND(qp_event_rec, layer), BIND(qp_event_rec, gemm),
                                        BIND(qp_event_rec, operand), BIND(qp_event_rec, kind)};
static const qp_runbind OUTLIER_COLS[] = {BIND(qp_outlier_rec, step), BIND(qp_outlier_rec, layer),
                                          BIND(qp_outlier_rec, gemm), BIND(qp_outlier_rec, amax),
                                          BIND(qp_outlier_rec, kurtosis), BIND(qp_outlier_rec, topk_frac)};
static const qp_runbind BSHIST_COLS[] = {BIND(qp_bshist_rec, step),    BIND(qp_bshist_rec, layer),
                                         BIND(qp_bshist_rec, gemm),    BIND(qp_bshist_rec, operand),
                                         BIND(qp_bshist_rec, pass),    BIND(qp_bshist_rec, bin),
                                         BIND(qp_bshist_rec, count)};
#define NB(a) ((int)(sizeof a / sizeof a[0]))

/* The last /status row's state; a missing or odd status table only loses
 * the state, never the plot. */
static void load_state(qp_run *r, qp_runfile *rf)
{
    char dummy[8];
    const long long n =
        qp_runfile_has(rf, QP_RS_STATUS, NULL) ? qp_runfile_rows(rf, QP_RS_STATUS, "state", dummy, sizeof dummy) : 0;
    char s[QP_NAME_LEN];
    if (n > 0 && qp_runfile_read_str(rf, QP_RS_STATUS, "state", (size_t)n - 1, 1, s, sizeof s, dummy, sizeof dummy) == 0)
        memcpy(r->state, s, sizeof r->state);
}

int qp_run_load(qp_run *r, const char *path, unsigned what, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->seed = -1;
    qp_runfile *rf = NULL;
    const int orc = qp_runfile_open(&rf, path, "qplot", err, errlen);
    if (orc) return orc == QP_RUNFILE_CKPT ? QP_RUN_CKPT : -1;
    int rc = -1;
    r->path = strdup(path);
    if (!r->path) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    r->version = qp_runfile_version(rf);
    r->attrs = qp_runfile_take_attrs(rf, &r->nattrs);
    if ((rc = load_train(r, rf, err, errlen)) != 0) goto out;
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
    if (load_eval(r, rf, err, errlen)) goto out;
    if ((what & QP_RUN_QERR) && qp_runfile_read_table(rf, QP_RS_QERR, QERR_COLS, NB(QERR_COLS), sizeof(qp_qerr_rec),
                                           (void **)&r->qerr, &r->n_qerr, err, errlen))
        goto out;
    if ((what & QP_RUN_EVENTS) && qp_runfile_read_table(rf, QP_RS_RECALIB, EVENT_COLS, NB(EVENT_COLS), sizeof(qp_event_rec),
                                             (void **)&r->events, &r->n_events, err, errlen))
        goto out;
    if ((what & QP_RUN_OUTLIERS) && qp_runfile_read_table(rf, QP_RS_OUTLIERS, OUTLIER_COLS, NB(OUTLIER_COLS),
                                               sizeof(qp_outlier_rec), (void **)&r->outliers, &r->n_outliers, err,
                                               errlen))
        goto out;
    if ((what & QP_RUN_BSCALES) && qp_runfile_read_table(rf, QP_RS_BSHIST, BSHIST_COLS, NB(BSHIST_COLS),
                                                          sizeof(qp_bshist_rec), (void **)&r->bshist, &r->n_bshist,
                                                          err, errlen))
        goto out;
    load_state(r, rf);
    rc = 0;
out:
    qp_runfile_close(rf);
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
    free(r->bshist);
    free(r->outliers);
    free(r->events);
    memset(r, 0, sizeof *r);
    r->seed = -1;
}
