/* qp_gemm.c — oneDNN (v2.x C API) matmul primitives, cached by shape. */
#include "qp_gemm.h"

#include <immintrin.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qp_format.h"
#include "qp_prof.h"

#define MAX_PRIMS 256

typedef struct {
    int bf16, a_t, b_t, M, N, K, accumulate;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, alpha;
} prim_entry;

struct qp_gemm {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    prim_entry prims[MAX_PRIMS];
    int nprims;
    int bf16_ok;           /* BF16 kernels usable (probed at create) */
    uint16_t *abuf, *bbuf; /* BF16 copies of the operands */
    size_t abuf_n, bbuf_n;
    float *wabuf, *wbbuf;  /* FP32 copies of BF16 operands (no BF16 kernel) */
    size_t wabuf_n, wbbuf_n;
    float *kbuf;           /* qp_gemm_run_kscaled: the chunks of A and B, a partial product, the sum */
    size_t kbuf_n;
    char impl_bf16[96], impl_f32[96];
    double seconds, flops;
    char err[256];
};

static int fail(qp_gemm *g, const char *what, dnnl_status_t s)
{
    snprintf(g->err, sizeof g->err, "oneDNN: %s failed (status %d)", what, (int)s);
    return -1;
}

static prim_entry *get_prim(qp_gemm *g, int bf16, int a_t, int b_t, int M, int N, int K, int accumulate)
{
    for (int i = 0; i < g->nprims; i++) {
        prim_entry *e = &g->prims[i];
        if (e->bf16 == bf16 && e->a_t == a_t && e->b_t == b_t && e->M == M && e->N == N && e->K == K &&
            e->accumulate == accumulate)
            return e;
    }
    if (g->nprims == MAX_PRIMS) {
        snprintf(g->err, sizeof g->err, "oneDNN: more than %d GEMM shapes", MAX_PRIMS);
        return NULL;
    }
    const dnnl_data_type_t dt = bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t amd, bmd, cmd, smd;
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N}, sd = {1};
    dnnl_status_t s;
    if ((s = dnnl_memory_desc_init_by_tag(&amd, 2, ad, dt, a_t ? dnnl_ba : dnnl_ab)) ||
        (s = dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dt, b_t ? dnnl_ab : dnnl_ba)) ||
        (s = dnnl_memory_desc_init_by_tag(&cmd, 2, cd, dnnl_f32, dnnl_ab)) ||
        (s = dnnl_memory_desc_init_by_tag(&smd, 1, sd, dnnl_f32, dnnl_a))) {
        fail(g, "memory descriptor", s);
        return NULL;
    }
    dnnl_matmul_desc_t md;
    if ((s = dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &cmd))) {
        fail(g, "matmul descriptor", s);
        return NULL;
    }
    dnnl_primitive_attr_t attr;
    dnnl_primitive_attr_create(&attr);
    const float runtime_scale = DNNL_RUNTIME_F32_VAL;
    dnnl_primitive_attr_set_output_scales(attr, 1, 0, &runtime_scale);
    if (accumulate) {
        dnnl_post_ops_t po;
        dnnl_post_ops_create(&po);
        dnnl_post_ops_append_sum(po, 1.0f);
        dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);
    }
    dnnl_primitive_desc_t pd;
    s = dnnl_primitive_desc_create(&pd, &md, attr, g->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (s) {
        fail(g, bf16 ? "BF16 matmul" : "FP32 matmul", s);
        return NULL;
    }
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(bf16 ? g->impl_bf16 : g->impl_f32, sizeof g->impl_f32, "%s", impl ? impl : "?");
    prim_entry *e = &g->prims[g->nprims];
    memset(e, 0, sizeof *e);
    s = dnnl_primitive_create(&e->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (s) {
        fail(g, "primitive", s);
        return NULL;
    }
    if ((s = dnnl_memory_create(&e->a, &amd, g->engine, DNNL_MEMORY_NONE)) ||
        (s = dnnl_memory_create(&e->b, &bmd, g->engine, DNNL_MEMORY_NONE)) ||
        (s = dnnl_memory_create(&e->c, &cmd, g->engine, DNNL_MEMORY_NONE)) ||
        (s = dnnl_memory_create(&e->alpha, &smd, g->engine, DNNL_MEMORY_NONE))) {
        fail(g, "memory", s);
        return NULL;
    }
    e->bf16 = bf16, e->a_t = a_t, e->b_t = b_t, e->M = M, e->N = N, e->K = K, e->accumulate = accumulate;
    g->nprims++;
    return e;
}

qp_gemm *qp_gemm_create(char *err, size_t errlen)
{
    qp_gemm *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    dnnl_status_t s;
    if ((s = dnnl_engine_create(&g->engine, dnnl_cpu, 0)) ||
        (s = dnnl_stream_create(&g->stream, g->engine, dnnl_stream_default_flags))) {
        snprintf(err, errlen, "oneDNN: cannot create a CPU engine (status %d)", (int)s);
        free(g);
        return NULL;
    }
    snprintf(g->impl_bf16, sizeof g->impl_bf16, "none");
    snprintf(g->impl_f32, sizeof g->impl_f32, "none");
    const char *force = getenv("QP_GEMM");
    /* Probe: can this CPU build a BF16 matmul? */
    g->bf16_ok = !(force && strcmp(force, "f32") == 0) && get_prim(g, 1, 0, 0, 16, 16, 16, 0) != NULL;
    if (!g->bf16_ok) snprintf(g->impl_bf16, sizeof g->impl_bf16, "fp32-fallback");
    g->err[0] = 0;
    return g;
}

void qp_gemm_destroy(qp_gemm *g)
{
    if (!g) return;
    for (int i = 0; i < g->nprims; i++) {
        prim_entry *e = &g->prims[i];
        dnnl_primitive_destroy(e->prim);
        dnnl_memory_destroy(e->a);
        dnnl_memory_destroy(e->b);
        dnnl_memory_destroy(e->c);
        dnnl_memory_destroy(e->alpha);
    }
    dnnl_stream_destroy(g->stream);
    dnnl_engine_destroy(g->engine);
    free(g->abuf);
    free(g->bbuf);
    free(g->wabuf);
    free(g->wbbuf);
    free(g->kbuf);
    free(g);
}

/* The top halves of n floats, 16 at a time where the CPU has AVX-512BW. */
__attribute__((target("avx512f,avx512bw"))) static void high_halves_avx512(uint16_t *o, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(o + i),
                            _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_loadu_si512((const void *)(x + i)), 16)));
    for (; i < n; i++) o[i] = (uint16_t)(qp_f32_bits(x[i]) >> 16);
}

static void high_halves(uint16_t *o, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) o[i] = (uint16_t)(qp_f32_bits(x[i]) >> 16);
}

static uint16_t *to_bf16(uint16_t **buf, size_t *cap, const float *x, size_t n)
{
    static int avx512 = -1;
    if (avx512 < 0) {
        __builtin_cpu_init();
        avx512 = __builtin_cpu_supports("avx512bw");
    }
    if (*cap < n) {
        uint16_t *nb = realloc(*buf, n * sizeof(uint16_t));
        if (!nb) return NULL;
        *buf = nb;
        *cap = n;
    }
    uint16_t *o = *buf;
    /* Exact: the caller promises BF16 values, so this only drops zero bits.
     * Chunks of 64K elements among the threads; small operands in one. */
    const size_t chunk = 1 << 16, nch = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (nch > 1)
    for (size_t c = 0; c < nch; c++) {
        const size_t lo = c * chunk, m = n - lo < chunk ? n - lo : chunk;
        if (avx512) high_halves_avx512(o + lo, x + lo, m);
        else high_halves(o + lo, x + lo, m);
    }
    return o;
}

static float *widen(float **buf, size_t *cap, const uint16_t *x, size_t n)
{
    if (*cap < n) {
        float *nb = realloc(*buf, n * sizeof(float));
        if (!nb) return NULL;
        *buf = nb;
        *cap = n;
    }
    float *o = *buf;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
    for (size_t i = 0; i < n; i++) o[i] = qp_bf16_to_f32(x[i]);
    return o;
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* The product of float operands (bf16_exact: BF16 values, converted here) or
 * of BF16 bits (a16, b16: given as they are; widened when this CPU has no
 * BF16 kernel, whose FP32 products of BF16 values are the same). */
static int gemm_run(qp_gemm *g, const void *A, int a16, int a_t, const void *B, int b16, int b_t, float *C, int M,
                    int N, int K, float alpha, int accumulate, int bf16_exact)
{
    const double t0 = seconds_now();
    const int bf16 = (bf16_exact || (a16 && b16)) && g->bf16_ok;
    prim_entry *e = get_prim(g, bf16, a_t, b_t, M, N, K, accumulate);
    if (!e) return -1;
    const void *a = A, *b = B;
    if (bf16) {
        if (!a16) a = to_bf16(&g->abuf, &g->abuf_n, A, (size_t)M * K);
        if (!b16) b = to_bf16(&g->bbuf, &g->bbuf_n, B, (size_t)N * K);
    } else {
        if (a16) a = widen(&g->wabuf, &g->wabuf_n, A, (size_t)M * K);
        if (b16) b = widen(&g->wbbuf, &g->wbbuf_n, B, (size_t)N * K);
    }
    if (!a || !b) {
        snprintf(g->err, sizeof g->err, "out of memory for GEMM operands");
        return -1;
    }
    dnnl_memory_set_data_handle(e->a, (void *)a);
    dnnl_memory_set_data_handle(e->b, (void *)b);
    dnnl_memory_set_data_handle(e->c, C);
    dnnl_memory_set_data_handle(e->alpha, &alpha);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->a},
                               {DNNL_ARG_WEIGHTS, e->b},
                               {DNNL_ARG_DST, e->c},
                               {DNNL_ARG_ATTR_OUTPUT_SCALES, e->alpha}};
    dnnl_status_t s = dnnl_primitive_execute(e->prim, g->stream, 4, args);
    if (!s) s = dnnl_stream_wait(g->stream);
    if (s) return fail(g, "matmul execute", s);
    g->seconds += seconds_now() - t0;
    g->flops += 2.0 * M * N * K;
    return 0;
}

int qp_gemm_run(qp_gemm *g, const float *A, int a_t, const float *B, int b_t, float *C, int M, int N, int K,
                float alpha, int accumulate, int bf16_exact)
{
    qp_prof_push(QP_PHASE_GEMM);
    const int rc = gemm_run(g, A, 0, a_t, B, 0, b_t, C, M, N, K, alpha, accumulate, bf16_exact);
    qp_prof_pop();
    return rc;
}

/* Columns [k0, k0 + w) of X (rows x K, or stored K x rows when x_t; BF16
 * bits when x16, else floats) into dst (rows x w) as floats. */
static void copy_chunk(const void *X, int x16, int x_t, int rows, int K, int k0, int w, float *dst)
{
    const float *xf = X;
    const uint16_t *xh = X;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < w; k++) {
            const size_t i = x_t ? (size_t)(k0 + k) * rows + r : (size_t)r * K + k0 + k;
            dst[(size_t)r * w + k] = x16 ? qp_bf16_to_f32(xh[i]) : xf[i];
        }
}

static int gemm_run_kscaled(qp_gemm *g, const void *A, int a16, int a_t, const void *B, int b16, int b_t, float *C,
                            int M, int N, int K, int kc, const float *sa, const float *sb, float alpha,
                            int accumulate, int bf16_exact)
{
    if (kc <= 0 || M <= 0 || N <= 0 || K <= 0) {
        snprintf(g->err, sizeof g->err, "K-chunked GEMM: bad shape %dx%dx%d, chunk %d", M, N, K, kc);
        return -1;
    }
    const int nk = (K + kc - 1) / kc;
    const size_t w = (size_t)(K < kc ? K : kc), need = (size_t)M * w + (size_t)N * w + 2 * (size_t)M * N;
    if (g->kbuf_n < need) {
        float *nb = realloc(g->kbuf, need * sizeof(float));
        if (!nb) {
            snprintf(g->err, sizeof g->err, "out of memory for the K-chunked GEMM");
            return -1;
        }
        g->kbuf = nb;
        g->kbuf_n = need;
    }
    float *ac = g->kbuf, *bc = ac + (size_t)M * w, *part = bc + (size_t)N * w, *acc = part + (size_t)M * N;
    for (int c = 0; c < nk; c++) {
        const int k0 = c * kc, wc = K - k0 < kc ? K - k0 : kc;
        copy_chunk(A, a16, a_t, M, K, k0, wc, ac);
        copy_chunk(B, b16, b_t, N, K, k0, wc, bc);
        if (gemm_run(g, ac, 0, 0, bc, 0, 0, part, M, N, wc, 1.0f, 0, bf16_exact)) return -1;
        /* promoted to FP32 and scaled, in chunk order: acc += (sa * sb) * part */
#pragma omp parallel for schedule(static)
        for (int m = 0; m < M; m++) {
            const float am = sa ? sa[(size_t)m * nk + c] : 1.0f;
            float *arow = acc + (size_t)m * N;
            const float *prow = part + (size_t)m * N;
            for (int n = 0; n < N; n++) {
                const float scale = am * (sb ? sb[(size_t)n * nk + c] : 1.0f);
                arow[n] = c == 0 ? scale * prow[n] : arow[n] + scale * prow[n];
            }
        }
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < (size_t)M * N; i++) C[i] = accumulate ? alpha * acc[i] + C[i] : alpha * acc[i];
    return 0;
}

/* The chunk copies and the FP32 promotion count as GEMM time too. */
int qp_gemm_run_kscaled(qp_gemm *g, const float *A, int a_t, const float *B, int b_t, float *C, int M, int N, int K,
                        int kc, const float *sa, const float *sb, float alpha, int accumulate, int bf16_exact)
{
    qp_prof_push(QP_PHASE_GEMM);
    const int rc = gemm_run_kscaled(g, A, 0, a_t, B, 0, b_t, C, M, N, K, kc, sa, sb, alpha, accumulate, bf16_exact);
    qp_prof_pop();
    return rc;
}

int qp_gemm_run_typed(qp_gemm *g, const void *A, int a16, int a_t, const void *B, int b16, int b_t, float *C, int M,
                      int N, int K, int kc, const float *sa, const float *sb, float alpha, int accumulate,
                      int bf16_exact)
{
    qp_prof_push(QP_PHASE_GEMM);
    const int rc = kc > 0 ? gemm_run_kscaled(g, A, a16, a_t, B, b16, b_t, C, M, N, K, kc, sa, sb, alpha, accumulate,
                                             bf16_exact)
                          : gemm_run(g, A, a16, a_t, B, b16, b_t, C, M, N, K, alpha, accumulate, bf16_exact);
    qp_prof_pop();
    return rc;
}

void qp_gemm_counters(const qp_gemm *g, double *seconds, double *flops)
{
    *seconds = g->seconds;
    *flops = g->flops;
}

const char *qp_gemm_error(const qp_gemm *g) { return g->err; }
const char *qp_gemm_impl_bf16(const qp_gemm *g) { return g->impl_bf16; }
const char *qp_gemm_impl_f32(const qp_gemm *g) { return g->impl_f32; }
int qp_gemm_has_bf16(const qp_gemm *g) { return g->bf16_ok; }
