/* qprec_runfile.c — the run-file writer (train/qp_runlog.c, the code qtrain
 * writes its run files with) behind flat functions for ctypes
 * (python/qprec/torch.py's RunLog). Built only where HDF5 is found
 * (python/CMakeLists.txt); qprec_has_runfile() says whether it was.
 *
 * Owns: a /train row made from column names and values, each looked up in
 * the schema by name (qp_runschema.c's qp_runcol_find: a column added there
 * is settable here without a change; the ones not given are NaN, or 0 for
 * integers), a block GEMM input's /quant/outliers row (train/qp_outliers.c,
 * the statistics qtrain computes), and attaching a file to a dispatch so its
 * quantization-error rows and recalibration events are written as qtrain's
 * are. Every row is
 * written and flushed by qp_runlog's rules (SWMR, datasets created up
 * front): a process killed between flushes leaves a readable file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_outliers.h"
#include "qp_recipe.h"
#include "qp_runlog.h"
#include "qprec_dispatch.h"

#define QPREC_EXPORT __attribute__((visibility("default")))

QPREC_EXPORT int qprec_has_runfile(void) { return 1; }

QPREC_EXPORT qp_runlog *qprec_runlog_create(const char *path, const char *const *keys, const char *const *values,
                                            int n, char *err, size_t errlen)
{
    qp_kv kv[256];
    if (n < 0 || n > (int)(sizeof kv / sizeof kv[0]))
        return snprintf(err, errlen, "%d attributes (at most %zu)", n, sizeof kv / sizeof kv[0]), NULL;
    for (int i = 0; i < n; i++) kv[i] = (qp_kv){keys[i], values[i]};
    return qp_runlog_create(path, kv, n, err, errlen);
}

/* One /train row: names[i] = values[i] for the schema's columns (numbers;
 * a uint64 or int64 column takes the value converted). */
QPREC_EXPORT int qprec_runlog_train(qp_runlog *l, const char *const *names, const double *values, int n, char *err,
                                    size_t errlen)
{
    qp_train_row row;
    memset(&row, 0, sizeof row);
    const qp_runset *set = &qp_runsets[QP_RS_TRAIN];
    for (int i = 0; i < set->ncols; i++)
        if (set->cols[i].kind == QP_RC_F64) *(double *)((char *)&row + set->cols[i].offset) = NAN;
    for (int i = 0; i < n; i++) {
        const qp_runcol *c = qp_runcol_find(QP_RS_TRAIN, names[i]);
        if (!c) return snprintf(err, errlen, "the run file's %s has no column %s", set->path, names[i]), -1;
        char *at = (char *)&row + c->offset;
        switch (c->kind) {
        case QP_RC_I64: *(int64_t *)at = (int64_t)values[i]; break;
        case QP_RC_U64: *(uint64_t *)at = (uint64_t)values[i]; break;
        case QP_RC_F64: *(double *)at = values[i]; break;
        case QP_RC_STR: return snprintf(err, errlen, "%s/%s is text, not a number", set->path, names[i]), -1;
        }
    }
    return qp_runlog_train(l, &row, err, errlen);
}

QPREC_EXPORT int qprec_runlog_eval(qp_runlog *l, int64_t step, double loss, char *err, size_t errlen)
{
    return qp_runlog_eval(l, step, loss, err, errlen);
}

QPREC_EXPORT int qprec_runlog_status(qp_runlog *l, int64_t step, const char *state, const char *message, char *err,
                                     size_t errlen)
{
    return qp_runlog_status(l, step, state, message, err, errlen);
}

QPREC_EXPORT int qprec_runlog_flush(qp_runlog *l, char *err, size_t errlen) { return qp_runlog_flush(l, err, errlen); }
QPREC_EXPORT int qprec_runlog_close(qp_runlog *l, char *err, size_t errlen) { return qp_runlog_close(l, err, errlen); }

/* The /quant/outliers row of block GEMM g's input X (M tokens x C channels)
 * in `layer` at `step`. */
QPREC_EXPORT int qprec_runlog_outliers(qp_runlog *l, int64_t step, int layer, int g, const float *X, int64_t M, int C,
                                       char *err, size_t errlen)
{
    if ((unsigned)g >= QP_BLOCK_GEMMS || M < 1 || C < 1)
        return snprintf(err, errlen, "outliers of GEMM %d (%lldx%d)", g, (long long)M, C), -1;
    qp_outlier_col *cols = malloc((size_t)C * sizeof *cols);
    double *scratch = malloc((size_t)C * sizeof *scratch);
    if (!cols || !scratch) {
        free(cols), free(scratch);
        return snprintf(err, errlen, "out of memory"), -1;
    }
    qp_outlier_row row;
    memset(&row, 0, sizeof row);
    qp_outlier_stats(X, M, C, cols, scratch, &row);
    free(cols), free(scratch);
    row.step = step;
    row.layer = layer;
    row.gemm = qp_gemm_name((qp_gemm_id)g);
    return qp_runlog_outlier(l, &row, err, errlen);
}

static int sink_qerr(void *user, const qp_qerr_row *row, char *err, size_t errlen)
{
    return qp_runlog_qerr(user, row, err, errlen);
}

static int sink_event(void *user, const qp_event_row *row, char *err, size_t errlen)
{
    return qp_runlog_event(user, row, err, errlen);
}

/* d's quantization-error rows and events into l from now on (l NULL: nowhere). */
QPREC_EXPORT void qprec_runlog_attach(qprec_dispatch *d, qp_runlog *l)
{
    static const qprec_row_sink sink = {.qerr = sink_qerr, .event = sink_event};
    qprec_dispatch_set_sink(d, l ? &sink : NULL, l);
}
