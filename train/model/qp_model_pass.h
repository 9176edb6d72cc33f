/* qp_model_pass.h — the pass order of each architecture, written once: which
 * step of a block runs when, forward and backward.
 *
 * Owns: the sequence of layer steps of the GPT and the Llama, as data (a
 * table per architecture), and the two walkers over it. The forward runs
 * each block's steps in table order for blocks 0 .. L-1, then the steps
 * after the last block; the backward is the same table walked in reverse
 * (the steps after the last block, then blocks L-1 .. 0, each backwards),
 * each step's backward. A step names what it computes, not how: the CPU
 * model (train/model/qp_model_kernels.c, qp_llama_kernels.c) fuses the residual
 * add, the bias and the producer's rounding into its row kernels and keeps
 * one layer's gradients; the GPU (kernels/qp_cuda_model_pass.h,
 * qp_cuda_llama_pass.h) launches separate kernels over every layer's
 * buffers. Each implements a step function over these steps (a switch that
 * names each one); both walk these tables, so neither can run the blocks in
 * an order of its own.
 *
 * Why one table: a new architecture or a change of a block (a norm moved, a
 * GEMM added) is made here once, and every device follows it. Plain C, no
 * state: included by C and CUDA (kernels/ includes it; train/ includes
 * nothing of kernels/). */
#ifndef QP_MODEL_PASS_H
#define QP_MODEL_PASS_H

#include "qp_model.h"
#include "qp_recipe.h"

/* What a step computes. "The residual stream into a norm" is the
 * embeddings (first block) or the previous block's output: the residual add
 * of its last GEMM's output. */
typedef enum {
    QP_STEP_NORM_IN = 0, /* block input: the residual stream into the block, its norm (LayerNorm or RMSNorm) */
    QP_STEP_LINEAR,      /* a GEMM (the step's gemm) through the precision dispatch */
    QP_STEP_ROPE,        /* the Llama's rotary positions on q and k (the GPU: and the grouped-query widening) */
    QP_STEP_ATTENTION,   /* causal self-attention over qkv */
    QP_STEP_NORM_MID,    /* the attention's residual add, the norm before the MLP */
    QP_STEP_GELU,        /* the GPT's MLP nonlinearity (with the fc bias) */
    QP_STEP_SWIGLU,      /* the Llama's silu(gate) * up */
    QP_STEP_DOWN,        /* the Llama's down GEMM, on Smooth-SwiGLU's scaled operands when the recipe asks */
    QP_STEP_NORM_OUT,    /* after the last block: its residual add, the final norm */
    QP_STEP_LOSS,        /* softmax and cross-entropy (the mean loss; the backward: the logits' gradient) */
    QP_STEP_COUNT
} qp_step_op;

typedef struct {
    qp_step_op op;
    qp_gemm_id gemm; /* QP_STEP_LINEAR and QP_STEP_DOWN: which GEMM (else unused, QP_GEMM_COUNT) */
} qp_pass_step;

/* One architecture's order: a block's steps, then the steps after the last
 * block (these run with layer index L: the LM head is GEMM layer L). */
typedef struct {
    const qp_pass_step *block;
    int nblock;
    const qp_pass_step *tail;
    int ntail;
} qp_pass_order;

#define QP_STEP(o) {QP_STEP_##o, QP_GEMM_COUNT}
#define QP_STEP_GEMM(o, g) {QP_STEP_##o, QP_GEMM_##g}

static const qp_pass_step qp_gpt_block_steps[] = {
    QP_STEP(NORM_IN),   QP_STEP_GEMM(LINEAR, QKV), QP_STEP(ATTENTION),
    QP_STEP_GEMM(LINEAR, ATTPROJ), QP_STEP(NORM_MID), QP_STEP_GEMM(LINEAR, FC), QP_STEP(GELU),
    QP_STEP_GEMM(LINEAR, FCPROJ),
};
static const qp_pass_step qp_llama_block_steps[] = {
    QP_STEP(NORM_IN),   QP_STEP_GEMM(LINEAR, QKV), QP_STEP(ROPE), QP_STEP(ATTENTION),
    QP_STEP_GEMM(LINEAR, ATTPROJ), QP_STEP(NORM_MID), QP_STEP_GEMM(LINEAR, GATE), QP_STEP_GEMM(LINEAR, UP),
    QP_STEP(SWIGLU), QP_STEP_GEMM(DOWN, DOWN),
};
/* after the last block, in either architecture */
static const qp_pass_step qp_model_tail_steps[] = {QP_STEP(NORM_OUT), QP_STEP_GEMM(LINEAR, HEAD), QP_STEP(LOSS)};

#define QP_PASS_N(t) ((int)(sizeof t / sizeof t[0]))
#ifdef __cplusplus
#define QP_PASS_ASSERT(c, m) static_assert(c, m)
#else
#define QP_PASS_ASSERT(c, m) _Static_assert(c, m)
#endif
QP_PASS_ASSERT(QP_PASS_N(qp_gpt_block_steps) == 8, "the GPT block: 8 steps");
QP_PASS_ASSERT(QP_PASS_N(qp_llama_block_steps) == 10, "the Llama block: 10 steps");
QP_PASS_ASSERT(QP_PASS_N(qp_model_tail_steps) == 3, "after the blocks: 3 steps");
QP_PASS_ASSERT(QP_ARCH_COUNT == 2, "a pass order per architecture (qp_pass_order_of)");
#undef QP_PASS_ASSERT
#undef QP_STEP
#undef QP_STEP_GEMM

/* The order of architecture a (C and C++ alike: no array designators). */
static inline qp_pass_order qp_pass_order_of(qp_arch a)
{
    qp_pass_order po = {qp_gpt_block_steps, QP_PASS_N(qp_gpt_block_steps), qp_model_tail_steps,
                        QP_PASS_N(qp_model_tail_steps)};
    switch (a) {
    case QP_ARCH_GPT: break;
    case QP_ARCH_LLAMA: po.block = qp_llama_block_steps, po.nblock = QP_PASS_N(qp_llama_block_steps); break;
    case QP_ARCH_COUNT: po.nblock = po.ntail = 0; break; /* no model: no steps */
    }
    return po;
}
#undef QP_PASS_N

/* A device's step: step s of block `layer` (L for the steps after the last
 * block), forward or backward. 0, or -1 (the device keeps the message). */
typedef int (*qp_step_fn)(void *ctx, qp_pass_step s, int layer, int backward);

static inline int qp_pass_forward(qp_arch arch, int layers, qp_step_fn step, void *ctx)
{
    const qp_pass_order po = qp_pass_order_of(arch);
    for (int l = 0; l < layers; l++)
        for (int i = 0; i < po.nblock; i++)
            if (step(ctx, po.block[i], l, 0)) return -1;
    for (int i = 0; i < po.ntail; i++)
        if (step(ctx, po.tail[i], layers, 0)) return -1;
    return 0;
}

static inline int qp_pass_backward(qp_arch arch, int layers, qp_step_fn step, void *ctx)
{
    const qp_pass_order po = qp_pass_order_of(arch);
    for (int i = po.ntail - 1; i >= 0; i--)
        if (step(ctx, po.tail[i], layers, 1)) return -1;
    for (int l = layers - 1; l >= 0; l--)
        for (int i = po.nblock - 1; i >= 0; i--)
            if (step(ctx, po.block[i], l, 1)) return -1;
    return 0;
}

#endif
