/* qp_runread.h — what qplot's figures take from a qtrain run file
 * (docs/runfile.md).
 *
 * Owns: the columns a figure needs, loaded whole into a qp_run. The file is
 * read through the one run-file reader (train/runfile/qp_runfile.h: columns by their
 * schema names, SWMR, no file lock), in full, and closed again: a caller
 * that wants fresh rows loads again. While a run is live its /train (and
 * /eval) series may differ in length by a row: the shortest wins, as the
 * schema says.
 *
 * Failures are one line naming the file, without the program name:
 *   "PATH: No such file or directory", "PATH: not an HDF5 file",
 *   "PATH: not a qprec run file (no /train/loss)",
 *   "PATH: empty run file (no /train rows)",
 *   "PATH: run file schema version 3 is newer than this qplot reads (1 to 2); ...".
 * Files of every schema version up to qp_runschema.h's are read; columns a
 * version lacks are left out (NULL). */
#ifndef QP_RUNREAD_H
#define QP_RUNREAD_H

#include <stddef.h>
#include <stdint.h>

#include "qp_runfile.h"

/* Optional parts to load (the /train and /eval series are always loaded). */
#define QP_RUN_QERR 1u   /* /quant/error */
#define QP_RUN_EVENTS 2u /* /events/recalib */
#define QP_RUN_OUTLIERS 4u /* /quant/outliers */
#define QP_RUN_BSCALES 8u  /* the block-scale histograms (qp_runschema.h's QP_RS_BSHIST) */

/* Widths of the string columns plus the terminating NUL. */
#define QP_GEMM_LEN 33
#define QP_NAME_LEN 17

typedef struct {
    int64_t step, layer;
    char gemm[QP_GEMM_LEN], operand[QP_NAME_LEN], pass[QP_NAME_LEN];
    double rel_l2;
} qp_qerr_rec;

typedef struct {
    int64_t step, layer;
    char gemm[QP_GEMM_LEN], operand[QP_NAME_LEN], kind[QP_GEMM_LEN];
} qp_event_rec;

typedef struct {
    int64_t step, layer;
    char gemm[QP_GEMM_LEN];
    double amax, kurtosis, topk_frac;
} qp_outlier_rec;

/* One non-empty bin of a use's block-scale histogram (bin: the fixed bin
 * of quant/qp_metrics.h's QP_BSHIST_BINS, 0 zero, 1 NaN, k >= 2
 * floor(log2 s) = k - 151). */
typedef struct {
    int64_t step, layer;
    char gemm[QP_GEMM_LEN], operand[QP_NAME_LEN], pass[QP_NAME_LEN];
    int64_t bin, count;
} qp_bshist_rec;

typedef qp_runattr qp_attr;

typedef struct {
    char *path;
    qp_attr *attrs; /* every root attribute as text, sorted by key */
    int nattrs;
    const char *recipe; /* the "recipe" attribute (never NULL for a loaded run) */
    long long seed;     /* the "seed" attribute, -1 when absent */
    int version;        /* the file's schema version (qp_runschema.h) */

    size_t n_train;     /* rows every /train series holds */
    int64_t *step;
    double *loss, *step_ms, *data_wait_ms, *tokens_per_s;
    /* /train's column of each phase (qp_runschema.h qp_phases); NULL for a
     * file written before the phase profile (schema version 1) */
    double *phase_ms[QP_PHASE_COUNT];
    /* /train's OpenMP threads per step; NULL for a file written before the
     * column (schema version 4) */
    int64_t *threads;

    size_t n_eval;
    int64_t *eval_step;
    double *val_loss;

    size_t n_qerr;      /* 0 unless QP_RUN_QERR was asked for */
    qp_qerr_rec *qerr;
    size_t n_events;    /* 0 unless QP_RUN_EVENTS was asked for */
    qp_event_rec *events;
    size_t n_outliers;  /* 0 unless QP_RUN_OUTLIERS was asked for (and the file has the table: schema >= 3) */
    qp_outlier_rec *outliers;
    size_t n_bshist;    /* 0 unless QP_RUN_BSCALES was asked for (and the file has the table: schema >= 5) */
    qp_bshist_rec *bshist;

    char state[QP_NAME_LEN]; /* last /status row's state, "" when there is none */
} qp_run;

/* Load path into *r (zeroed first). Returns 0, or with err set and *r
 * holding nothing to free: QP_RUN_EMPTY for a run file without /train rows
 * (a run that has just started, or one that never logged a step),
 * QP_RUN_CKPT for a qtrain checkpoint (its root has the checkpoint marker,
 * train/runfile/qp_ckpt.h, and it has no /train), -1 for anything else. */
#define QP_RUN_EMPTY (-2)
#define QP_RUN_CKPT (-3)
int qp_run_load(qp_run *r, const char *path, unsigned what, char *err, size_t errlen);
void qp_run_free(qp_run *r);

/* Value of a root attribute, NULL when absent. */
const char *qp_run_attr(const qp_run *r, const char *key);

#endif
