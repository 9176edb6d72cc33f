/* qp_model.c — the model's tensors by architecture, the GPT's parameters and
 * activations, initialisation, and the choice of forward/backward kernels
 * for this CPU (see qp_model.h; the Llama's own layout is qp_llama.c's). */
#include "qp_model.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_model_kernels.h"
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include "qp_rng.h"


const char *const qp_gpt_param_names[QP_GPT_NPARAMS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};

int qp_model_nparams(const qp_gpt_config *c) { return c->arch == QP_ARCH_LLAMA ? QP_LLAMA_NPARAMS : QP_GPT_NPARAMS; }

const char *const *qp_model_param_names(const qp_gpt_config *c)
{
    return c->arch == QP_ARCH_LLAMA ? qp_llama_param_names : qp_gpt_param_names;
}

int qp_model_param_decays(const qp_gpt_config *c, int i)
{
    return c->arch == QP_ARCH_LLAMA ? qp_llama_param_decays(i) : qp_gpt_param_decays(i);
}

int64_t qp_model_nonembedding(const qp_gpt_config *c0)
{
    const qp_gpt_config c = qp_model_resolve(c0);
    int64_t sizes[QP_MODEL_MAX_NPARAMS], n = 0;
    qp_gpt_param_shapes(&c, sizes, NULL, NULL);
    const char *const *names = qp_model_param_names(&c);
    for (int i = 0; i < qp_model_nparams(&c); i++)
        if (strcmp(names[i], "wte") && strcmp(names[i], "wpe") && strcmp(names[i], "lmhead")) n += sizes[i];
    return n;
}

void qp_gpt_param_shapes(const qp_gpt_config *c0, int64_t sizes[QP_MODEL_MAX_NPARAMS], int ndim[QP_MODEL_MAX_NPARAMS],
                         int64_t shape[QP_MODEL_MAX_NPARAMS][3])
{
    const qp_gpt_config cr = qp_model_resolve(c0), *c = &cr;
    const int64_t V = c->vocab, T = c->max_seq, L = c->layers, C = c->dim;
    int64_t s[QP_MODEL_MAX_NPARAMS][3] = {{V, C, 0},     {T, C, 0},     {L, C, 0},     {L, C, 0},
                                          {L, 3 * C, C}, {L, 3 * C, 0}, {L, C, C},     {L, C, 0},
                                          {L, C, 0},     {L, C, 0},     {L, 4 * C, C}, {L, 4 * C, 0},
                                          {L, C, 4 * C}, {L, C, 0},     {C, 0, 0},     {C, 0, 0}};
    if (c->arch == QP_ARCH_LLAMA) qp_llama_param_shapes(c, s);
    for (int i = 0; i < qp_model_nparams(c); i++) {
        int d = 0;
        int64_t n = 1;
        for (; d < 3 && s[i][d]; d++) n *= s[i][d];
        if (ndim) ndim[i] = d;
        if (shape) memcpy(shape[i], s[i], sizeof s[i]);
        sizes[i] = n;
    }
}

int qp_gpt_param_decays(int i)
{
    /* matrices and embeddings decay; norms and biases do not (nanoGPT) */
    static const int decays[QP_GPT_NPARAMS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};
    return i >= 0 && i < QP_GPT_NPARAMS && decays[i];
}

void qp_gpt_carve_params(qp_gpt_params *p, float *mem, const int64_t sizes[QP_GPT_NPARAMS])
{
    float **ptrs[QP_GPT_NPARAMS] = {&p->wte,  &p->wpe,  &p->ln1w,    &p->ln1b,    &p->qkvw, &p->qkvb,
                                    &p->attprojw, &p->attprojb, &p->ln2w, &p->ln2b, &p->fcw,  &p->fcb,
                                    &p->fcprojw, &p->fcprojb, &p->lnfw, &p->lnfb};
    for (int i = 0; i < QP_GPT_NPARAMS; i++) {
        *ptrs[i] = mem;
        mem += sizes[i];
    }
}

void qp_gpt_act_fields(qp_gpt_acts *a, float **f[QP_GPT_NACTS])
{
    f[QP_ACT_ENCODED] = &a->encoded, f[QP_ACT_LN1] = &a->ln1, f[QP_ACT_LN1_MEAN] = &a->ln1_mean;
    f[QP_ACT_LN1_RSTD] = &a->ln1_rstd, f[QP_ACT_QKV] = &a->qkv, f[QP_ACT_ATTY] = &a->atty;
    f[QP_ACT_PREATT] = &a->preatt, f[QP_ACT_ATT] = &a->att, f[QP_ACT_ATTPROJ] = &a->attproj;
    f[QP_ACT_RESIDUAL2] = &a->residual2, f[QP_ACT_LN2] = &a->ln2, f[QP_ACT_LN2_MEAN] = &a->ln2_mean;
    f[QP_ACT_LN2_RSTD] = &a->ln2_rstd, f[QP_ACT_FCH] = &a->fch, f[QP_ACT_FCH_GELU] = &a->fch_gelu;
    f[QP_ACT_FCPROJ] = &a->fcproj, f[QP_ACT_RESIDUAL3] = &a->residual3, f[QP_ACT_LNF] = &a->lnf;
    f[QP_ACT_LNF_MEAN] = &a->lnf_mean, f[QP_ACT_LNF_RSTD] = &a->lnf_rstd, f[QP_ACT_LOGITS] = &a->logits;
    f[QP_ACT_PROBS] = &a->probs, f[QP_ACT_LOSSES] = &a->losses, f[QP_ACT_ATT_LSE] = &a->att_lse;
}
_Static_assert(sizeof(qp_gpt_acts) == QP_GPT_NACTS * sizeof(float *), "a QP_ACT_ index per qp_gpt_acts field");
_Static_assert(offsetof(qp_gpt_acts, att_lse) == QP_ACT_ATT_LSE * sizeof(float *), "QP_ACT_ in field order");

int64_t qp_model_carve(float **f[], int n, float *mem, const int64_t *sizes)
{
    int64_t used = 0;
    for (int i = 0; i < n; i++) {
        if (mem) *f[i] = sizes[i] ? mem + used : NULL;
        /* whole 16-float vectors per tensor */
        used += (sizes[i] + 15) / 16 * 16;
    }
    return used;
}

int64_t qp_gpt_carve_acts(qp_gpt_acts *a, float *mem, const int64_t sizes[QP_GPT_NACTS])
{
    float **f[QP_GPT_NACTS];
    qp_gpt_act_fields(a, f);
    return qp_model_carve(f, QP_GPT_NACTS, mem, sizes);
}

/* The CPU kernels' layout (see qp_gpt_acts): no T x T matrices, one layer's
 * projection outputs, each row's log-sum-exp. */
static void act_sizes(const qp_gpt_config *c, int B, int T, int64_t s[QP_GPT_NACTS])
{
    const int64_t L = c->layers, C = c->dim, NH = c->heads, V = c->vocab, BT = (int64_t)B * T;
    for (int i = 0; i < QP_GPT_NACTS; i++) s[i] = 0;
    s[QP_ACT_ENCODED] = BT * C;
    s[QP_ACT_LN1] = L * BT * C, s[QP_ACT_LN1_MEAN] = L * BT, s[QP_ACT_LN1_RSTD] = L * BT;
    s[QP_ACT_QKV] = L * BT * 3 * C, s[QP_ACT_ATTY] = L * BT * C;
    s[QP_ACT_PREATT] = 0, s[QP_ACT_ATT] = 0;
    s[QP_ACT_ATTPROJ] = BT * C;
    s[QP_ACT_RESIDUAL2] = L * BT * C;
    s[QP_ACT_LN2] = L * BT * C, s[QP_ACT_LN2_MEAN] = L * BT, s[QP_ACT_LN2_RSTD] = L * BT;
    s[QP_ACT_FCH] = L * BT * 4 * C, s[QP_ACT_FCH_GELU] = L * BT * 4 * C;
    s[QP_ACT_FCPROJ] = BT * C;
    s[QP_ACT_RESIDUAL3] = L * BT * C;
    s[QP_ACT_LNF] = BT * C, s[QP_ACT_LNF_MEAN] = BT, s[QP_ACT_LNF_RSTD] = BT;
    s[QP_ACT_LOGITS] = BT * V, s[QP_ACT_PROBS] = BT * V, s[QP_ACT_LOSSES] = BT;
    s[QP_ACT_ATT_LSE] = L * B * NH * T;
}

void qp_gpt_gemm_dims(const qp_gpt_config *c0, qp_gemm_id g, int *in, int *out)
{
    const qp_gpt_config c = qp_model_resolve(c0);
    const int C = c.dim, H = c.mlp_hidden, llama = c.arch == QP_ARCH_LLAMA;
    *in = *out = 0;
    switch (g) {
    case QP_GEMM_QKV: *in = C, *out = llama ? (int)qp_llama_qkv_width(&c) : 3 * C; return;
    case QP_GEMM_ATTPROJ: *in = C, *out = C; return;
    case QP_GEMM_FC: if (!llama) *in = C, *out = 4 * C; return;
    case QP_GEMM_FCPROJ: if (!llama) *in = 4 * C, *out = C; return;
    case QP_GEMM_GATE:
    case QP_GEMM_UP: if (llama) *in = C, *out = H; return;
    case QP_GEMM_DOWN: if (llama) *in = H, *out = C; return;
    case QP_GEMM_HEAD: *in = C, *out = c.vocab; return;
    case QP_GEMM_COUNT: return;
    }
}

/* N(0, std) from Philox, indexed by element: the same weights on any thread count. */
float qp_model_normal_at(uint64_t seed, uint64_t stream, uint64_t i, float std)
{
    uint32_t r[4];
    qp_philox4x32(seed, i, stream, r);
    const double u1 = ((double)r[0] + 1.0) / 4294967297.0, u2 = (double)r[1] / 4294967296.0;
    return (float)(std * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

int qp_gpt_init(qp_gpt *m, const qp_gpt_config *c0, int B, int T, uint64_t seed, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    const qp_gpt_config cr = qp_model_resolve(c0), *c = &cr;
    if (qp_model_check(c, err, errlen)) return -1;
    if (B < 1 || T < 1 || T > c->max_seq) {
        snprintf(err, errlen, "invalid model shape (vocab %d, layers %d, heads %d, dim %d, seq %d)", c->vocab,
                 c->layers, c->heads, c->dim, T);
        return -1;
    }
    m->cfg = *c;
    m->B = B, m->T = T;
    m->n_tensors = qp_model_nparams(c);
    qp_gpt_param_shapes(c, m->param_sizes, NULL, NULL);
    for (int i = 0; i < m->n_tensors; i++) m->num_params += m->param_sizes[i];
    const int llama = c->arch == QP_ARCH_LLAMA;
    int64_t as[QP_GPT_NACTS], las[QP_LLAMA_NACTS];
    if (llama) {
        qp_llama_act_sizes(c, B, T, las);
        m->num_acts = qp_llama_carve_acts(&m->lacts, NULL, las);
        m->num_scratch = qp_llama_scratch_floats(c, B, T);
    } else {
        act_sizes(c, B, T, as);
        m->num_acts = qp_gpt_carve_acts(&m->acts, NULL, as);
        m->num_scratch = qp_gpt_scratch_floats(c, B, T);
    }
    /* on a cache line, as the activations: the GEMMs read the weights and write their gradients */
    const size_t param_bytes = ((size_t)m->num_params * sizeof(float) + 63) / 64 * 64;
    m->params_memory = aligned_alloc(64, param_bytes);
    m->grads_memory = aligned_alloc(64, param_bytes);
    if (m->grads_memory) memset(m->grads_memory, 0, param_bytes);
    m->acts_memory = aligned_alloc(64, (size_t)m->num_acts * sizeof(float));
    m->scratch = aligned_alloc(64, (size_t)m->num_scratch * sizeof(float));
    m->ocols = malloc((size_t)qp_model_max_input_channels(c) * sizeof *m->ocols);
    m->oscratch = malloc((size_t)qp_model_max_input_channels(c) * sizeof *m->oscratch);
    if (!m->params_memory || !m->grads_memory || !m->acts_memory || !m->scratch || !m->ocols || !m->oscratch ||
        (llama && qp_llama_alloc(m))) {
        snprintf(err, errlen, "out of memory for a model of %lld parameters and %lld activations",
                 (long long)m->num_params, (long long)m->num_acts);
        qp_gpt_free(m);
        return -1;
    }
    if (llama) {
        qp_llama_carve_params(&m->lparams, m->params_memory, m->param_sizes);
        qp_llama_carve_params(&m->lgrads, m->grads_memory, m->param_sizes);
        qp_llama_carve_acts(&m->lacts, m->acts_memory, las);
        qp_llama_init_weights(m, seed);
        return 0;
    }
    qp_gpt_carve_params(&m->params, m->params_memory, m->param_sizes);
    qp_gpt_carve_params(&m->grads, m->grads_memory, m->param_sizes);
    qp_gpt_carve_acts(&m->acts, m->acts_memory, as);

    const float proj_std = 0.02f / sqrtf(2.0f * (float)c->layers);
    float *mem = m->params_memory;
    for (int i = 0; i < QP_GPT_NPARAMS; i++) {
        const int is_norm_weight = i == 2 || i == 8 || i == 14, is_bias = !is_norm_weight && !qp_gpt_param_decays(i);
        const float std = (i == 6 || i == 12) ? proj_std : 0.02f;
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < m->param_sizes[i]; j++)
            mem[j] = is_norm_weight ? 1.0f : is_bias ? 0.0f : qp_model_normal_at(seed, (uint64_t)i + 1, (uint64_t)j, std);
        mem += m->param_sizes[i];
    }
    return 0;
}

void qp_gpt_free(qp_gpt *m)
{
    free(m->params_memory);
    free(m->grads_memory);
    free(m->acts_memory);
    free(m->scratch);
    free(m->rope);
    free(m->ocols), free(m->oscratch);
    free(m->smooth_s), free(m->smooth_x), free(m->smooth_w), free(m->smooth_dw);
    memset(m, 0, sizeof *m);
}

int qp_model_max_input_channels(const qp_gpt_config *c)
{
    qp_gemm_id ids[QP_BLOCK_GEMMS];
    int most = 0;
    for (int i = 0, n = qp_model_block_gemms(c, ids); i < n; i++) {
        int in, out;
        qp_gpt_gemm_dims(c, ids[i], &in, &out);
        if (in > most) most = in;
    }
    return most;
}

int64_t qp_gpt_max_gemm_elems(const qp_gpt_config *c, int B, int T)
{
    /* every operand of a block GEMM: X (BT x IC), W (OC x IC), dY (BT x OC) */
    const int64_t BT = (int64_t)B * T;
    qp_gemm_id ids[QP_BLOCK_GEMMS];
    int64_t big = 0;
    for (int i = 0, n = qp_model_block_gemms(c, ids); i < n; i++) {
        int in, out;
        qp_gpt_gemm_dims(c, ids[i], &in, &out);
        const int64_t e[] = {BT * in, (int64_t)out * in, BT * out};
        for (int k = 0; k < 3; k++) big = e[k] > big ? e[k] : big;
    }
    return big;
}

const float *qp_model_logits(const qp_gpt *m) { return m->cfg.arch == QP_ARCH_LLAMA ? m->lacts.logits : m->acts.logits; }
const float *qp_model_losses(const qp_gpt *m) { return m->cfg.arch == QP_ARCH_LLAMA ? m->lacts.losses : m->acts.losses; }

int64_t qp_gpt_linear_elems(const qp_gpt_config *c, int B, int T)
{
    const int64_t BT = (int64_t)B * T, V = c->vocab, C = c->dim;
    int64_t n = qp_gpt_max_gemm_elems(c, B, T);
    if (BT * V > n) n = BT * V;
    if (V * C > n) n = V * C;
    return n;
}

/* In chunks on every thread: llm.c small's 3.3 M gradients took 526-559 us
 * on one thread, 304-375 us on two (medians of 101, beside a CI run). */
void qp_gpt_zero_grad(qp_gpt *m)
{
    const int64_t n = m->num_params, chunk = 1 << 18, nch = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (nch > 1)
    for (int64_t c = 0; c < nch; c++) {
        const int64_t lo = c * chunk, len = n - lo < chunk ? n - lo : chunk;
        memset(m->grads_memory + lo, 0, (size_t)len * sizeof(float));
    }
}

/* The compiled copies of the model's kernels, best first: the same
 * operations in the same order, so every copy gives the same bits
 * (qp_model_simd.h); only their vector width differs. */
typedef struct {
    const char *name;
    int level; /* its index in kernel_levels */
    int (*supported)(void);
    int (*gpt_forward)(qp_gpt *, qp_linear *, const int32_t *, const int32_t *, int, int);
    int (*gpt_backward)(qp_gpt *, qp_linear *, const int32_t *, const int32_t *, float);
    int (*llama_forward)(qp_gpt *, qp_linear *, const int32_t *, const int32_t *, int, int);
    int (*llama_backward)(qp_gpt *, qp_linear *, const int32_t *, const int32_t *, float);
} kernel_copy;

#if QP_HAVE_MODEL_V4
static int cpu_v4(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif
#if QP_HAVE_MODEL_V3
static int cpu_v3(void)
{
    __builtin_cpu_init();
    /* F16C and MOVBE from CPUID leaf 1 (ECX bits 29 and 22): clang's
     * __builtin_cpu_supports does not know them */
    unsigned a = 0, b = 0, c = 0, d = 0;
    const int f16c_movbe = __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1u) && (c >> 22 & 1u);
    return f16c_movbe && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("bmi2");
}
#endif
static int cpu_any(void) { return 1; }

static const kernel_copy kernel_copies[] = {
#if QP_HAVE_MODEL_V4
    {"x86-64-v4", 2, cpu_v4, qp_gpt_forward_v4, qp_gpt_backward_v4, qp_llama_forward_v4, qp_llama_backward_v4},
#endif
#if QP_HAVE_MODEL_V3
    {"x86-64-v3", 1, cpu_v3, qp_gpt_forward_v3, qp_gpt_backward_v3, qp_llama_forward_v3, qp_llama_backward_v3},
#endif
    {"baseline", 0, cpu_any, qp_gpt_forward_base, qp_gpt_backward_base, qp_llama_forward_base, qp_llama_backward_base},
};
#define N_KERNEL_COPIES ((int)(sizeof kernel_copies / sizeof kernel_copies[0]))

/* The levels QP_MODEL_ISA may name, whether or not this build has a copy of each. */
static const char *const kernel_levels[] = {"baseline", "x86-64-v3", "x86-64-v4"};

const char *qp_gpt_kernel_isa_capped(const char *cap)
{
    int max = 2;
    if (cap && *cap) {
        max = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(cap, kernel_levels[i]) == 0) max = i;
        if (max < 0) return NULL;
    }
    for (int i = 0; i < N_KERNEL_COPIES; i++)
        if (kernel_copies[i].level <= max && kernel_copies[i].supported()) return kernel_copies[i].name;
    return "baseline"; /* not reached: the baseline copy runs anywhere */
}

/* The best copy the CPU runs, at most QP_MODEL_ISA's level when it is set
 * (baseline, x86-64-v3, x86-64-v4); a name of no level is a one-line error. */
static const kernel_copy *kernels(void)
{
    static const kernel_copy *k;
    if (!k) {
        const char *cap = getenv("QP_MODEL_ISA"), *name = qp_gpt_kernel_isa_capped(cap);
        if (!name) {
            fprintf(stderr, "QP_MODEL_ISA=%s: not a kernel level (baseline, x86-64-v3 or x86-64-v4)\n", cap);
            exit(2);
        }
        for (int i = 0; i < N_KERNEL_COPIES && !k; i++)
            if (strcmp(kernel_copies[i].name, name) == 0) k = &kernel_copies[i];
        (void)qp_model_producer_rounding(); /* its environment variable checked as early as QP_MODEL_ISA */
    }
    return k;
}

const char *qp_gpt_kernel_isa(void) { return kernels()->name; }

int qp_model_producer_rounding(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("QP_PRODUCER_ROUNDING");
        if (v && *v && strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
            fprintf(stderr, "QP_PRODUCER_ROUNDING=%s: not on or off\n", v);
            exit(2);
        }
        on = !(v && strcmp(v, "off") == 0);
    }
    return on;
}

int qp_gpt_forward(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, int B, int T)
{
    const kernel_copy *k = kernels();
    return m->cfg.arch == QP_ARCH_LLAMA ? k->llama_forward(m, lin, inputs, targets, B, T)
                                        : k->gpt_forward(m, lin, inputs, targets, B, T);
}

int qp_gpt_backward(qp_gpt *m, qp_linear *lin, const int32_t *inputs, const int32_t *targets, float loss_scale)
{
    const kernel_copy *k = kernels();
    return m->cfg.arch == QP_ARCH_LLAMA ? k->llama_backward(m, lin, inputs, targets, loss_scale)
                                        : k->gpt_backward(m, lin, inputs, targets, loss_scale);
}
