/* test_cuda_linear_pass.c — the GPU's operations of the precision dispatch
 * (kernels/qp_cuda_linear_ops.h, the code qp_cuda_linear.cu runs under the
 * one dispatch of train/precision/qp_linear.c) with host primitives, against the
 * dispatch on the CPU's operations, without a GPU.
 *
 * Host primitives: quant/'s qp_qdq / qp_quantize for the device quantizer
 * (bit-identical to it by its own tests), qp_rht and qp_rht16_te (the
 * kernels' seeded and Transformer Engine RHTs), plain transposes, a kept
 * statistics list, and the CPU GEMM on the operands the GPU GEMM would get
 * (BF16 bits or FP32 with their decode-scale pointers folded into alpha, or
 * FP8 codes with a decode-scale pointer). For every recipe (presets and
 * per-use rules: mixed formats in one GEMM, an unquantized operand meeting a
 * quantized one, a delayed scaling state owned by wgrad, a GEMM type left
 * out of the RHT, TE's fixed-sign RHT (te-nvfp4, rht=te), the new formats:
 * FP8 blocks with FP32 scales in an FP32 GEMM against the CPU's K-chunked
 * one, MXFP6, 4/6, rceil, a 128-point RHT;
 * a Llama's blocks: rules on its gate, up and down GEMMs), both paths (emulated and native), several layers, three steps and two
 * micro-batches: Y, dX, dW and db to 1e-5 of their largest magnitude (the
 * GEMMs sum in other orders), the scaling states exactly, the same events and
 * the same qerr rows — the GPU's statistics kept and flushed only at the end
 * of each micro-batch, as its backend does (and a kept list of 3, flushed
 * mid-pass; the CPU's apply at once). Native paths by a fake compute
 * capability (qpl_set_device: 90 FP8, 100 MXFP8/NVFP4 block-scaled, the host
 * GEMM decoding codes and cuBLASLt-tiled block scales) and the decisions
 * alone (path names, the kind of each GEMM by formats and shape,
 * QP_CUDA_EMULATE). Data parallelism: two ranks (threads whose reduce hooks
 * all-reduce through a barrier) each running the dispatch on both operation
 * tables on its token slice — same outputs, scaling states, events and
 * number of amax all-reduces. A device whose primitives lack TE's RHT
 * refuses rht=te at its first wgrad with one line. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_cuda_linear_ops.h"
#include "qp_model_math.h"
#include "qp_format.h"
#include "qp_gemm.h"
#include "qp_hadamard.h"
#include "qp_linear.h"
#include "qp_model.h"
#include "qp_recipe.h"
#include "qp_scale_layout.h"
#include "qp_test.h"

static unsigned long long rng = 0x1234567887654321ull;

#define MAXKEPT 512

typedef struct {
    qp_gemm *gemm;
    char err[256];
    qpl_stats stats[2];
    qpl_stats kept[MAXKEPT]; /* the device's kept statistics */
    int n_fetches;           /* fetches of kept statistics */
    float scale_inv[2];
    float *fa, *fb; /* GEMM operands as FP32 */
    uint8_t *tiled[2];  /* per side: block scales in cuBLASLt's tiled layout */
    int kinds[QPL_KIND_COUNT]; /* GEMMs run, by QPL_* kind */
    int n_amax;         /* amax operations (data parallelism) */
} host;

#define H ((host *)x)

static const char *h_error(void *x) { return H->err; }

static int h_transpose(void *x, const float *src, float *dst, int r, int c)
{
    (void)x;
    for (int i = 0; i < r; i++)
        for (int j = 0; j < c; j++) dst[(int64_t)j * r + i] = src[(int64_t)i * c + j];
    return 0;
}
static int h_transpose_u8(void *x, const uint8_t *src, uint8_t *dst, int r, int c)
{
    (void)x;
    for (int i = 0; i < r; i++)
        for (int j = 0; j < c; j++) dst[(int64_t)j * r + i] = src[(int64_t)i * c + j];
    return 0;
}
static int h_copy(void *x, float *dst, const float *src, int64_t n)
{
    (void)x;
    memcpy(dst, src, (size_t)n * sizeof(float));
    return 0;
}
static int h_rht(void *x, float *d, int rows, int cols, int n, uint64_t seed)
{
    if (!qp_rht(d, rows, cols, n, seed)) return 0;
    snprintf(H->err, sizeof H->err, "no %d-point RHT over %d columns", n, cols);
    return -1;
}
static int h_rht_te(void *x, float *d, int rows, int cols)
{
    if (!qp_rht16_te(d, rows, cols)) return 0;
    snprintf(H->err, sizeof H->err, "no Transformer Engine RHT over %d columns", cols);
    return -1;
}
static void put_stats(host *h, int side, const qp_qstats *qs)
{
    qpl_stats *s = &h->stats[side];
    memset(s, 0, sizeof *s);
    s->amax = qs->amax, s->scale = qs->scale, s->scale_inv = qs->scale_inv;
    s->n_nonfinite = (uint64_t)qs->n_nonfinite, s->n_sat = (uint64_t)qs->n_sat;
    h->scale_inv[side] = qs->scale_inv;
}
static int h_qdq(void *x, qp_fmt fmt, const float *in, float *y, uint16_t *y_bf16, int rows, int cols,
                 const qp_qopts *o, int side)
{
    qp_qstats qs;
    if (qp_qdq(fmt, in, y, rows, cols, o, &qs)) {
        snprintf(H->err, sizeof H->err, "no format %d", (int)fmt);
        return -1;
    }
    for (int64_t i = 0; y_bf16 && i < (int64_t)rows * cols; i++) y_bf16[i] = (uint16_t)(qp_f32_bits(y[i]) >> 16);
    put_stats(H, side, &qs);
    return 0;
}
static int h_quantize(void *x, qp_fmt fmt, const float *in, int rows, int cols, const qp_qopts *o, uint8_t *codes,
                      int side)
{
    qp_qtensor q;
    if (qp_qtensor_alloc(&q, fmt, rows, cols)) return -1;
    qp_qstats qs;
    qp_quantize(in, &q, o, &qs);
    memcpy(codes, q.codes, (size_t)(rows * q.row_bytes)); /* packed: row_bytes per row */
    if (qp_formats[fmt].block_cols > 1) {
        free(H->tiled[side]);
        H->tiled[side] = malloc((size_t)qp_scale_tiled_size(rows, q.scale_cols) + 1);
        if (qp_scale_swizzle(q.scales, rows, q.scale_cols, qp_formats[fmt].block_rows, H->tiled[side])) return -1;
    }
    qp_qtensor_free(&q);
    put_stats(H, side, &qs);
    return 0;
}
static int h_to_bf16(void *x, const float *in, uint16_t *y, int64_t n)
{
    (void)x;
    for (int64_t i = 0; i < n; i++) y[i] = (uint16_t)(qp_f32_bits(in[i]) >> 16);
    return 0;
}
static float decode(const uint8_t *codes, int e5m2, int64_t i)
{
    return e5m2 ? qp_e5m2_to_f32(codes[i]) : qp_e4m3_to_f32(codes[i]);
}
static int h_reduce(void *x, const float *in, const float *y, const uint8_t *codes, int e5m2, int64_t n, int side)
{
    qpl_stats *s = &H->stats[side];
    double xx = 0, ee = 0;
    uint64_t nz = 0, fl = 0;
    for (int64_t i = 0; i < n; i++) {
        const float a = in[i];
        if (!isfinite(a)) continue;
        const float q = codes ? decode(codes, e5m2, i) : y[i], m = q * s->scale_inv;
        const double e = (double)a - (double)m;
        xx += (double)a * a, ee += e * e;
        if (a != 0.0f) nz++, fl += q == 0.0f;
    }
    s->xx = xx, s->ee = ee, s->n_nonzero = nz, s->n_flushed = fl;
    return 0;
}
static int h_keep(void *x, int side, int slot)
{
    if (slot < 0 || slot >= MAXKEPT) return -1;
    H->kept[slot] = H->stats[side];
    return 0;
}
static int h_fetch_kept(void *x, int n, qpl_stats *out)
{
    H->n_fetches++;
    memcpy(out, H->kept, (size_t)n * sizeof *out);
    return 0;
}
static const float *h_scale_inv_ptr(void *x, int side) { return &H->scale_inv[side]; }
static const uint8_t *h_block_scales_ptr(void *x, int side) { return H->tiled[side]; }
static int h_amax(void *x, const float *in, int64_t n, float *out)
{
    H->n_amax++;
    *out = qp_amax(in, n);
    return 0;
}
/* rows x K operand as FP32 values (block formats: element x block scale x
 * tensor decode scale, the scales read back from the tiled layout) */
static int to_f32(const qp_linear_operand *o, float *dst, int64_t rows, int64_t K)
{
    const int64_t n = rows * K;
    if (o->trans || o->kscale) return -1; /* the GPU's operands are rows x K, never K-chunked */
    switch (o->type) {
    case QP_LOP_MXFP8:
    case QP_LOP_NVFP4: {
        const int mx = o->type == QP_LOP_MXFP8, bc = mx ? 32 : 16;
        const int64_t sc = K / bc;
        uint8_t *plain = malloc((size_t)(rows * sc) + 1);
        if (!o->block_scales || qp_scale_unswizzle(o->block_scales, rows, sc, plain)) return free(plain), -1;
        const uint8_t *c = o->data;
        const float sinv = o->scale_inv_ptr ? *o->scale_inv_ptr : 1.0f;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < K; k++) {
                const uint8_t s8 = plain[r * sc + k / bc];
                const float v = mx ? qp_e4m3_to_f32(c[r * K + k]) * qp_e8m0_to_f32(s8)
                                   : qp_e2m1_to_f32((uint8_t)(c[r * (K / 2) + k / 2] >> (4 * (k & 1)))) *
                                         qp_ue4m3_to_f32(s8);
                dst[r * K + k] = v * sinv;
            }
        free(plain);
        return 0;
    }
    case QP_LOP_F32:
        for (int64_t i = 0; i < n; i++) dst[i] = ((const float *)o->data)[i];
        return 0;
    case QP_LOP_BF16:
        for (int64_t i = 0; i < n; i++) dst[i] = qp_bf16_to_f32(((const uint16_t *)o->data)[i]);
        return 0;
    case QP_LOP_E4M3:
    case QP_LOP_E5M2:
        for (int64_t i = 0; i < n; i++)
            dst[i] = decode(o->data, o->type == QP_LOP_E5M2, i) * (o->scale_inv_ptr ? *o->scale_inv_ptr : 1.0f);
        return 0;
    case QP_LOP_F32_BF16: /* the CPU's form: never the GPU's */
    case QP_LOP_COUNT: break;
    }
    return -1;
}

/* cuBLASLt's rules on operand pairs (qp_cublaslt.h): one type class, FP8 with
 * both scale pointers, block formats with block scales and K % 32 == 0. */
static int h_gemm(void *x, const qp_linear_operand *A, const qp_linear_operand *B, float *D, int M, int N, int K,
                  float alpha, float beta)
{
    const int fp8 = A->type == QP_LOP_E4M3 || A->type == QP_LOP_E5M2;
    const int bclass = B->type == QP_LOP_E4M3 || B->type == QP_LOP_E5M2;
    if (fp8 != bclass || (!fp8 && A->type != B->type) || (fp8 && (!A->scale_inv_ptr || !B->scale_inv_ptr)) ||
        (A->type == QP_LOP_NVFP4 && (!A->scale_inv_ptr || !B->scale_inv_ptr)) ||
        ((A->type == QP_LOP_MXFP8 || A->type == QP_LOP_NVFP4) && (K % 32 || !A->block_scales || !B->block_scales))) {
        snprintf(H->err, sizeof H->err, "GEMM of types %d x %d (%dx%dx%d)", (int)A->type, (int)B->type, M, N, K);
        return -1;
    }
    const int kind = A->type == QP_LOP_MXFP8 ? QPL_MXFP8 : A->type == QP_LOP_NVFP4 ? QPL_NVFP4 : fp8 ? QPL_FP8
                   : A->type == QP_LOP_F32 ? QPL_F32 : QPL_EMULATED;
    H->kinds[kind]++;
    if (to_f32(A, H->fa, M, K) || to_f32(B, H->fb, N, K)) {
        snprintf(H->err, sizeof H->err, "GEMM operands of %dx%dx%d unreadable", M, N, K);
        return -1;
    }
    /* BF16 and FP32 operands' decode scales are folded into alpha on the
     * device, as qp_cublt_gemm's alpha kernel does: alpha * (sA * sB) */
    if ((A->type == QP_LOP_BF16 || A->type == QP_LOP_F32) && (A->scale_inv_ptr || B->scale_inv_ptr))
        alpha = alpha * ((A->scale_inv_ptr ? *A->scale_inv_ptr : 1.0f) * (B->scale_inv_ptr ? *B->scale_inv_ptr : 1.0f));
    return qp_gemm_run(H->gemm, H->fa, 0, H->fb, 0, D, M, N, K, alpha, beta != 0.0f, A->type == QP_LOP_BF16);
}
static int h_bias_add(void *x, float *Y, const float *b, int M, int N)
{
    (void)x;
    for (int64_t i = 0; i < (int64_t)M * N; i++) Y[i] += b[i % N];
    return 0;
}
static int h_bias_grad(void *x, float *db, const float *dY, int M, int N)
{
    (void)x;
    for (int n = 0; n < N; n++) qpm_colsum(db, dY, M, N, n); /* the GPU's chunk order */
    return 0;
}
#undef H

/* ---- records ------------------------------------------------------------------- */

#define MAXR 20000
typedef struct {
    int n, nev;
    qp_qerr_row q[MAXR];
    qp_event_row ev[MAXR];
} rec;
static void on_qerr(const qp_qerr_row *r, void *u)
{
    rec *x = u;
    if (x->n < MAXR) x->q[x->n++] = *r;
}
static void on_event(const qp_event_row *r, void *u)
{
    rec *x = u;
    if (x->nev < MAXR) x->ev[x->nev++] = *r;
}

static double max_abs(const float *a, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

static void close_to(const char *what, const char *spec, const float *ref, const float *own, int64_t n)
{
    const double scale = max_abs(ref, n) + 1e-30;
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        const double d = isnan(ref[i]) || isnan(own[i]) ? (isnan(ref[i]) && isnan(own[i]) ? 0 : INFINITY)
                                                         : fabs((double)ref[i] - own[i]) / scale;
        if (d > worst) worst = d, at = i;
    }
    CHECK(worst <= 1e-5, "%s %s: %.3g of the largest magnitude at %lld (cpu %.9g, pass %.9g)", spec, what, worst,
          (long long)at, ref[at], own[at]);
}

static float *randv(int64_t n, float s)
{
    float *v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = s * qp_test_normal(&rng);
    return v;
}

/* The GPU side of one test: host primitives, the GPU's operations over
 * them (qpl_device), installed into a dispatch. */
typedef struct {
    host h;
    qpl_device dv;
    float *tbuf[2], *ybuf[2];
    uint16_t *bbuf[2];
} gpu_side;

/* 1: gpu_setup's primitives lack Transformer Engine's RHT (a device without it) */
static int g_no_rht_te;

/* max_kept: the kept list's length (0: the GPU backend's, which a
 * micro-batch never overfills). */
static void gpu_setup(gpu_side *g, qp_linear *lin, qp_gemm *gemm, int64_t max_elems, int cc, int n_layers,
                      int max_kept)
{
    memset(g, 0, sizeof *g);
    g->h.gemm = gemm, g->h.scale_inv[0] = g->h.scale_inv[1] = 1.0f;
    g->h.fa = malloc(max_elems * sizeof(float)), g->h.fb = malloc(max_elems * sizeof(float));
    for (int s = 0; s < 2; s++) {
        g->tbuf[s] = malloc(max_elems * sizeof(float));
        g->ybuf[s] = malloc(max_elems * sizeof(float));
        g->bbuf[s] = malloc(max_elems * sizeof(uint16_t));
    }
    const qpl_prims pr = {.ctx = &g->h, .error = h_error, .transpose = h_transpose, .transpose_u8 = h_transpose_u8,
                          .copy = h_copy, .rht = h_rht, .rht_te = g_no_rht_te ? NULL : h_rht_te, .qdq = h_qdq, .quantize = h_quantize, .to_bf16 = h_to_bf16,
                          .reduce = h_reduce, .keep = h_keep, .fetch_kept = h_fetch_kept,
                          .scale_inv_ptr = h_scale_inv_ptr, .block_scales_ptr = h_block_scales_ptr, .amax = h_amax,
                          .gemm = h_gemm, .bias_add = h_bias_add, .bias_grad = h_bias_grad};
    const int kept = max_kept ? max_kept : qp_linear_max_kept(n_layers);
    CHECK(kept <= MAXKEPT && qpl_device_init(&g->dv, &pr, g->tbuf, g->ybuf, g->bbuf, max_elems, kept) == 0,
          "kept list of %d", kept);
    qp_linear_gemm_set gemms;
    qp_linear_gemms(lin, &gemms);
    qpl_set_device(&g->dv, &gemms, cc, 0);
    qp_linear_set_ops(lin, &g->dv.ops);
}

static void gpu_free(gpu_side *g)
{
    qpl_device_free(&g->dv);
    free(g->h.tiled[0]), free(g->h.tiled[1]), free(g->h.fa), free(g->h.fb);
    for (int s = 0; s < 2; s++) free(g->tbuf[s]), free(g->ybuf[s]), free(g->bbuf[s]);
}

/* cc: the fake GPU's compute capability (0: none, every GEMM emulated);
 * expect: the path name qpl_set_device must give; max_kept: the GPU's kept
 * list (0: the backend's); gemms: the model's block GEMMs (qp_model_gemm_mask),
 * each run in every layer. */
static void run_gemms(const char *spec, int cc, int M, int IC, int OC, const char *expect, int max_kept, unsigned gemms)
{
    const int native = cc > 0;
    const int L = 3;
    char err[512];
    static qp_recipe recipe;
    CHECK(qp_recipe_parse(spec, &recipe, err, sizeof err) == 0, "%s", err);
    static rec rref, rown;
    memset(&rref, 0, sizeof rref);
    memset(&rown, 0, sizeof rown);
    qp_gemm *gemm = qp_gemm_create(err, sizeof err);
    const int64_t max_elems = (int64_t)(M > OC ? M : OC) * (IC > OC ? IC : OC);
    const qp_linear_cfg cr = {.n_layers = L, .gemms = gemms, .max_elems = max_elems, .seed = 99, .recipe = &recipe,
                              .gemm = gemm, .on_event = on_event, .on_qerr = on_qerr, .user = &rref};
    qp_linear_cfg co = cr;
    co.user = &rown;
    qp_linear *ref = qp_linear_create(&cr, err, sizeof err), *dev = qp_linear_create(&co, err, sizeof err);
    CHECK(gemm && ref && dev, "%s", err);
    if (!gemm || !ref || !dev) return;
    gpu_side gs;
    gpu_setup(&gs, dev, gemm, max_elems, cc, L, max_kept);
    host *h = &gs.h;
    CHECK(!strcmp(gs.dv.path, expect), "%s on cc %d: path %s, expected %s", spec, cc, gs.dv.path, expect);
    float *W = randv((int64_t)OC * IC, 0.05f), *b = randv(OC, 0.1f);
    float *Y0 = malloc(sizeof(float) * M * OC), *Y1 = malloc(sizeof(float) * M * OC);
    float *dX0 = calloc((size_t)M * IC, sizeof(float)), *dX1 = calloc((size_t)M * IC, sizeof(float));
    float *dW0 = calloc((size_t)OC * IC, sizeof(float)), *dW1 = calloc((size_t)OC * IC, sizeof(float));
    float *db0 = calloc(OC, sizeof(float)), *db1 = calloc(OC, sizeof(float));
    char what[96];
    for (int64_t step = 0; step < 3; step++) {
        qp_linear_begin_step(ref, step, step != 1);
        qp_linear_begin_step(dev, step, step != 1);
        for (int micro = 0; micro < 2; micro++) {
            qp_linear_begin_micro(ref, micro);
            qp_linear_begin_micro(dev, micro);
            float *X = randv((int64_t)M * IC, 1.0f + step), *dY = randv((int64_t)M * OC, 0.01f * (1 + micro));
            if (step == 2 && micro == 1) X[5] = 3000.0f; /* an outlier: saturation, a scale change */
            for (int layer = 0; layer < L; layer++)
                for (int g = 0; g < QP_BLOCK_GEMMS; g++) {
                    if (!(gemms >> g & 1u)) continue;
                    snprintf(what, sizeof what, "step %lld micro %d layer %d %s", (long long)step, micro, layer,
                             qp_gemm_name((qp_gemm_id)g));
                    const int r0 = qp_linear_forward(ref, layer, (qp_gemm_id)g, Y0, X, W, b, M, IC, OC);
                    const int r1 = qp_linear_forward(dev, layer, (qp_gemm_id)g, Y1, X, W, b, M, IC, OC);
                    CHECK(r0 == 0 && r1 == 0, "%s %s forward: %s / %s", spec, what, qp_linear_error(ref),
                          qp_linear_error(dev));
                    close_to("Y", what, Y0, Y1, (int64_t)M * OC);
                    const int s0 = qp_linear_backward(ref, layer, (qp_gemm_id)g, dX0, dW0, db0, dY, X, W, M, IC, OC, 1);
                    const int s1 = qp_linear_backward(dev, layer, (qp_gemm_id)g, dX1, dW1, db1, dY, X, W, M, IC, OC, 1);
                    CHECK(s0 == 0 && s1 == 0, "%s %s backward: %s / %s", spec, what, qp_linear_error(ref),
                          qp_linear_error(dev));
                }
            char full[300];
            snprintf(full, sizeof full, "%s%s%s", spec, native ? " " : "", native ? gs.dv.path : "");
            close_to("dX", full, dX0, dX1, (int64_t)M * IC);
            close_to("dW", full, dW0, dW1, (int64_t)OC * IC);
            close_to("db", full, db0, db1, OC);
            free(X), free(dY);
            /* as the GPU backend: the kept statistics applied once per micro-batch */
            CHECK(qp_linear_flush(dev) == 0, "%s flush: %s", spec, qp_linear_error(dev));
        }
    }
    /* a micro-batch's statistics fit the backend's list: one fetch per
     * micro-batch at most; a list of 3 is fetched mid-pass */
    CHECK(max_kept ? h->n_fetches > 6 || rown.n + rown.nev == 0 : h->n_fetches <= 6,
          "%s: %d fetches of kept statistics over 6 micro-batches (list of %d)", spec, h->n_fetches,
          gs.dv.ops.max_kept);
    /* the LM head: FP32, transposed operands through tbuf */
    {
        const int V = 40, C = 24;
        float *Xh = randv((int64_t)M * C, 1.0f), *Wh = randv((int64_t)V * C, 0.1f), *dYh = randv((int64_t)M * V, 0.1f);
        float *Yh0 = malloc(sizeof(float) * M * V), *Yh1 = malloc(sizeof(float) * M * V);
        float *dXh0 = calloc((size_t)M * C, sizeof(float)), *dXh1 = calloc((size_t)M * C, sizeof(float));
        float *dWh0 = calloc((size_t)V * C, sizeof(float)), *dWh1 = calloc((size_t)V * C, sizeof(float));
        CHECK(qp_linear_forward(ref, L, QP_GEMM_HEAD, Yh0, Xh, Wh, NULL, M, C, V) == 0 &&
                  qp_linear_forward(dev, L, QP_GEMM_HEAD, Yh1, Xh, Wh, NULL, M, C, V) == 0 &&
                  qp_linear_backward(ref, L, QP_GEMM_HEAD, dXh0, dWh0, NULL, dYh, Xh, Wh, M, C, V, 1) == 0 &&
                  qp_linear_backward(dev, L, QP_GEMM_HEAD, dXh1, dWh1, NULL, dYh, Xh, Wh, M, C, V, 1) == 0,
              "%s head: %s", spec, qp_linear_error(dev));
        close_to("head Y", spec, Yh0, Yh1, (int64_t)M * V);
        close_to("head dX", spec, dXh0, dXh1, (int64_t)M * C);
        close_to("head dW", spec, dWh0, dWh1, (int64_t)V * C);
        free(Xh), free(Wh), free(dYh), free(Yh0), free(Yh1), free(dXh0), free(dXh1), free(dWh0), free(dWh1);
    }
    /* scaling states, events, qerr rows */
    for (int layer = 0; layer < L; layer++)
        for (int g = 0; g < QP_BLOCK_GEMMS; g++)
            for (int o = 0; o < QP_OPND_COUNT && gemms >> g & 1u; o++) {
                const qp_scaling_state *a = qp_linear_scaling(ref, layer, g, o), *c = qp_linear_scaling(dev, layer, g, o);
                CHECK(qp_same_float(a->scale, c->scale) && qp_same_float(a->last_scale, c->last_scale) &&
                          a->n_updates == c->n_updates && a->hist_count == c->hist_count,
                      "%s: scaling state of layer %d %s %s: scale %g / %g, last %g / %g, updates %lld / %lld", spec,
                      layer, qp_gemm_name(g), qp_operand_name(o), a->scale, c->scale, a->last_scale, c->last_scale,
                      (long long)a->n_updates, (long long)c->n_updates);
            }
    int64_t e0[QP_EV_COUNT], e1[QP_EV_COUNT];
    qp_linear_event_counts(ref, e0);
    qp_linear_event_counts(dev, e1);
    CHECK(!memcmp(e0, e1, sizeof e0) && rref.nev == rown.nev, "%s: events %lld/%lld/%lld/%lld vs %lld/%lld/%lld/%lld",
          spec, (long long)e0[0], (long long)e0[1], (long long)e0[2], (long long)e0[3], (long long)e1[0],
          (long long)e1[1], (long long)e1[2], (long long)e1[3]);
    CHECK(rref.n == rown.n, "%s: %d qerr rows on the CPU, %d on the GPU's operations", spec, rref.n, rown.n);
    for (int i = 0; i < rref.n && i < rown.n; i++) {
        const qp_qerr_row *a = &rref.q[i], *c = &rown.q[i];
        CHECK(a->step == c->step && a->layer == c->layer && !strcmp(a->gemm, c->gemm) &&
                  !strcmp(a->operand, c->operand) && !strcmp(a->pass, c->pass) &&
                  fabs(a->rel_l2 - c->rel_l2) <= 1e-9 * (1 + a->rel_l2) && a->sat_frac == c->sat_frac &&
                  a->zero_frac == c->zero_frac && a->amax == c->amax && a->scale == c->scale,
              "%s qerr row %d (%s %s %s): rel_l2 %.12g / %.12g, sat %g / %g, zero %g / %g, amax %g / %g", spec, i,
              a->gemm, a->operand, a->pass, a->rel_l2, c->rel_l2, a->sat_frac, c->sat_frac, a->zero_frac,
              c->zero_frac, a->amax, c->amax);
    }
    /* the GEMMs ran as the path says: its native kind ran, and only native
     * kinds the GPU has (a block-scaling GPU runs both MXFP8 and NVFP4) */
    const int want = !strcmp(gs.dv.path, "fp8-native") ? QPL_FP8 : !strcmp(gs.dv.path, "mxfp8-native") ? QPL_MXFP8
                   : !strcmp(gs.dv.path, "nvfp4-native") ? QPL_NVFP4 : QPL_EMULATED;
    for (int k = QPL_FP8; k <= QPL_NVFP4; k++) {
        const int allowed = k == QPL_FP8 ? gs.dv.fp8_native : gs.dv.block_native;
        CHECK(k == want ? h->kinds[k] > 0 || (M % 16 || IC % 32 || OC % 32) : allowed || h->kinds[k] == 0,
              "%s on cc %d: %d GEMMs of kind %d", spec, cc, h->kinds[k], k);
    }
    printf("%-34s cc %3d %-14s: %4d qerr rows, %3d events, GEMMs %d emulated / %d fp32 / %d fp8 / %d mxfp8 / %d "
           "nvfp4, outputs match\n", spec, cc, gs.dv.path, rown.n, rown.nev, h->kinds[QPL_EMULATED],
           h->kinds[QPL_F32], h->kinds[QPL_FP8], h->kinds[QPL_MXFP8], h->kinds[QPL_NVFP4]);
    gpu_free(&gs);
    free(W), free(b), free(Y0), free(Y1), free(dX0), free(dX1), free(dW0), free(dW1), free(db0), free(db1);
    qp_linear_destroy(ref), qp_linear_destroy(dev);
    qp_gemm_destroy(gemm);
}

static unsigned GPT_GEMMS, LLAMA_GEMMS;

static void run_kept(const char *spec, int cc, int M, int IC, int OC, const char *expect, int max_kept)
{
    run_gemms(spec, cc, M, IC, OC, expect, max_kept, GPT_GEMMS);
}

static void run(const char *spec, int cc, int M, int IC, int OC, const char *expect)
{
    run_kept(spec, cc, M, IC, OC, expect, 0);
}

/* ---- data parallelism: two "ranks" (threads) -------------------------------- */

/* The all-reduces of one group of ranks: each rank posts, a barrier, each
 * takes the max (sum) of both, a barrier. */
typedef struct {
    pthread_barrier_t bar;
    float fv[2][8];
    double dv[2][8];
    int calls;
} world;
typedef struct {
    world *w;
    int rank;
} rank_user;
static void w_max(float *v, int n, void *u)
{
    rank_user *ru = u;
    world *w = ru->w;
    memcpy(w->fv[ru->rank], v, (size_t)n * sizeof *v);
    pthread_barrier_wait(&w->bar);
    for (int i = 0; i < n; i++) v[i] = w->fv[0][i] > w->fv[1][i] ? w->fv[0][i] : w->fv[1][i];
    if (ru->rank == 0) w->calls++;
    pthread_barrier_wait(&w->bar);
}
static void w_sum(double *v, int n, void *u)
{
    rank_user *ru = u;
    world *w = ru->w;
    memcpy(w->dv[ru->rank], v, (size_t)n * sizeof *v);
    pthread_barrier_wait(&w->bar);
    for (int i = 0; i < n; i++) v[i] = w->dv[0][i] + w->dv[1][i];
    pthread_barrier_wait(&w->bar);
}

#define DP_STEPS 3
typedef struct {
    const char *spec;
    int cc, rank, M, IC, OC;
    const float *X[DP_STEPS * 2], *dY[DP_STEPS * 2], *W, *b; /* both ranks' tokens (2M rows) */
    world *wref, *wpass;
    /* results (checked by the main thread) */
    double worst;
    int failed, state_bad, events_bad, kinds[QPL_KIND_COUNT];
    float scales[3 * 4 * QP_OPND_COUNT];
    char msg[600];
} dp_job;

static double worst_rel(const float *ref, const float *own, int64_t n)
{
    const double scale = max_abs(ref, n) + 1e-30;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        const double d = isnan(ref[i]) || isnan(own[i]) ? (isnan(ref[i]) && isnan(own[i]) ? 0 : INFINITY)
                                                         : fabs((double)ref[i] - own[i]) / scale;
        if (d > worst) worst = d;
    }
    return worst;
}

/* One rank: qp_linear with the data-parallel cfg (the CPU's behaviour) and
 * the pass with the same cfg, on this rank's token slice. */
static void *dp_rank(void *arg)
{
    dp_job *j = arg;
    const int L = 3, M = j->M, IC = j->IC, OC = j->OC;
    char err[512];
    qp_recipe *recipe = malloc(sizeof *recipe);
    if (!recipe || qp_recipe_parse(j->spec, recipe, err, sizeof err)) {
        j->failed = 1;
        snprintf(j->msg, sizeof j->msg, "%s", recipe ? err : "out of memory");
        free(recipe);
        return NULL;
    }
    qp_gemm *gemm = qp_gemm_create(err, sizeof err);
    const int64_t max_elems = (int64_t)(M > OC ? M : OC) * (IC > OC ? IC : OC);
    rank_user uref = {j->wref, j->rank}, upass = {j->wpass, j->rank};
    const qp_linear_cfg cr = {.n_layers = L, .max_elems = max_elems, .seed = 99, .recipe = recipe, .gemm = gemm,
                              .dp_rank = j->rank, .dp_size = 2, .reduce_max = w_max, .reduce_sum = w_sum,
                              .reduce_user = &uref};
    qp_linear_cfg co = cr;
    co.reduce_user = &upass;
    qp_linear *ref = qp_linear_create(&cr, err, sizeof err), *dev = qp_linear_create(&co, err, sizeof err);
    gpu_side gs;
    gpu_setup(&gs, dev, gemm, max_elems, j->cc, L, 0);
    float *Y0 = malloc(sizeof(float) * M * OC), *Y1 = malloc(sizeof(float) * M * OC);
    float *dX0 = calloc((size_t)M * IC, sizeof(float)), *dX1 = calloc((size_t)M * IC, sizeof(float));
    float *dW0 = calloc((size_t)OC * IC, sizeof(float)), *dW1 = calloc((size_t)OC * IC, sizeof(float));
    float *db0 = calloc(OC, sizeof(float)), *db1 = calloc(OC, sizeof(float));
    for (int64_t step = 0; step < DP_STEPS && !j->failed; step++) {
        qp_linear_begin_step(ref, step, 0);
        qp_linear_begin_step(dev, step, 0);
        for (int micro = 0; micro < 2 && !j->failed; micro++) {
            qp_linear_begin_micro(ref, micro);
            qp_linear_begin_micro(dev, micro);
            const float *X = j->X[step * 2 + micro] + (int64_t)j->rank * M * IC;
            const float *dY = j->dY[step * 2 + micro] + (int64_t)j->rank * M * OC;
            for (int layer = 0; layer < L && !j->failed; layer++)
                for (int g = 0; g < 4; g++) {
                    if (qp_linear_forward(ref, layer, (qp_gemm_id)g, Y0, X, j->W, j->b, M, IC, OC) ||
                        qp_linear_forward(dev, layer, (qp_gemm_id)g, Y1, X, j->W, j->b, M, IC, OC) ||
                        qp_linear_backward(ref, layer, (qp_gemm_id)g, dX0, dW0, db0, dY, X, j->W, M, IC, OC, 1) ||
                        qp_linear_backward(dev, layer, (qp_gemm_id)g, dX1, dW1, db1, dY, X, j->W, M, IC, OC, 1)) {
                        /* the other rank may wait in a reduce: this one failing ends the test anyway */
                        j->failed = 1;
                        snprintf(j->msg, sizeof j->msg, "%s / %s", qp_linear_error(ref), qp_linear_error(dev));
                        break;
                    }
                    const double w = worst_rel(Y0, Y1, (int64_t)M * OC);
                    if (w > j->worst) j->worst = w;
                }
            if (!j->failed && qp_linear_flush(dev)) {
                j->failed = 1;
                snprintf(j->msg, sizeof j->msg, "flush: %s", qp_linear_error(dev));
            }
        }
    }
    const double w[3] = {worst_rel(dX0, dX1, (int64_t)M * IC), worst_rel(dW0, dW1, (int64_t)OC * IC),
                         worst_rel(db0, db1, OC)};
    for (int i = 0; i < 3; i++)
        if (w[i] > j->worst) j->worst = w[i];
    for (int layer = 0; layer < L; layer++)
        for (int g = 0; g < 4; g++)
            for (int o = 0; o < QP_OPND_COUNT; o++) {
                const qp_scaling_state *a = qp_linear_scaling(ref, layer, g, o), *c = qp_linear_scaling(dev, layer, g, o);
                j->state_bad += !(qp_same_float(a->scale, c->scale) && qp_same_float(a->last_scale, c->last_scale) &&
                                  a->n_updates == c->n_updates && a->hist_count == c->hist_count);
                j->scales[(layer * 4 + g) * QP_OPND_COUNT + o] = c->scale;
            }
    int64_t e0[QP_EV_COUNT], e1[QP_EV_COUNT];
    qp_linear_event_counts(ref, e0);
    qp_linear_event_counts(dev, e1);
    j->events_bad = memcmp(e0, e1, sizeof e0) != 0;
    memcpy(j->kinds, gs.h.kinds, sizeof gs.h.kinds);
    free(Y0), free(Y1), free(dX0), free(dX1), free(dW0), free(dW1), free(db0), free(db1);
    gpu_free(&gs);
    qp_linear_destroy(ref), qp_linear_destroy(dev);
    qp_gemm_destroy(gemm);
    free(recipe);
    return NULL;
}

/* Two ranks of M tokens each: on every rank the pass gives what qp_linear's
 * data parallelism gives (outputs to 1e-5, scaling states and events
 * exactly), both ranks end with the same scaling states, and the amaxes went
 * through the reduce hooks as often in the pass as on the CPU. Returns how
 * often (the GPU operations'). */
static int run_dp(const char *spec, int cc, int M, int IC, int OC)
{
    world wref, wpass;
    memset(&wref, 0, sizeof wref);
    memset(&wpass, 0, sizeof wpass);
    pthread_barrier_init(&wref.bar, NULL, 2);
    pthread_barrier_init(&wpass.bar, NULL, 2);
    float *X[DP_STEPS * 2], *dY[DP_STEPS * 2];
    for (int i = 0; i < DP_STEPS * 2; i++) {
        X[i] = randv((int64_t)2 * M * IC, 1.0f + i / 2);
        dY[i] = randv((int64_t)2 * M * OC, 0.01f * (1 + i % 2));
    }
    X[5][(int64_t)M * IC + 7] = 3000.0f; /* an outlier on rank 1 only: rank 0's scale must see it */
    float *W = randv((int64_t)OC * IC, 0.05f), *b = randv(OC, 0.1f);
    dp_job jobs[2];
    pthread_t th[2];
    for (int r = 0; r < 2; r++) {
        memset(&jobs[r], 0, sizeof jobs[r]);
        dp_job *j = &jobs[r];
        j->spec = spec, j->cc = cc, j->rank = r, j->M = M, j->IC = IC, j->OC = OC, j->W = W, j->b = b;
        j->wref = &wref, j->wpass = &wpass;
        for (int i = 0; i < DP_STEPS * 2; i++) j->X[i] = X[i], j->dY[i] = dY[i];
        pthread_create(&th[r], NULL, dp_rank, j);
    }
    for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
    for (int r = 0; r < 2; r++) {
        const dp_job *j = &jobs[r];
        CHECK(!j->failed, "%s dp rank %d: %s", spec, r, j->msg);
        CHECK(j->worst <= 1e-5, "%s dp rank %d (cc %d): outputs differ from qp_linear's by %.3g of the largest", spec,
              r, cc, j->worst);
        CHECK(j->state_bad == 0, "%s dp rank %d: %d scaling states differ from qp_linear's", spec, r, j->state_bad);
        CHECK(!j->events_bad, "%s dp rank %d: event counts differ", spec, r);
    }
    CHECK(!memcmp(jobs[0].scales, jobs[1].scales, sizeof jobs[0].scales), "%s dp: the ranks' scales differ", spec);
    CHECK(wref.calls == wpass.calls, "%s dp: %d amax all-reduces on the CPU, %d in the pass", spec, wref.calls,
          wpass.calls);
    printf("%-28s dp 2 ranks, cc %3d: %d amax all-reduces, GEMMs %d emulated / %d fp8 / %d mxfp8 / %d nvfp4, "
           "match qp_linear\n", spec, cc, wpass.calls, jobs[0].kinds[0], jobs[0].kinds[1], jobs[0].kinds[2],
           jobs[0].kinds[3]);
    for (int i = 0; i < DP_STEPS * 2; i++) free(X[i]), free(dY[i]);
    free(W), free(b);
    pthread_barrier_destroy(&wref.bar);
    pthread_barrier_destroy(&wpass.bar);
    return wpass.calls;
}

/* A device without Transformer Engine's RHT (its primitives lack rht_te):
 * the dispatch's operations have none either, and an rht=te recipe stops at
 * its first wgrad with one line naming the backend, the layer and the GEMM;
 * fprop and dgrad (no RHT) run. */
static void test_no_rht_te(void)
{
    const char *spec = "nvfp4,wgrad:rht=te,bf16-last=0";
    const int M = 32, IC = 64, OC = 96;
    char err[512];
    static qp_recipe recipe;
    CHECK(qp_recipe_parse(spec, &recipe, err, sizeof err) == 0, "%s", err);
    qp_gemm *gemm = qp_gemm_create(err, sizeof err);
    const int64_t max_elems = (int64_t)M * OC > (int64_t)OC * IC ? (int64_t)M * OC : (int64_t)OC * IC;
    static rec r;
    memset(&r, 0, sizeof r);
    const qp_linear_cfg cfg = {.n_layers = 1, .gemms = GPT_GEMMS, .max_elems = max_elems, .seed = 99,
                               .recipe = &recipe, .gemm = gemm, .on_event = on_event, .on_qerr = on_qerr, .user = &r};
    qp_linear *lin = qp_linear_create(&cfg, err, sizeof err);
    CHECK(gemm && lin, "%s", err);
    if (!gemm || !lin) return;
    gpu_side gs;
    g_no_rht_te = 1;
    gpu_setup(&gs, lin, gemm, max_elems, 100, 1, 0);
    g_no_rht_te = 0;
    CHECK(gs.dv.ops.rht_te == NULL, "primitives without rht_te: the operations must have none");
    float *X = randv((int64_t)M * IC, 1.0f), *W = randv((int64_t)OC * IC, 0.05f), *dY = randv((int64_t)M * OC, 0.01f);
    float *Y = malloc(sizeof(float) * M * OC), *dX = calloc((size_t)M * IC, sizeof(float));
    float *dW = calloc((size_t)OC * IC, sizeof(float));
    qp_linear_begin_step(lin, 0, 0);
    qp_linear_begin_micro(lin, 0);
    CHECK(qp_linear_forward(lin, 0, QP_GEMM_FC, Y, X, W, NULL, M, IC, OC) == 0, "%s forward: %s", spec,
          qp_linear_error(lin));
    const int rc = qp_linear_backward(lin, 0, QP_GEMM_FC, dX, dW, NULL, dY, X, W, M, IC, OC, 1);
    const char *msg = qp_linear_error(lin);
    CHECK(rc != 0 && strstr(msg, "rht=te: this backend has no Transformer Engine transform") &&
              strstr(msg, "layer 0") && strstr(msg, qp_gemm_name(QP_GEMM_FC)) && !strchr(msg, '\n'),
          "%s backward without rht_te: rc %d, message '%s'", spec, rc, msg);
    free(X), free(W), free(dY), free(Y), free(dX), free(dW);
    gpu_free(&gs);
    qp_linear_destroy(lin);
    qp_gemm_destroy(gemm);
}

/* The decisions alone: path names by recipe, cc and QP_CUDA_EMULATE, and the
 * kind of each GEMM by formats and shape. */
static void test_decisions(void)
{
    /* kind: of block 0's fc fprop GEMM (64 x 128 x 256) */
    static const struct {
        const char *spec;
        int cc, emulate;
        const char *path;
        int kind;
    } cases[] = {
        {"fp32", 100, 0, "fp32", QPL_EMULATED},
        {"bf16", 100, 0, "bf16", QPL_EMULATED},
        {"fp8", 80, 0, "emulated-bf16", QPL_EMULATED},
        {"fp8", 89, 0, "fp8-native", QPL_FP8},
        {"fp8", 90, 1, "emulated-bf16", QPL_EMULATED},
        {"mxfp8", 90, 0, "emulated-bf16", QPL_EMULATED},
        {"mxfp8", 100, 0, "mxfp8-native", QPL_MXFP8},
        {"mxfp8", 100, 1, "emulated-bf16", QPL_EMULATED},
        {"nvfp4", 100, 0, "nvfp4-native", QPL_NVFP4},
        {"nvfp4", 120, 0, "nvfp4-native", QPL_NVFP4},
        {"nvfp4", 100, 1, "emulated-bf16", QPL_EMULATED},
        {"mxfp4", 100, 0, "emulated-bf16", QPL_EMULATED},
        {"fp8-current,wgrad:rht=16", 90, 0, "emulated-bf16", QPL_EMULATED}, /* FP8 with an RHT: not FP8-native */
        {"fp8-current,wgrad:rht=te", 90, 0, "emulated-bf16", QPL_EMULATED}, /* nor with TE's */
        {"te-nvfp4", 100, 0, "nvfp4-native", QPL_NVFP4},
        {"te-nvfp4", 90, 0, "emulated-bf16", QPL_EMULATED},
        {"fp8-current,w=nvfp4", 100, 0, "emulated-bf16", QPL_EMULATED},     /* E4M3 x NVFP4: emulated */
        {"bf16,fprop=nvfp4,fc=mxfp8", 100, 0, "nvfp4-native", QPL_MXFP8},  /* both native, one name */
        {"fp32,fprop.w=fp8-e4m3", 90, 0, "emulated-bf16", QPL_F32},        /* FP32 x E4M3: in FP32 */
        {"bf16,x+dy=fp8-block,w=fp8-block-2d", 90, 0, "emulated-bf16", QPL_F32}, /* FP32 block scales: FP32 */
        {"bf16,fprop.x=fp8-block", 100, 0, "emulated-bf16", QPL_F32},     /* and its BF16 partner too */
        {"bf16,x+dy=fp8-block-pow2,w=fp8-block-2d-pow2", 90, 0, "emulated-bf16", QPL_EMULATED}, /* BF16-exact */
        {"x+w+dy=mxfp8-rceil", 100, 0, "emulated-bf16", QPL_EMULATED},     /* native: mxfp8 by name only */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512];
        static qp_recipe recipe;
        CHECK(qp_recipe_parse(cases[i].spec, &recipe, err, sizeof err) == 0, "%s", err);
        qp_linear_plan plans[2 * QP_BLOCK_GEMMS];
        CHECK(qp_recipe_resolve(&recipe, 2, 0, plans, err, sizeof err) == 0, "%s", err);
        /* the pairs as a reader of the plans sees them */
        qp_linear_gemm_set gemms;
        memset(&gemms, 0, sizeof gemms);
        for (int k = 0; k < 2 * QP_BLOCK_GEMMS; k++)
            for (int p = 0; p < QP_PASS_COUNT; p++) {
                const qp_use_plan *a = &plans[k].use[p][qp_pass_operand((qp_pass)p, 0)],
                                  *b = &plans[k].use[p][qp_pass_operand((qp_pass)p, 1)];
                gemms.pair[a->fmt][b->fmt] = 1;
                gemms.any_rht |= a->rht > 0;
            }
        qpl_device d;
        memset(&d, 0, sizeof d);
        qpl_set_device(&d, &gemms, cases[i].cc, cases[i].emulate);
        CHECK(!strcmp(d.path, cases[i].path), "%s cc %d emulate %d: %s, expected %s", cases[i].spec, cases[i].cc,
              cases[i].emulate, d.path, cases[i].path);
        const qp_use_plan *u = plans[QP_GEMM_FC].use[QP_PASS_FPROP];
        const qp_fmt fx = u[QP_OPND_X].fmt, fw = u[QP_OPND_W].fmt;
        const int k = cases[i].kind;
        CHECK(qpl_gemm_kind(&d, fx, fw, 64, 128, 256) == k, "%s cc %d: kind %d of a 64x128x256 GEMM, expected %d",
              cases[i].spec, cases[i].cc, qpl_gemm_kind(&d, fx, fw, 64, 128, 256), k);
        CHECK(qpl_gemm_kind(&d, fx, fw, 64, 120, 256) == (k == QPL_F32 ? QPL_F32 : QPL_EMULATED),
              "%s: N = 120 is not native", cases[i].spec);
        CHECK(qpl_gemm_kind(&d, fx, fw, 64, 128, 48) == (k == QPL_FP8 || k == QPL_F32 ? k : QPL_EMULATED),
              "%s: K = 48 is native for FP8 only", cases[i].spec);
        CHECK(qpl_gemm_kind(&d, QP_FMT_FP32, QP_FMT_FP32, 64, 128, 256) == QPL_EMULATED,
              "%s: FP32 x FP32 (the head) is plain", cases[i].spec);
        CHECK(qpl_gemm_kind(&d, QP_FMT_FP32, QP_FMT_NVFP4, 64, 128, 256) == QPL_F32 &&
                  qpl_gemm_kind(&d, QP_FMT_FP8_E4M3, QP_FMT_FP32, 64, 128, 256) == QPL_F32,
              "%s: a quantized operand meeting an FP32 one runs in FP32", cases[i].spec);
    }
}

int main(void)
{
    GPT_GEMMS = qp_model_gemm_mask(&(qp_gpt_config){.arch = QP_ARCH_GPT});
    LLAMA_GEMMS = qp_model_gemm_mask(&(qp_gpt_config){.arch = QP_ARCH_LLAMA});
    const char *recipes[] = {"fp32", "bf16", "fp8", "fp8-current", "mxfp8", "mxfp4", "nvfp4", "nvfp4-naive",
                             "nvfp4,nvfp4-2d", "nvfp4,bf16-last=1,bf16-first=1"};
    const char *paths[] = {"fp32", "bf16", "emulated-bf16", "emulated-bf16", "emulated-bf16", "emulated-bf16",
                           "emulated-bf16", "emulated-bf16", "emulated-bf16", "emulated-bf16"};
    for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++) run(recipes[i], 0, 32, 48, 64, paths[i]);
    run("fp8", 90, 32, 48, 64, "fp8-native");
    run("fp8-current", 90, 32, 48, 64, "fp8-native");
    run("fp8", 90, 24, 40, 56, "fp8-native"); /* not multiples of 16: emulated GEMMs under a native plan */
    run("fp8-current", 0, 20, 36, 52, "emulated-bf16");
    /* Blackwell (cc 10.0): MXFP8 and NVFP4 block-scaled natively, MXFP4 emulated */
    run("mxfp8", 100, 32, 64, 96, "mxfp8-native");
    run("nvfp4", 100, 32, 64, 96, "nvfp4-native");
    run("nvfp4-naive", 100, 32, 64, 96, "nvfp4-native");
    run("nvfp4,nvfp4-2d", 100, 32, 64, 96, "nvfp4-native");
    run("nvfp4,bf16-last=1,bf16-first=1", 100, 32, 64, 96, "nvfp4-native");
    run("nvfp4", 100, 32, 48, 64, "nvfp4-native"); /* K = 48: fprop emulated */
    run("mxfp4", 100, 32, 64, 96, "emulated-bf16");
    run("mxfp8", 90, 32, 64, 96, "emulated-bf16"); /* Hopper: no block scaling */
    run("fp8", 100, 32, 64, 96, "fp8-native");
    /* a kept list of 3: flushed early, mid-pass, with the same results */
    run_kept("fp8", 0, 32, 48, 64, "emulated-bf16", 3);
    run_kept("fp8", 90, 32, 48, 64, "fp8-native", 3);
    run_kept("nvfp4", 100, 32, 64, 96, "nvfp4-native", 3);
    run_kept("bf16,wgrad=fp8-e4m3:delayed", 90, 32, 64, 96, "fp8-native", 3);
    /* the new formats (emulated on every GPU): FP8 blocks with FP32 scales
     * run an FP32 GEMM of the scaled values against the CPU's K-chunked GEMM
     * (contractions above 128), the others the BF16 emulation; RHT sizes
     * from the recipe */
    run("bf16,x+dy=fp8-block,w=fp8-block-2d", 0, 160, 192, 144, "emulated-bf16");
    run("x=fp8-block,w=mxfp8,dy=fp8-e5m2", 0, 160, 192, 144, "emulated-bf16");
    run("x+dy=fp8-block-pow2,w=fp8-block-2d-pow2", 0, 160, 192, 144, "emulated-bf16");
    run("x=mxfp6-e2m3,w=nvfp4-4o6,dy=mxfp4-rceil", 0, 64, 192, 144, "emulated-bf16");
    run("nvfp4,wgrad:rht=128,bf16-last=0", 0, 128, 192, 144, "emulated-bf16");
    run("nvfp4,wgrad:rht=64,bf16-last=0", 100, 64, 192, 128, "nvfp4-native");
    run("bf16,fc.x+dy=fp8-block,fc.w=fp8-block-2d,qkv=mxfp8-rceil", 90, 128, 256, 128, "emulated-bf16");
    /* Transformer Engine's fixed-sign RHT on wgrad (the GPU's rht_te, here
     * qp_rht16_te): its preset, emulated and block-scaled, and a per-GEMM rule */
    run("te-nvfp4", 0, 32, 64, 96, "emulated-bf16");
    run("te-nvfp4", 100, 32, 64, 96, "nvfp4-native");
    run("fp8-current,wgrad:rht=te", 90, 32, 48, 64, "emulated-bf16");
    run_gemms("nvfp4,down.wgrad=bf16:rht=te,bf16-last=0", 100, 32, 64, 96, "nvfp4-native", 0, LLAMA_GEMMS);
    test_no_rht_te();
    /* per-use recipes: formats differ between the operands of one GEMM, between
     * passes and between GEMM types */
    run("fp8-current,w=nvfp4", 0, 32, 64, 96, "emulated-bf16");
    run("fp8-current,w=nvfp4", 100, 32, 64, 96, "emulated-bf16");  /* every pair mixed: emulated */
    run("fp32,fprop.w=fp8-e4m3", 0, 32, 48, 64, "emulated-bf16"); /* FP32 x FP8: FP32 kind */
    run("fp32,fprop.w=fp8-e4m3", 90, 32, 64, 96, "emulated-bf16"); /* no FP8 x FP8 GEMM to run natively */
    run("bf16,wgrad=fp8-e4m3:delayed", 90, 32, 64, 96, "fp8-native"); /* x and dy owned by wgrad */
    run("bf16,fprop=nvfp4,L1.fcproj=mxfp8", 100, 32, 64, 96, "nvfp4-native");
    run("nvfp4,fcproj.wgrad=bf16:rht=16,bf16-last=0", 100, 32, 64, 96, "nvfp4-native");
    /* a Llama's blocks (qkv, attproj, gate, up, down): its recipes name its GEMMs, every one runs, events and
     * qerr rows name them, and the GEMM path counts only those (the GPT's fc, fcproj never run) */
    run_gemms("fp8", 90, 32, 48, 64, "fp8-native", 0, LLAMA_GEMMS);
    run_gemms("bf16,gate+up=fp8-e4m3:delayed,down=nvfp4", 0, 32, 64, 96, "emulated-bf16", 3, LLAMA_GEMMS);
    run_gemms("nvfp4,down.wgrad=bf16:rht=16,bf16-last=0", 100, 32, 64, 96, "nvfp4-native", 0, LLAMA_GEMMS);
    run_gemms("bf16,down=fp8-e4m3:current", 90, 32, 48, 64, "fp8-native", 0, LLAMA_GEMMS);
    test_decisions();
    const char *dp[] = {"bf16", "fp8", "fp8-current", "mxfp8", "mxfp4", "nvfp4", "nvfp4,nvfp4-2d",
                        "bf16,wgrad=fp8-e4m3:delayed", "fp8-current,w=nvfp4"};
    for (size_t i = 0; i < sizeof dp / sizeof dp[0]; i++) run_dp(dp[i], 0, 32, 64, 96);
    run_dp("fp8", 90, 32, 64, 96);
    /* fp8-current: x in fprop, dy in dgrad; wgrad's x^T and dy^T take the
     * global amax of the same tensors' earlier uses (qp_linear_reusable), not
     * a third and a fourth all-reduce */
    const int per_gemm = run_dp("fp8-current", 90, 32, 64, 96) / (DP_STEPS * 2 * 3 * 4);
    CHECK(per_gemm == 2, "fp8-current dp: %d amax all-reduces per GEMM, not 2", per_gemm);
    run_dp("mxfp8", 100, 32, 64, 96);
    run_dp("nvfp4", 100, 32, 64, 96);
    run_dp("bf16,x+dy=fp8-block,w=fp8-block-2d", 0, 32, 64, 96);
    run_dp("nvfp4,wgrad:rht=32,bf16-last=0", 0, 32, 64, 96);
    run_dp("te-nvfp4", 100, 32, 64, 96);
    return qp_test_finish("test_cuda_linear_pass");
}
