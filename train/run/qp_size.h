/* qp_size.h — sizing runs by compute: parameter counts, steps from a token
 * budget, epochs, and model sizes by name or by parameter count.
 *
 * Owns: the definitions scaling studies use (Kaplan et al. 2020; Chinchilla):
 *   N  non-embedding parameters: every parameter but the token and position
 *      embeddings (the LM head is tied to the token embedding, so it is not
 *      counted either): per block 12C^2 + 13C (qkv 3C^2+3C, attention
 *      projection C^2+C, MLP 8C^2+5C, two LayerNorms 4C), plus the final
 *      LayerNorm 2C.
 *   D  training tokens = steps x batch x seq x grad_accum.
 *   R  tokens per parameter = D / N; --tokens-per-param R sets
 *      steps = round(R x N / (batch x seq x grad_accum)), at least 1.
 *   epochs = D / (tokens of the training split).
 * And the model sizes a sweep axis names: a preset (the table below) or a
 * target N ("100k", "0.4M", "2e6"), met by the width that comes nearest
 * (in log ratio) at a given depth. Pure arithmetic, no dependencies: qtrain
 * and qsweep both compile it, so they can never disagree. */
#ifndef QP_SIZE_H
#define QP_SIZE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs past this many epochs warn once (qtrain) — repeated data makes the
 * loss a memorization measure; shipped studies stay below it. */
#define QP_MAX_EPOCHS 4.0

int64_t qp_size_nonembedding(int layers, int dim);
/* Steps for R tokens per non-embedding parameter, or -1 when R is not a
 * positive finite number or the result exceeds 2^40. */
int64_t qp_size_steps(double tokens_per_param, int64_t nonembedding, int64_t tokens_per_step);

typedef struct {
    const char *name;
    int layers, heads, dim;
} qp_model_preset;

#define QP_N_MODEL_PRESETS 6
extern const qp_model_preset qp_model_presets[QP_N_MODEL_PRESETS];

/* A model size: a preset name, or a target non-embedding count (a number,
 * optionally with k or M) met at `layers` blocks of `heads` heads by the
 * width, a multiple of 32 and of heads, that comes nearest in log ratio.
 * Returns 0, or -1 with a one-line message. */
int qp_size_model(const char *value, int layers, int heads, qp_model_preset *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
