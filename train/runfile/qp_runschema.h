/* qp_runschema.h — the run file's schema: one table of every column.
 *
 * Owns: what a run file holds, as data. Each dataset the writer appends to
 * (qp_runset: /train, /eval, /quant/error, ...) is a list of columns
 * (qp_runcol: name, type, unit, meaning, the schema version that added it
 * and where the value sits in the dataset's row struct below). A group of
 * series (/train, /eval) stores each column as its own 1-D dataset
 * (/train/loss); a table stores one compound record per row. The writer
 * (qp_runlog.c) creates and fills exactly these; the one reader
 * (qp_runfile.h: qplot, qsweep, the tests) and the Python package (its
 * library exports this table) look columns up here by name; docs/runfile.md's tables are this table printed
 * (qp_runschema_markdown; the test runfile_docs compares them), so adding a
 * column is one row here.
 *
 * Versions: the root attribute "runfile_schema" holds QP_RUNFILE_SCHEMA.
 * Files without it are version 1 (qprec before the phase profile); 2 added
 * the phase columns, 3 the /quant/outliers table, 4 /train/threads, 5 the
 * /quant/block_scales and /quant/block_scale_hist tables. A column
 * with since > a file's version is absent from that file; readers do
 * without it. A file of a newer version than QP_RUNFILE_SCHEMA is refused
 * with one line (qp_runschema_check_version). No HDF5 here: the tools that
 * read run files compile this file in. */
#ifndef QP_RUNSCHEMA_H
#define QP_RUNSCHEMA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qp_prof.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QP_RUNFILE_SCHEMA 5
#define QP_RUNFILE_SCHEMA_ATTR "runfile_schema"

/* ---- the row of each dataset, as the writer takes it --------------------- */

typedef struct {
    int64_t step;
    double loss, lr, grad_norm, step_ms, data_wait_ms, tokens_per_s;
    uint64_t batch_hash;
    double comm_ms;    /* gradient/amax all-reduce time (0 in one process) */
    double power_w;    /* mean GPU board power over the step (NaN: not sampled) */
    double energy_j;   /* GPU energy since the run started (NaN: not sampled) */
    double gpu_util;   /* mean GPU utilization over the step, 0..100 (NaN: not sampled) */
    double grad_comm_rel_err; /* |g_comm - g_fp32| / |g_fp32| of a low-precision gradient all-reduce (NaN: fp32) */
    /* the phase profile (qp_prof.h; data wait and comm are above); NaN: not measured */
    double gemm_ms, quant_ms, attn_ms, rowops_ms, optim_ms;
    int64_t threads; /* OpenMP threads the step ran on */
} qp_train_row;

typedef struct {
    int64_t step;
    double val_loss;
} qp_eval_row;

typedef struct {
    int64_t step;
    int64_t layer;
    const char *gemm, *operand, *pass;  /* e.g. "fc", "x"|"w"|"dy", "fprop"|"dgrad"|"wgrad" */
    double rel_l2, snr_db, sat_frac, zero_frac, amax, scale;
} qp_qerr_row;

/* The per-block scale statistics of one quantized operand use (a qerr
 * row's tensor): quant/qp_metrics.h's qp_bscale_dist and element fractions,
 * under qprec.errors' keys. */
typedef struct {
    int64_t step;
    int64_t layer;
    const char *gemm, *operand, *pass, *format;
    int64_t n_blocks;
    double log2_std, saturated_frac, underflow_frac, elems_flushed_frac, elems_saturated_frac, dynamic_range_max_log2;
} qp_bscale_row;

/* One non-empty bin of that use's block_scale_hist. */
typedef struct {
    int64_t step;
    int64_t layer;
    const char *gemm, *operand, *pass;
    int64_t bin, count;
} qp_bshist_row;

typedef struct {
    int64_t step;
    int64_t layer;
    const char *gemm;                   /* the GEMM whose input (x, fprop) this is */
    int64_t tokens, channels, topk, top_channel;
    double amax, kurtosis, topk_frac, chan_amax_ratio;
} qp_outlier_row;

typedef struct {
    int64_t step;
    int64_t layer;
    const char *gemm, *operand, *kind;
    double old_scale, new_scale, amax;
} qp_event_row;

typedef struct {
    int64_t step;
    double loss;
    const char *reason, *action;
} qp_divergence_row;

typedef struct {
    int64_t step;
    const char *state, *message;
} qp_status_row;

/* ---- the schema ------------------------------------------------------------ */

typedef enum { QP_RC_I64, QP_RC_U64, QP_RC_F64, QP_RC_STR } qp_runcol_kind;

typedef struct {
    const char *name;
    qp_runcol_kind kind; /* int64, uint64, float64 (little-endian), or a fixed-width byte string */
    int width;           /* QP_RC_STR: bytes in the file, NUL-padded */
    int cut;             /* QP_RC_STR: free text, cut at the width (identifiers are refused instead) */
    const char *unit;    /* "" when it has none */
    const char *meaning;
    int since;           /* the schema version that added the column */
    size_t offset;       /* of the value in the dataset's row struct (int64_t, uint64_t, double, const char *) */
} qp_runcol;

typedef enum {
    QP_RS_TRAIN = 0, /* /train: one entry per optimizer step */
    QP_RS_EVAL,      /* /eval */
    QP_RS_QERR,      /* /quant/error */
    QP_RS_RECALIB,   /* /events/recalib */
    QP_RS_DIVERGENCE,/* /events/divergence */
    QP_RS_STATUS,    /* /status */
    QP_RS_OUTLIERS,  /* /quant/outliers */
    QP_RS_BSCALE,    /* /quant/block_scales */
    QP_RS_BSHIST,    /* /quant/block_scale_hist */
    QP_RS_COUNT
} qp_runset_id;

typedef struct {
    const char *name;      /* what readers call the dataset: "train", "quant_error", "events" (Python's RunFile attributes) */
    const char *path;      /* "/train" (a group: "/train/NAME" per column) or "/quant/error" (a table) */
    int table;             /* 1: one compound dataset; 0: a 1-D dataset per column */
    const qp_runcol *cols;
    int ncols;
    int chunk;             /* rows per HDF5 chunk and per buffered write */
} qp_runset;

extern const qp_runset qp_runsets[QP_RS_COUNT];

/* Column `name` of a dataset; NULL if there is none. */
const qp_runcol *qp_runcol_find(qp_runset_id set, const char *name);
/* The HDF5 dataset that holds column `name` of set: "/train/loss" for a
 * series, the table's own path ("/quant/error") for a table's member.
 * Returns buf. */
const char *qp_runcol_dataset(qp_runset_id set, const char *name, char *buf, size_t len);
/* The file type's name as the docs write it: "int64", "uint64", "float64", "S32". */
const char *qp_runcol_type_name(const qp_runcol *c, char *buf, size_t len);

/* The /train column of each phase (data wait and comm are older columns),
 * and how a figure labels it. */
typedef struct {
    const char *column, *label;
} qp_phase_info;
extern const qp_phase_info qp_phases[QP_PHASE_COUNT];

/* A file's schema version from its "runfile_schema" attribute (NULL:
 * absent, version 1). 0 with *version set, or -1 with a one-line message
 * (not a number, or newer than this build reads) naming `path` and `tool`. */
int qp_runschema_check_version(const char *attr, const char *path, const char *tool, int *version, char *err,
                               size_t errlen);

/* docs/runfile.md's table of one dataset (header line included). */
void qp_runschema_markdown(qp_runset_id set, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
