/* qp_gemm.c — oneDNN (v2.x C API) matmul primitives, cached by shape. */
#include "qp_gemm.h"

#include <cpuid.h>
#include <immintrin.h>
#include <oneapi/dnnl/dnnl.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qp_format.h"
#include "qp_prof.h"

/* Every product is split into blocks of its output, fixed by its shape and
 * the machine's CPU count (never the run's threads), and each block runs as
 * a single-threaded oneDNN primitive; the threads share out the blocks.
 * oneDNN's own threading chooses its kernel and its split (down to
 * splitting K) by the thread count, so its products change in the last bits
 * between 1 and 2 threads (test_gemm_threads): with the split fixed here, a
 * product is the same bits on any number of threads, which lets qtrain
 * choose its thread count at run time (qp_omp.h). */
#define MAX_PLANS 256
#define MAX_PRIMS (4 * MAX_PLANS) /* a plan's blocks have at most 2 widths by 2 heights */
#define MAX_SPLIT 16 /* a product is cut for at most this many CPUs */
#define MAX_STREAMS MAX_SPLIT /* and runs on at most as many threads */
#define BLOCK_MIN_FLOPS 4e6 /* a block's work (some 20 us on one core): a primitive call's fixed cost stays small */
#define BLOCK_ALIGN 16      /* blocks start on multiples of 16 rows or columns */
#define BLOCK_MIN_SIDE 64   /* and are at least 64 wide (or high), as oneDNN's own blocks are */
/* Where oneDNN's FP32 kernel gives a row different bits by the height of the
 * product it is in (its AVX2 jit sgemm: rows of a 32-row product differ from
 * the same rows of a 64-row one), FP32 blocks are at most ROW_QUANTUM rows,
 * each starting on a multiple of it: a row's bits then do not depend on M, so
 * a data-parallel rank's rows (a slice of a multiple of ROW_QUANTUM rows) are
 * the single process's (test_dist_linear). 64: as fast as whole products
 * there (32 was 10-25% slower). */
#define ROW_QUANTUM 64

typedef struct { /* one single-threaded primitive: a block shape m x n of a product M x N x K */
    int bf16, a_t, b_t, M, N, K, accumulate, m, n;
    dnnl_primitive_t prim;
} prim_entry;

typedef struct { /* one block of a product: where it starts, its primitive, its own memory objects */
    int m0, n0;
    prim_entry *p;
    dnnl_memory_t a, b, c, alpha;
} block;

typedef struct { /* one product shape and its blocks */
    int bf16, a_t, b_t, M, N, K, accumulate, nblocks;
    block *blk; /* nblocks */
} plan_entry;

struct qp_gemm {
    dnnl_engine_t engine;
    dnnl_stream_t streams[MAX_STREAMS]; /* one per thread: a stream is not shared between threads */
    int nstreams;
    prim_entry prims[MAX_PRIMS];
    int nprims;
    plan_entry *plans; /* MAX_PLANS */
    int nplans;
    int bf16_ok;           /* BF16 products run on a BF16 kernel (chosen and probed at create) */
    const char *bf16_kernel; /* qp_gemm_bf16_kernel */
    int f32_rows_vary;     /* FP32 blocks at most ROW_QUANTUM rows (no AVX-512) */
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

/* The memory descriptors of a block m x n of the product M x N x K, in the
 * full operands' strides: A [m, K] (stored M x K, or K x M when a_t), B as
 * oneDNN's weights [K, n] (stored N x K, or K x N when b_t), C [m, n] in M x N. */
static dnnl_status_t block_mds(int bf16, int a_t, int b_t, int M, int N, int K, int m, int n, dnnl_memory_desc_t *amd,
                               dnnl_memory_desc_t *bmd, dnnl_memory_desc_t *cmd)
{
    const dnnl_data_type_t dt = bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_dims_t ad = {m, K}, bd = {K, n}, cd = {m, n};
    dnnl_dims_t as = {a_t ? 1 : K, a_t ? M : 1}, bs = {b_t ? N : 1, b_t ? 1 : K}, cs = {N, 1};
    dnnl_status_t s;
    if ((s = dnnl_memory_desc_init_by_strides(amd, 2, ad, dt, as)) ||
        (s = dnnl_memory_desc_init_by_strides(bmd, 2, bd, dt, bs)))
        return s;
    return dnnl_memory_desc_init_by_strides(cmd, 2, cd, dnnl_f32, cs);
}

/* oneDNN sizes a primitive's threads when it creates it, and some of its
 * kernels again when they run: around both it must see one thread.
 * solo_begin returns the count to give back to solo_end. */
static int solo_begin(void)
{
#ifdef _OPENMP
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    return threads;
#else
    return 1;
#endif
}

static void solo_end(int threads)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
}

static prim_entry *get_prim(qp_gemm *g, int bf16, int a_t, int b_t, int M, int N, int K, int accumulate, int m, int n)
{
    for (int i = 0; i < g->nprims; i++) {
        prim_entry *e = &g->prims[i];
        if (e->bf16 == bf16 && e->a_t == a_t && e->b_t == b_t && e->M == M && e->N == N && e->K == K &&
            e->accumulate == accumulate && e->m == m && e->n == n)
            return e;
    }
    if (g->nprims == MAX_PRIMS) {
        snprintf(g->err, sizeof g->err, "oneDNN: more than %d GEMM block shapes", MAX_PRIMS);
        return NULL;
    }
    dnnl_memory_desc_t amd, bmd, cmd;
    dnnl_status_t s = block_mds(bf16, a_t, b_t, M, N, K, m, n, &amd, &bmd, &cmd);
    if (s) {
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
    const int threads = solo_begin();
    dnnl_primitive_desc_t pd;
    s = dnnl_primitive_desc_create(&pd, &md, attr, g->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    prim_entry *e = &g->prims[g->nprims];
    if (!s) {
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        snprintf(bf16 ? g->impl_bf16 : g->impl_f32, sizeof g->impl_f32, "%s", impl ? impl : "?");
        memset(e, 0, sizeof *e);
        s = dnnl_primitive_create(&e->prim, pd);
        dnnl_primitive_desc_destroy(pd);
        if (s) fail(g, "primitive", s);
    } else {
        fail(g, bf16 ? "BF16 matmul" : "FP32 matmul", s);
    }
    solo_end(threads);
    if (s) return NULL;
    e->bf16 = bf16, e->a_t = a_t, e->b_t = b_t, e->M = M, e->N = N, e->K = K, e->accumulate = accumulate;
    e->m = m, e->n = n;
    g->nprims++;
    return e;
}

/* How many parts a dimension of `size` is cut into for `parts` blocks:
 * starts on multiples of BLOCK_ALIGN, the last part the remainder. */
static int part_size(int size, int parts)
{
    const int p = (size + parts - 1) / parts;
    return (p + BLOCK_ALIGN - 1) / BLOCK_ALIGN * BLOCK_ALIGN;
}

/* The blocks of a product, from its shape and the machine only: as many
 * as the machine has CPUs online (a power of two, at most MAX_SPLIT; not
 * the run's threads, which may be fewer), each at least BLOCK_MIN_FLOPS,
 * cutting the longer side of the block each time while it stays at least
 * BLOCK_MIN_SIDE long: few, large, square blocks are what oneDNN's kernels
 * run fastest. */
static void plan_blocks(int M, int N, int K, int *bm, int *bn)
{
    static int most = 0;
    if (!most) {
        const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        for (most = 1; most < MAX_SPLIT && 2 * most <= cpus;) most *= 2;
    }
    int pm = 1, pn = 1;
    for (double flops = 2.0 * M * N * K; pm * pn < most && flops / (2 * pm * pn) >= BLOCK_MIN_FLOPS;) {
        const int rows = M / pm, cols = N / pn;
        if (cols >= rows && cols >= 2 * BLOCK_MIN_SIDE) pn *= 2;
        else if (rows >= 2 * BLOCK_MIN_SIDE) pm *= 2;
        else if (cols >= 2 * BLOCK_MIN_SIDE) pn *= 2;
        else break;
    }
    *bm = pm, *bn = pn;
}

/* the memory objects of a plan's blocks (a half-built plan's too: unset ones are NULL) */
static void plan_free(plan_entry *p)
{
    for (int k = 0; k < p->nblocks; k++) {
        block *b = &p->blk[k];
        dnnl_memory_destroy(b->a);
        dnnl_memory_destroy(b->b);
        dnnl_memory_destroy(b->c);
        dnnl_memory_destroy(b->alpha);
    }
    free(p->blk);
    memset(p, 0, sizeof *p);
}

static plan_entry *get_plan(qp_gemm *g, int bf16, int a_t, int b_t, int M, int N, int K, int accumulate)
{
    for (int i = 0; i < g->nplans; i++) {
        plan_entry *p = &g->plans[i];
        if (p->bf16 == bf16 && p->a_t == a_t && p->b_t == b_t && p->M == M && p->N == N && p->K == K &&
            p->accumulate == accumulate)
            return p;
    }
    if (g->nplans == MAX_PLANS) {
        snprintf(g->err, sizeof g->err, "oneDNN: more than %d GEMM shapes", MAX_PLANS);
        return NULL;
    }
    int pm, pn;
    plan_blocks(M, N, K, &pm, &pn);
    int sm = part_size(M, pm);
    const int sn = part_size(N, pn);
    if (!bf16 && g->f32_rows_vary) sm = ROW_QUANTUM;
    plan_entry *p = &g->plans[g->nplans];
    memset(p, 0, sizeof *p);
    const int most = ((M + sm - 1) / sm) * ((N + sn - 1) / sn);
    if (!(p->blk = calloc((size_t)most, sizeof *p->blk))) {
        snprintf(g->err, sizeof g->err, "out of memory for a GEMM plan");
        return NULL;
    }
    for (int m0 = 0; m0 < M; m0 += sm)
        for (int n0 = 0; n0 < N; n0 += sn) {
            block *b = &p->blk[p->nblocks++];
            const int m = M - m0 < sm ? M - m0 : sm, n = N - n0 < sn ? N - n0 : sn;
            b->m0 = m0, b->n0 = n0;
            if (!(b->p = get_prim(g, bf16, a_t, b_t, M, N, K, accumulate, m, n))) {
                plan_free(p);
                return NULL;
            }
            dnnl_memory_desc_t amd, bmd, cmd, smd;
            const dnnl_dims_t sd = {1};
            dnnl_status_t s;
            if ((s = block_mds(bf16, a_t, b_t, M, N, K, m, n, &amd, &bmd, &cmd)) ||
                (s = dnnl_memory_desc_init_by_tag(&smd, 1, sd, dnnl_f32, dnnl_a)) ||
                (s = dnnl_memory_create(&b->a, &amd, g->engine, DNNL_MEMORY_NONE)) ||
                (s = dnnl_memory_create(&b->b, &bmd, g->engine, DNNL_MEMORY_NONE)) ||
                (s = dnnl_memory_create(&b->c, &cmd, g->engine, DNNL_MEMORY_NONE)) ||
                (s = dnnl_memory_create(&b->alpha, &smd, g->engine, DNNL_MEMORY_NONE))) {
                fail(g, "memory", s);
                plan_free(p);
                return NULL;
            }
        }
    p->bf16 = bf16, p->a_t = a_t, p->b_t = b_t, p->M = M, p->N = N, p->K = K, p->accumulate = accumulate;
    g->nplans++;
    return p;
}

/* A stream for each thread that may run a block. */
static int ensure_streams(qp_gemm *g, int threads)
{
    for (; g->nstreams < threads; g->nstreams++) {
        const dnnl_status_t s = dnnl_stream_create(&g->streams[g->nstreams], g->engine, dnnl_stream_default_flags);
        if (s) return fail(g, "stream", s);
    }
    return 0;
}

/* QP_GEMM's value (unset or empty: auto); GEMM_BAD for any other. */
typedef enum { GEMM_AUTO, GEMM_BF16, GEMM_F32, GEMM_BAD } gemm_choice;

static gemm_choice gemm_choice_asked(void)
{
    const char *asked = getenv("QP_GEMM");
    if (!asked || !*asked || !strcmp(asked, "auto")) return GEMM_AUTO;
    if (!strcmp(asked, "bf16")) return GEMM_BF16;
    if (!strcmp(asked, "f32")) return GEMM_F32;
    return GEMM_BAD;
}

int qp_gemm_choice_check(char *err, size_t errlen)
{
    if (gemm_choice_asked() != GEMM_BAD) return 0;
    snprintf(err, errlen, "QP_GEMM=%.40s: not a GEMM kernel choice (auto, bf16 or f32)", getenv("QP_GEMM"));
    return -1;
}

qp_gemm *qp_gemm_create(char *err, size_t errlen)
{
    qp_gemm *g = calloc(1, sizeof *g);
    plan_entry *plans = calloc(MAX_PLANS, sizeof *plans);
    if (!g || !plans) {
        free(g), free(plans);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->plans = plans;
    dnnl_status_t s;
    if ((s = dnnl_engine_create(&g->engine, dnnl_cpu, 0))) {
        snprintf(err, errlen, "oneDNN: cannot create a CPU engine (status %d)", (int)s);
        free(g->plans), free(g);
        return NULL;
    }
    if (ensure_streams(g, 1)) {
        snprintf(err, errlen, "oneDNN: cannot create a CPU stream");
        qp_gemm_destroy(g);
        return NULL;
    }
    snprintf(g->impl_bf16, sizeof g->impl_bf16, "none");
    snprintf(g->impl_f32, sizeof g->impl_f32, "none");
    if (qp_gemm_choice_check(err, errlen)) {
        qp_gemm_destroy(g);
        return NULL;
    }
    const gemm_choice asked = gemm_choice_asked();
    const int want_bf16 = asked == GEMM_BF16 || (asked == GEMM_AUTO && qp_gemm_auto_bf16(qp_gemm_cpu_read()));
    /* Probe: can this CPU build a BF16 matmul? */
    g->bf16_ok = want_bf16 && get_prim(g, 1, 0, 0, 16, 16, 16, 0, 16, 16) != NULL;
    g->bf16_kernel = g->bf16_ok              ? "onednn-bf16"
                     : asked == GEMM_F32     ? "fp32-forced"
                     : want_bf16             ? "fp32-fallback"
                                             : "fp32-chosen";
    __builtin_cpu_init();
    g->f32_rows_vary = !__builtin_cpu_supports("avx512f");
    if (!g->bf16_ok) snprintf(g->impl_bf16, sizeof g->impl_bf16, "%s", g->bf16_kernel);
    g->err[0] = 0;
    return g;
}

void qp_gemm_destroy(qp_gemm *g)
{
    if (!g) return;
    for (int i = 0; i < g->nplans; i++) plan_free(&g->plans[i]);
    for (int i = 0; i < g->nprims; i++) dnnl_primitive_destroy(g->prims[i].prim);
    for (int i = 0; i < g->nstreams; i++) dnnl_stream_destroy(g->streams[i]);
    dnnl_engine_destroy(g->engine);
    free(g->plans);
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
    plan_entry *p = get_plan(g, bf16, a_t, b_t, M, N, K, accumulate);
    if (!p) return -1;
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
    const int max_threads = solo_begin(), threads = p->nblocks < max_threads ? p->nblocks : max_threads;
    if (ensure_streams(g, threads)) {
        solo_end(max_threads);
        return -1;
    }
    const size_t esz = bf16 ? 2 : 4;
    int failed = 0;
#pragma omp parallel for schedule(static) reduction(| : failed) num_threads(threads) if (threads > 1)
    for (int k = 0; k < p->nblocks; k++) {
        const block *bk = &p->blk[k];
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        const size_t ao = a_t ? (size_t)bk->m0 : (size_t)bk->m0 * K, bo = b_t ? (size_t)bk->n0 : (size_t)bk->n0 * K;
        dnnl_memory_set_data_handle(bk->a, (char *)a + ao * esz);
        dnnl_memory_set_data_handle(bk->b, (char *)b + bo * esz);
        dnnl_memory_set_data_handle(bk->c, C + (size_t)bk->m0 * N + bk->n0);
        dnnl_memory_set_data_handle(bk->alpha, &alpha);
        const dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, bk->a},
                                         {DNNL_ARG_WEIGHTS, bk->b},
                                         {DNNL_ARG_DST, bk->c},
                                         {DNNL_ARG_ATTR_OUTPUT_SCALES, bk->alpha}};
        const dnnl_stream_t st = g->streams[t]; /* t < threads <= nstreams */
        dnnl_status_t s = dnnl_primitive_execute(bk->p->prim, st, 4, args);
        if (!s) s = dnnl_stream_wait(st);
        failed |= s != dnnl_success;
    }
    solo_end(max_threads);
    if (failed) return fail(g, "matmul execute", dnnl_runtime_error);
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
const char *qp_gemm_bf16_kernel(const qp_gemm *g) { return g->bf16_kernel; }

int qp_gemm_auto_bf16(qp_gemm_cpu c) { return c.amx_bf16 || (c.amd && c.avx512_bf16); }

qp_gemm_cpu qp_gemm_cpu_read(void)
{
    qp_gemm_cpu c = {0, 0, 0};
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, cx, d;
    if (!__get_cpuid(0, &a, &b, &cx, &d)) return c;
    c.amd = b == 0x68747541u && d == 0x69746e65u && cx == 0x444d4163u; /* "Auth" "enti" "cAMD" */
    if (a < 7) return c;
    __cpuid_count(7, 0, a, b, cx, d);
    const int amx_cpu = (d >> 22 & 1u) && (d >> 24 & 1u); /* AMX-BF16, AMX-TILE */
    const unsigned max_sub = a;
    if (max_sub >= 1) {
        __cpuid_count(7, 1, a, b, cx, d);
        c.avx512_bf16 = a >> 5 & 1u;
    }
    __cpuid(1, a, b, cx, d);
    if (amx_cpu && (cx >> 27 & 1u)) { /* OSXSAVE: XCR0 says whether the OS saves the tile state */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        c.amx_bf16 = (lo >> 17 & 3u) == 3u;
    }
#endif
    return c;
}
