/* qp_llama.c — the Llama's tensors: parameter shapes and names, the CPU
 * activation layout, the RoPE table, Smooth-SwiGLU's buffers and the
 * initial weights (see qp_model.h; its layers are qp_llama_kernels.c's). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_model.h"
#include "qp_model_kernels.h"

enum { P_WTE, P_LN1W, P_QKVW, P_ATTPROJW, P_LN2W, P_GATEW, P_UPW, P_DOWNW, P_LNFW, P_LMHEAD };

const char *const qp_llama_param_names[QP_LLAMA_NPARAMS] = {
    [P_WTE] = "wte",     [P_LN1W] = "ln1w",   [P_QKVW] = "qkvw", [P_ATTPROJW] = "attprojw", [P_LN2W] = "ln2w",
    [P_GATEW] = "gatew", [P_UPW] = "upw",     [P_DOWNW] = "downw", [P_LNFW] = "lnfw",       [P_LMHEAD] = "lmhead"};
_Static_assert(sizeof(qp_llama_params) == QP_LLAMA_NPARAMS * sizeof(float *), "a name per qp_llama_params field");
_Static_assert(offsetof(qp_llama_params, lmhead) == P_LMHEAD * sizeof(float *), "P_ in field order");

int qp_llama_param_decays(int i)
{
    /* matrices and the embedding decay; the RMSNorm gains do not */
    return i >= 0 && i < QP_LLAMA_NPARAMS && i != P_LN1W && i != P_LN2W && i != P_LNFW;
}

void qp_llama_param_shapes(const qp_gpt_config *c, int64_t s[QP_MODEL_MAX_NPARAMS][3])
{
    const int64_t V = c->vocab, L = c->layers, C = c->dim, H = c->mlp_hidden, QKV = qp_llama_qkv_width(c);
    const int64_t t[QP_LLAMA_NPARAMS][3] = {
        [P_WTE] = {V, C, 0},   [P_LN1W] = {L, C, 0},   [P_QKVW] = {L, QKV, C}, [P_ATTPROJW] = {L, C, C},
        [P_LN2W] = {L, C, 0},  [P_GATEW] = {L, H, C},  [P_UPW] = {L, H, C},    [P_DOWNW] = {L, C, H},
        [P_LNFW] = {C, 0, 0},  [P_LMHEAD] = {V, C, 0}};
    memset(s, 0, sizeof(int64_t[QP_MODEL_MAX_NPARAMS][3]));
    memcpy(s, t, sizeof t);
}

void qp_llama_carve_params(qp_llama_params *p, float *mem, const int64_t sizes[QP_MODEL_MAX_NPARAMS])
{
    float **f = (float **)p; /* pointers only, in tensor order (asserted above) */
    for (int i = 0; i < QP_LLAMA_NPARAMS; i++) f[i] = mem, mem += sizes[i];
}

void qp_llama_act_fields(qp_llama_acts *a, float **f[QP_LLAMA_NACTS])
{
    f[QP_LACT_ENCODED] = &a->encoded, f[QP_LACT_LN1] = &a->ln1, f[QP_LACT_LN1_RSTD] = &a->ln1_rstd;
    f[QP_LACT_QKV] = &a->qkv, f[QP_LACT_ATTY] = &a->atty, f[QP_LACT_ATT_LSE] = &a->att_lse;
    f[QP_LACT_PREATT] = &a->preatt, f[QP_LACT_ATT] = &a->att, f[QP_LACT_ATTPROJ] = &a->attproj;
    f[QP_LACT_RESIDUAL2] = &a->residual2, f[QP_LACT_LN2] = &a->ln2, f[QP_LACT_LN2_RSTD] = &a->ln2_rstd;
    f[QP_LACT_GATE] = &a->gate, f[QP_LACT_UP] = &a->up, f[QP_LACT_SWIGLU] = &a->swiglu, f[QP_LACT_DOWN] = &a->down;
    f[QP_LACT_RESIDUAL3] = &a->residual3, f[QP_LACT_LNF] = &a->lnf, f[QP_LACT_LNF_RSTD] = &a->lnf_rstd;
    f[QP_LACT_LOGITS] = &a->logits, f[QP_LACT_PROBS] = &a->probs, f[QP_LACT_LOSSES] = &a->losses;
}
_Static_assert(sizeof(qp_llama_acts) == QP_LLAMA_NACTS * sizeof(float *), "a QP_LACT_ index per qp_llama_acts field");
_Static_assert(offsetof(qp_llama_acts, losses) == QP_LACT_LOSSES * sizeof(float *), "QP_LACT_ in field order");

int64_t qp_llama_carve_acts(qp_llama_acts *a, float *mem, const int64_t sizes[QP_LLAMA_NACTS])
{
    float **f[QP_LLAMA_NACTS];
    qp_llama_act_fields(a, f);
    return qp_model_carve(f, QP_LLAMA_NACTS, mem, sizes);
}

/* The CPU kernels' layout (see qp_llama_acts): no T x T matrices, one layer's
 * projection outputs, each row's log-sum-exp. */
void qp_llama_act_sizes(const qp_gpt_config *c, int B, int T, int64_t s[QP_LLAMA_NACTS])
{
    const int64_t L = c->layers, C = c->dim, NH = c->heads, V = c->vocab, H = c->mlp_hidden, BT = (int64_t)B * T;
    for (int i = 0; i < QP_LLAMA_NACTS; i++) s[i] = 0;
    s[QP_LACT_ENCODED] = BT * C;
    s[QP_LACT_LN1] = L * BT * C, s[QP_LACT_LN1_RSTD] = L * BT;
    s[QP_LACT_QKV] = L * BT * qp_llama_qkv_width(c), s[QP_LACT_ATTY] = L * BT * C;
    s[QP_LACT_ATT_LSE] = L * B * NH * T;
    s[QP_LACT_ATTPROJ] = BT * C, s[QP_LACT_RESIDUAL2] = L * BT * C;
    s[QP_LACT_LN2] = L * BT * C, s[QP_LACT_LN2_RSTD] = L * BT;
    s[QP_LACT_GATE] = L * BT * H, s[QP_LACT_UP] = L * BT * H, s[QP_LACT_SWIGLU] = L * BT * H;
    s[QP_LACT_DOWN] = BT * C, s[QP_LACT_RESIDUAL3] = L * BT * C;
    s[QP_LACT_LNF] = BT * C, s[QP_LACT_LNF_RSTD] = BT;
    s[QP_LACT_LOGITS] = BT * V, s[QP_LACT_PROBS] = BT * V, s[QP_LACT_LOSSES] = BT;
}

void qp_llama_rope_table(float *tab, int maxT, int hs)
{
    const int half = hs / 2;
    for (int t = 0; t < maxT; t++)
        for (int i = 0; i < half; i++) {
            const double a = (double)t * pow(10000.0, -2.0 * i / hs);
            tab[(int64_t)t * half + i] = (float)cos(a);
            tab[(int64_t)maxT * half + (int64_t)t * half + i] = (float)sin(a);
        }
}

int qp_llama_alloc(qp_gpt *m)
{
    const qp_gpt_config *c = &m->cfg;
    const int hs = c->dim / c->heads;
    const int64_t H = c->mlp_hidden, C = c->dim, BT = (int64_t)m->B * m->T;
    m->rope = malloc((size_t)2 * c->max_seq * (hs / 2) * sizeof(float) + 1);
    if (!m->rope) return -1;
    qp_llama_rope_table(m->rope, c->max_seq, hs);
    if (!c->smooth_swiglu) return 0;
    m->smooth_s = malloc((size_t)(c->layers * H) * sizeof(float));
    m->smooth_x = aligned_alloc(64, (size_t)qp_pad16(BT * H) * sizeof(float));
    m->smooth_w = aligned_alloc(64, (size_t)qp_pad16(C * H) * sizeof(float));
    m->smooth_dw = aligned_alloc(64, (size_t)qp_pad16(C * H) * sizeof(float));
    return m->smooth_s && m->smooth_x && m->smooth_w && m->smooth_dw ? 0 : -1;
}

void qp_llama_init_weights(qp_gpt *m, uint64_t seed)
{
    const float proj_std = 0.02f / sqrtf(2.0f * (float)m->cfg.layers);
    float *mem = m->params_memory;
    for (int i = 0; i < QP_LLAMA_NPARAMS; i++) {
        const int gain = !qp_llama_param_decays(i);
        const float std = (i == P_ATTPROJW || i == P_DOWNW) ? proj_std : 0.02f;
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < m->param_sizes[i]; j++)
            mem[j] = gain ? 1.0f : qp_model_normal_at(seed, 257 + (uint64_t)i, (uint64_t)j, std); /* the GPT's streams: 1..16 */
        mem += m->param_sizes[i];
    }
}
