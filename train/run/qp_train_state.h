/* qp_train_state.h — the state of one run, shared by the trainer's files.
 * Internal to train/: qp_trainer.c (the run loop), qp_train_ckpt.c (what a
 * checkpoint holds), qp_train_attrs.c (the run file's root attributes). */
#ifndef QP_TRAIN_STATE_H
#define QP_TRAIN_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "qp_backend.h"
#include "qp_ckpt.h"
#include "qp_data.h"
#include "qp_dist_grads.h"
#include "qp_faults.h"
#include "qp_gemm.h"
#include "qp_linear.h"
#include "qp_model.h"
#include "qp_nvml.h"
#include "qp_omp.h"
#include "qp_recipe.h"
#include "qp_runlog.h"
#include "qp_train_options.h"
#include "qp_trainer.h"

/* scaling states a checkpoint holds: one per (layer, GEMM of the
 * architecture's blocks (qp_model_block_gemms), operand), in that order — a
 * GPT's are the 4 GEMMs' of checkpoints from before --arch */
#define QP_N_STATES(r) ((r)->o.layers * qp_model_block_gemms(&(r)->model.cfg, (qp_gemm_id[QP_BLOCK_GEMMS]){0}) * QP_OPND_COUNT)
/* a scaling state in a checkpoint: scale, last scale, ring position, count,
 * updates, 4 event counts, 2 EMAs x 3 floats */
#define QP_STATE_COLS 15
#define QP_VAL_GROUPS 10 /* random groups of the validation set's standard error */

typedef struct {
    qp_train_opts o;
    qp_dataset *data;
    qp_recipe recipe;
    qp_linear_plan *plans; /* the recipe resolved for this model: [layer][gemm] */
    qp_gemm *gemm;
    qp_linear *lin;
    qp_gpt model;
    int model_ok;
    float *adam_m, *adam_v;
    qp_runlog *log;
    char ckpt_path[1100];
    int64_t step;        /* the next optimizer step to run */
    double best_loss;    /* running minimum of the training loss */
    int32_t *eval_in, *eval_tg;
    char log_err[256];   /* first failure of a record callback */
    int64_t n_qerr_rows;
    qp_inject inject;    /* --inject */
    int recoveries;      /* consecutive divergences recovered from (skip-step, rollback) */
    float *scaling_snap; /* skip-step: every scaling state before the step (qp_train_pack_scaling) */
    /* data parallelism: this rank takes rows [rank*Bl, (rank+1)*Bl) of every global batch */
    int rank, world, Bl;
    int threads_auto;     /* --threads auto: o.threads is the count chosen at start */
    qp_omp_adapt adapt;   /* --threads auto as the run goes */
    qp_grad_exchange *gx; /* the gradient exchange (--grad-comm) */
    uint64_t data_seed;   /* --data-seed, else --seed */
    int64_t nonembedding, val_batches;
    double epochs;        /* tokens_total / training-split tokens */
    double val_se;        /* standard error of the last evaluation's loss */
    double val_group[QP_VAL_GROUPS]; /* its interleaved groups' mean losses */
    qp_backend be;        /* where the step runs (--device) */
    qp_nvml *nvml;        /* GPU power sampling, NULL if unavailable */
    char power_why[200];
} qp_train_state;

static inline uint64_t qp_fnv1a(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* (qp_train_model_config: qp_train_options.h) */

/* Every scaling state into hist (QP_N_STATES x history_len floats) and st
 * (QP_N_STATES x QP_STATE_COLS), and back: what a checkpoint stores, and what
 * skip-step restores after a step it drops. */
void qp_train_pack_scaling(qp_train_state *r, float *hist, float *st);
void qp_train_unpack_scaling(qp_train_state *r, const float *hist, const float *st);
/* The checkpoint of step r->step (rank 0 writes; a no-op elsewhere). */
int qp_train_write_checkpoint(qp_train_state *r, char *err, size_t errlen);
/* Restore what a bit-identical continuation needs (with_optimizer: also the
 * Adam moments, scaling states, step and running-minimum loss). */
int qp_train_load_checkpoint(qp_train_state *r, qp_ckpt *c, int with_optimizer, char *err, size_t errlen);
/* Back to the last checkpoint on disk; *from gets its step (r->step stays). */
int qp_train_rollback(qp_train_state *r, int64_t *from, char *err, size_t errlen);

/* Create the run file with the run's root attributes (qp_train_attrs.c). */
int qp_train_create_runlog(qp_train_state *r, const char *host, char *err, size_t errlen);

#endif
