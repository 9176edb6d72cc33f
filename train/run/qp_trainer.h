/* qp_trainer.h — one training (or evaluation) run, start to finish.
 *
 * Owns: the run loop shared by qtrain and the tests: option validation, the
 * model and dispatch set-up, data, the optimizer step, evaluation, the run
 * file, checkpoints, --resume and divergence handling. Under mpirun (see
 * qp_dist.h) every rank runs qp_train_run: each takes its slice of the global
 * --batch, gradients/loss/eval and scaling statistics are reduced across
 * ranks, rank 0 alone writes the run file and checkpoints. */
#ifndef QP_TRAINER_H
#define QP_TRAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qp_dist_grads.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QP_EXIT_OK 0
#define QP_EXIT_RUNTIME 1
#define QP_EXIT_BAD_INPUT 2
#define QP_EXIT_DIVERGED 3
#define QP_EXIT_STOPPED 130

/* Set (e.g. from a SIGINT/SIGTERM handler) to stop a run at the next step
 * boundary: the run file gets status "stopped" and is closed cleanly (so it
 * opens without h5clear), nothing else is lost, --resume continues from the
 * last checkpoint. */
extern volatile int qp_train_stop_requested;

/* Where the step runs (--device). */
typedef enum { QP_DEVICE_CPU = 0, QP_DEVICE_CUDA, QP_DEVICE_COUNT } qp_device;
extern const char *const qp_device_names[QP_DEVICE_COUNT]; /* "cpu", "cuda" */

/* What a divergence does (--on-divergence; see --help and docs/guarantees.md). */
typedef enum {
    QP_ON_DIVERGENCE_STOP = 0,
    QP_ON_DIVERGENCE_SKIP_STEP,
    QP_ON_DIVERGENCE_ROLLBACK,
    QP_ON_DIVERGENCE_COUNT
} qp_on_divergence;
extern const char *const qp_on_divergence_names[QP_ON_DIVERGENCE_COUNT]; /* "stop", "skip-step", "rollback" */

typedef struct {
    char data[1024], out[1024], recipe[1024], resume_from[1024]; /* recipe: QP_RECIPE_SPEC_MAX */
    qp_device device;                /* default cpu */
    qp_on_divergence on_divergence;  /* default stop */
    char inject[128];        /* debug fault injection, e.g. "nan:grad:wte@12" (see --help); "" = none */
    qp_grad_comm grad_comm;  /* gradient exchange across ranks (qp_dist_grads.h), default fp32 */
    bool grad_comm_ef;       /* error feedback for a low-precision --grad-comm */
    bool requantize;         /* --requantize: no quantized copies of X and W kept for the backward */
    int layers, heads, dim, seq, batch, grad_accum, threads, prefetch;
    /* the model (qp_model.h): arch a qp_arch (default QP_ARCH_GPT = 0); the
     * Llama's key/value heads and MLP width (0: its defaults). Smooth-SwiGLU
     * is the recipe's (its smooth-swiglu modifier). */
    int arch, kv_heads, mlp_hidden;
    int64_t steps, warmup, eval_every, eval_batches, qerr_every, ckpt_every;
    int64_t stop_after;   /* > 0: stop after this many steps as if interrupted (tests resume) */
    double lr, min_lr, weight_decay, grad_clip, beta1, beta2, eps, val_frac, divergence_factor;
    uint64_t seed;
    /* training randomness apart from the initial weights: batch order,
     * stochastic rounding, Hadamard signs. -1: the same as seed. Two runs of
     * one seed and recipe with different data seeds start from the same
     * weights and differ only in these: their gap is the noise floor. */
    int64_t data_seed;
    /* > 0: steps = round(tokens_per_param x non-embedding parameters /
     * tokens per step) (qp_size.h); --steps may not be given with it */
    double tokens_per_param;
    bool steps_given;
    /* the fixed validation set (qp_dataset_fixed_batch): 0 = eval_batches
     * batches, -1 = the whole validation split, else at least this many
     * tokens (whole batches, at most the split) */
    int64_t val_tokens;
    bool resume, eval_only, quiet;
    bool explain;            /* print the expanded recipe and exit (qp_train_explain) */
} qp_train_opts;

#define QP_DEFAULT_SEED 1337 /* --seed when none is given (qsweep reads it too) */
#define QP_DEFAULT_LAYERS 4  /* --layers when none is given (qsweep reads it too) */

/* nanoGPT's baby Shakespeare configuration (4 layers, 4 heads, 128 wide,
 * context 64, batch 12, lr 1e-3, warm-up 100, 2000 steps). */
void qp_train_opts_default(qp_train_opts *o);
/* Check option values (not files); 0, or -1 with a one-line message. */
int qp_train_opts_check(const qp_train_opts *o, char *err, size_t errlen);
/* Run; returns one of the QP_EXIT_* codes, with a one-line message in err
 * for anything but QP_EXIT_OK. */
int qp_train_run(const qp_train_opts *o, char *err, size_t errlen);

/* The checkpoint path of a run file: RUN.h5 -> RUN.ckpt.h5 */
void qp_ckpt_path_for(const char *run_path, char *dst, size_t len);

#ifdef __cplusplus
}
#endif
#endif
