/* qp_runlog.h — the HDF5 run file every training run writes.
 *
 * Owns: writing the run file's schema (qp_runschema.h: every dataset and
 * column, as a table; documented in docs/runfile.md) and keeping it
 * readable while it is written and after a kill: the file is opened for SWMR
 * writing (a reader may open it with h5py's swmr=True while the run goes on),
 * every dataset is created up front, rows are appended and flushed.
 *   /                     attributes: the full configuration (strings), and
 *                         runfile_schema (the schema version)
 *   /train/NAME, /eval/NAME   1-D datasets, one per column, one entry per
 *                         optimizer step (evaluation)
 *   /quant/error, /quant/outliers, /events/recalib, /events/divergence,
 *   /status               tables
 *                         (/status: the last row is the run's current state)
 */
#ifndef QP_RUNLOG_H
#define QP_RUNLOG_H

#include <stddef.h>
#include <stdint.h>

#include "qp_runschema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *key, *value;
} qp_kv;

typedef struct qp_runlog qp_runlog;

/* Create (truncate) a run file with these root attributes. NULL + err on failure. */
qp_runlog *qp_runlog_create(const char *path, const qp_kv *attrs, int nattrs, char *err, size_t errlen);
/* Reopen a run file to continue it after a checkpoint at last_step: rows with
 * step > last_step are dropped (they are about to be recomputed); attributes stay.
 * A file of an older schema version gets the series added since (NaN for
 * its earlier rows) and the current version; a newer one is refused. */
qp_runlog *qp_runlog_resume(const char *path, int64_t last_step, char *err, size_t errlen);

/* The record functions and qp_runlog_flush do nothing (and succeed) when l is
 * NULL: a data-parallel rank other than 0 has no run file. */
int qp_runlog_train(qp_runlog *l, const qp_train_row *r, char *err, size_t errlen);
int qp_runlog_eval(qp_runlog *l, int64_t step, double val_loss, char *err, size_t errlen);
int qp_runlog_qerr(qp_runlog *l, const qp_qerr_row *r, char *err, size_t errlen);
int qp_runlog_outlier(qp_runlog *l, const qp_outlier_row *r, char *err, size_t errlen);
/* One use's block-scale statistics: its /quant/block_scales row and a
 * /quant/block_scale_hist row per non-empty bin of hist (nbins bins). */
int qp_runlog_bscale(qp_runlog *l, const qp_bscale_row *r, const int64_t *hist, int nbins, char *err, size_t errlen);
int qp_runlog_event(qp_runlog *l, const qp_event_row *r, char *err, size_t errlen);
int qp_runlog_divergence(qp_runlog *l, int64_t step, double loss, const char *reason, const char *action, char *err,
                         size_t errlen);
int qp_runlog_status(qp_runlog *l, int64_t step, const char *state, const char *message, char *err, size_t errlen);
/* Write buffered rows and flush the file: after this a reader sees every row. */
int qp_runlog_flush(qp_runlog *l, char *err, size_t errlen);
/* Flush and close; l is freed even on failure. */
int qp_runlog_close(qp_runlog *l, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
