/* qp_model_shape.c — the model's shape rules (see qp_model.h): the
 * architectures' names (--arch), the Llama's
 * defaults (kv heads, SwiGLU width), what a shape must satisfy, and the
 * GEMMs of an architecture's block (what a recipe may name). A file
 * of its own, needing nothing but the C library, so qsweep judges a grid's
 * shapes with the very function qtrain does (train/run/qp_train_options.c)
 * without the trainer. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "qp_model.h"

const char *const qp_arch_names[QP_ARCH_COUNT] = {[QP_ARCH_GPT] = "gpt", [QP_ARCH_LLAMA] = "llama"};

int qp_llama_default_hidden(int C)
{
    const int64_t h = (8 * (int64_t)C + 2) / 3; /* 8C/3 rounded up */
    return (int)((h + 63) / 64 * 64);
}

qp_gpt_config qp_model_resolve(const qp_gpt_config *c)
{
    qp_gpt_config r = *c;
    if (r.arch == QP_ARCH_LLAMA) {
        if (r.kv_heads == 0) r.kv_heads = r.heads;
        if (r.mlp_hidden == 0) r.mlp_hidden = qp_llama_default_hidden(r.dim);
    }
    return r;
}

int qp_model_check(const qp_gpt_config *c0, char *err, size_t errlen)
{
    const qp_gpt_config c = qp_model_resolve(c0);
    if ((unsigned)c.arch >= QP_ARCH_COUNT) return snprintf(err, errlen, "unknown architecture %d", (int)c.arch), -1;
    if (c.vocab < 2 || c.layers < 1 || c.heads < 1 || c.dim < 1 || c.dim % c.heads || c.max_seq < 1)
        return snprintf(err, errlen, "invalid model shape (vocab %d, layers %d, heads %d, dim %d, seq %d)", c.vocab,
                        c.layers, c.heads, c.dim, c.max_seq), -1;
    if (c.arch == QP_ARCH_GPT && (c.kv_heads || c.mlp_hidden || c.smooth_swiglu))
        return snprintf(err, errlen, "--kv-heads, --mlp-hidden and Smooth-SwiGLU are the llama architecture's"), -1;
    if (c.arch == QP_ARCH_LLAMA) {
        if (c.kv_heads < 1 || c.heads % c.kv_heads)
            return snprintf(err, errlen, "--kv-heads %d does not divide --heads %d", c.kv_heads, c.heads), -1;
        if ((c.dim / c.heads) % 2)
            return snprintf(err, errlen, "rotary embeddings need an even head size, not %d (--dim / --heads)",
                            c.dim / c.heads), -1;
        if (c.mlp_hidden < 1 || c.mlp_hidden > 1 << 20)
            return snprintf(err, errlen, "--mlp-hidden must be an integer in 1..1048576, not %d", c.mlp_hidden), -1;
    }
    return 0;
}

int qp_model_block_gemms(const qp_gpt_config *c, qp_gemm_id ids[QP_BLOCK_GEMMS])
{
    static const qp_gemm_id gpt[] = {QP_GEMM_QKV, QP_GEMM_ATTPROJ, QP_GEMM_FC, QP_GEMM_FCPROJ};
    static const qp_gemm_id llama[] = {QP_GEMM_QKV, QP_GEMM_ATTPROJ, QP_GEMM_GATE, QP_GEMM_UP, QP_GEMM_DOWN};
    const int llm = c->arch == QP_ARCH_LLAMA, n = llm ? (int)(sizeof llama / sizeof *llama) : (int)(sizeof gpt / sizeof *gpt);
    memcpy(ids, llm ? llama : gpt, (size_t)n * sizeof *ids);
    return n;
}

unsigned qp_model_gemm_mask(const qp_gpt_config *c)
{
    qp_gemm_id ids[QP_BLOCK_GEMMS];
    unsigned mask = 0;
    for (int i = 0, n = qp_model_block_gemms(c, ids); i < n; i++) mask |= 1u << ids[i];
    return mask;
}
