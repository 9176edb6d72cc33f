/* qp_faults.h — debug fault injection for the trainer (--inject).
 *
 * Owns: the --inject syntax and putting one NaN or Inf where it says, once.
 *
 *   KIND:WHERE@STEP
 *     KIND   nan | inf | -inf
 *     WHERE  loss                  the step's (mean) loss value only
 *            grad:TENSOR[IDX]      one gradient element, after the backward pass
 *            param:TENSOR[IDX]     one weight, before the step's forward pass
 *     TENSOR a parameter name of the model (qp_model_param_names: the GPT's
 *            wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w,
 *            ln2b, fcw, fcb, fcprojw, fcprojb, lnfw, lnfb; the Llama's wte,
 *            ln1w, qkvw, attprojw, ln2w, gatew, upw, downw, lnfw, lmhead);
 *            IDX the flat element index in it (default 0)
 *     STEP   the optimizer step (0-based)
 *   e.g. nan:grad:wte@12, inf:param:fcw[5]@30, nan:loss@5
 *
 * It fires once per process: at most once, the first time this process runs
 * step STEP. The trainer never runs a step number twice in one process (a
 * rollback restores the state, not the step counter), so a recovery always
 * gets past it; a --resume from a checkpoint at or before STEP is a new
 * process and fires it again. */
#ifndef QP_FAULTS_H
#define QP_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { QP_INJ_NONE = 0, QP_INJ_LOSS, QP_INJ_GRAD, QP_INJ_PARAM } qp_inject_where;

typedef struct {
    qp_inject_where where;
    int tensor;    /* index into the model's parameter names; -1 for the loss */
    int64_t index; /* flat element index in the tensor */
    int64_t step;
    float value;   /* NaN, +Inf or -Inf */
    int fired;
} qp_inject;

/* Parse SPEC ("" = no injection) against the model's tensor names (n of
 * them). 0, or -1 with a one-line message. Index bounds are checked by
 * qp_inject_check once the model's shape is known. */
int qp_inject_parse(const char *spec, const char *const *names, int n, qp_inject *inj, char *err, size_t errlen);
/* Check the element index against the parameter sizes. 0, or -1 + err. */
int qp_inject_check(const qp_inject *inj, const char *const *names, const int64_t *sizes, char *err, size_t errlen);
/* If inj targets `where` at `step` and has not fired: write the value into
 * the tensor (base: params_memory or grads_memory, laid out by sizes) or
 * into *loss, mark it fired and return 1; otherwise 0. */
int qp_inject_fire(qp_inject *inj, qp_inject_where where, int64_t step, float *base, const int64_t *sizes,
                   double *loss);

#ifdef __cplusplus
}
#endif
#endif
