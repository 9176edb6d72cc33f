/* qp_quant.c — the format table, packed-storage shapes, the block-scale rule
 * and the quantization driver shared by every path (see qp_quant.h).
 *
 * The driver walks a tensor in chunks of 16 rows (one NVFP4-2D tile band),
 * in parallel where OpenMP is on. Each chunk's counts and block statistics are
 * combined in chunk order, so results do not depend on the thread count. */
#include "qp_quant.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "qp_quant_internal.h"
#include "qp_scaling.h"

#define BF16_MAX 3.38953139e38f

const qp_format_traits qp_formats[QP_FMT_COUNT] = {
    {"fp32", QP_FMT_FP32, QP_ELEM_F32, 32, FLT_MAX, 127, 1, 1, QP_SCALE_NONE, false,
     "IEEE float32, unchanged (the reference)"},
    {"bf16", QP_FMT_BF16, QP_ELEM_BF16, 16, BF16_MAX, 127, 1, 1, QP_SCALE_NONE, false,
     "bfloat16, round to nearest even"},
    {"fp8-e4m3", QP_FMT_FP8_E4M3, QP_ELEM_E4M3, 8, QP_E4M3_MAX, QP_E4M3_EMAX, 1, 1, QP_SCALE_TENSOR, true,
     "FP8 E4M3, one FP32 scale per tensor"},
    {"fp8-e5m2", QP_FMT_FP8_E5M2, QP_ELEM_E5M2, 8, QP_E5M2_MAX, QP_E5M2_EMAX, 1, 1, QP_SCALE_TENSOR, true,
     "FP8 E5M2, one FP32 scale per tensor"},
    {"mxfp8", QP_FMT_MXFP8, QP_ELEM_E4M3, 8, QP_E4M3_MAX, QP_E4M3_EMAX, 1, QK_MX, QP_SCALE_E8M0, false,
     "OCP MXFP8: E4M3 elements, E8M0 scale per 32"},
    {"mxfp8-e5m2", QP_FMT_MXFP8_E5M2, QP_ELEM_E5M2, 8, QP_E5M2_MAX, QP_E5M2_EMAX, 1, QK_MX, QP_SCALE_E8M0, false,
     "OCP MXFP8: E5M2 elements, E8M0 scale per 32"},
    {"mxfp4", QP_FMT_MXFP4, QP_ELEM_E2M1, 4, QP_E2M1_MAX, QP_E2M1_EMAX, 1, QK_MX, QP_SCALE_E8M0, false,
     "OCP MXFP4: E2M1 elements, E8M0 scale per 32"},
    {"nvfp4", QP_FMT_NVFP4, QP_ELEM_E2M1, 4, QP_E2M1_MAX, QP_E2M1_EMAX, 1, QK_NVFP4, QP_SCALE_UE4M3, true,
     "NVFP4: E2M1 elements, E4M3 scale per 1x16, FP32 tensor scale"},
    {"nvfp4-2d", QP_FMT_NVFP4_2D, QP_ELEM_E2M1, 4, QP_E2M1_MAX, QP_E2M1_EMAX, QK_NVFP4, QK_NVFP4, QP_SCALE_UE4M3,
     true, "NVFP4 with one E4M3 scale per 16x16 tile (weights)"},
};

/* The table is indexed by qp_fmt: keep the rows in enum order. */
_Static_assert(sizeof(qp_formats) / sizeof(qp_formats[0]) == QP_FMT_COUNT, "one row per format");

const qp_format_traits *qp_format_by_name(const char *name)
{
    for (int i = 0; i < QP_FMT_COUNT; i++)
        if (strcmp(qp_formats[i].name, name) == 0) return &qp_formats[i];
    return NULL;
}

const char *qp_format_names(void)
{
    static char names[256];
    if (!names[0]) {
        char buf[256] = "";
        for (int i = 0; i < QP_FMT_COUNT; i++) {
            if (i) strcat(buf, ", ");
            strcat(buf, qp_formats[i].name);
        }
        memcpy(names, buf, sizeof names);
    }
    return names;
}

float qp_tensor_scale_range(qp_fmt fmt)
{
    const qp_format_traits *t = &qp_formats[fmt];
    if (!t->tensor_scale) return 0.0f;
    return t->block_scale == QP_SCALE_UE4M3 ? QP_E2M1_MAX * QP_E4M3_MAX : t->elem_max;
}

static int64_t blocks_per_row(const qp_format_traits *t, int64_t cols)
{
    return (cols + t->block_cols - 1) / t->block_cols;
}

int64_t qp_row_bytes(qp_fmt fmt, int64_t cols)
{
    const qp_format_traits *t = &qp_formats[fmt];
    const int64_t padded = blocks_per_row(t, cols) * t->block_cols;
    return (padded * t->elem_bits + 7) / 8;
}

void qp_scale_shape(qp_fmt fmt, int64_t rows, int64_t cols, int64_t *scale_rows, int64_t *scale_cols)
{
    const qp_format_traits *t = &qp_formats[fmt];
    if (t->block_scale == QP_SCALE_E8M0 || t->block_scale == QP_SCALE_UE4M3) {
        *scale_rows = (rows + t->block_rows - 1) / t->block_rows;
        *scale_cols = blocks_per_row(t, cols);
    } else {
        *scale_rows = *scale_cols = 0;
    }
}

int qp_qtensor_alloc(qp_qtensor *q, qp_fmt fmt, int64_t rows, int64_t cols)
{
    memset(q, 0, sizeof *q);
    if ((unsigned)fmt >= QP_FMT_COUNT || rows < 0 || cols < 0) return -1;
    if (cols > 0 && rows > INT64_MAX / 8 / cols) return -1;
    q->fmt = fmt;
    q->rows = rows;
    q->cols = cols;
    q->row_bytes = qp_row_bytes(fmt, cols);
    q->scale_inv = 1.0f;
    qp_scale_shape(fmt, rows, cols, &q->scale_rows, &q->scale_cols);
    q->codes = calloc((size_t)(rows * q->row_bytes) + 1, 1);
    if (q->scale_rows) q->scales = calloc((size_t)(q->scale_rows * q->scale_cols) + 1, 1);
    if (!q->codes || (q->scale_rows && !q->scales)) {
        qp_qtensor_free(q);
        return -1;
    }
    return 0;
}

void qp_qtensor_free(qp_qtensor *q)
{
    free(q->codes);
    free(q->scales);
    q->codes = q->scales = NULL;
}

/* 2^e as a float for -149 <= e <= 127, without libm. */
static inline float pow2f(int e)
{
    return e >= -126 ? qp_bits_f32((uint32_t)(e + 127) << 23) : qp_bits_f32(1u << (e + 149));
}

/* The block-scale rule for one block: OCP MX or NVIDIA's NVFP4. */
static void block_scale_rule(const qp_plan *p, float amax_b, int nonfinite, float *enc, float *dec, uint8_t *code,
                             uint8_t *flag)
{
    const qp_format_traits *t = p->t;
    *enc = *dec = 0.0f;
    *flag = 0;
    if (t->block_scale == QP_SCALE_E8M0) {
        if (nonfinite) {
            *code = QP_E8M0_NAN;
            *flag = QP_BLOCK_NAN;
            *dec = NAN;
            return;
        }
        const int e = amax_b > 0.0f ? qp_floor_log2(amax_b) - t->elem_emax : -127;
        *code = qp_e8m0_from_exp(e);
        *enc = pow2f(127 - (int)*code);
        *dec = pow2f((int)*code - 127);
    } else { /* QP_SCALE_UE4M3 */
        const float d = amax_b * (p->scale * (1.0f / 6.0f));
        *code = qp_f32_to_ue4m3(d);
        const float d_b = qp_ue4m3_to_f32(*code);
        if (d_b == 0.0f) {
            *flag = QP_BLOCK_ZERO;
            return;
        }
        *enc = fminf(1.0f / (d_b * p->scale_inv), FLT_MAX);
        *dec = d_b;
    }
}

int64_t qp_ue4m3_log2_fx[128];

void qp_tables_init(void)
{
    static int done;
    if (done) return;
    for (int c = 1; c < 127; c++) qp_ue4m3_log2_fx[c] = llround(log2((double)qp_ue4m3_to_f32((uint8_t)c)) * 4294967296.0);
    done = 1;
}

void qp_block_scales_ref(const qp_plan *p, const float *amax, const uint8_t *nonfinite, int64_t nb,
                         qp_blockscales *bs, qp_block_stats *st)
{
    const qp_format_traits *t = p->t;
    const int mx = t->block_scale == QP_SCALE_E8M0;
    for (int64_t b = 0; b < nb; b++) {
        const float a = amax[b];
        block_scale_rule(p, a, mx && nonfinite[b], &bs->enc[b], &bs->dec[b], &bs->code[b], &bs->flag[b]);
        st->n_blocks++;
        if (a > st->amax) st->amax = a;
        if ((bs->flag[b] & QP_BLOCK_NAN) || !(a > 0.0f)) continue;
        if (mx) {
            const int e = qp_floor_log2(a) - t->elem_emax;
            if (e < -127) st->n_zero++;
            if (e > 127) st->n_sat++;
        } else {
            if (bs->flag[b] & QP_BLOCK_ZERO) st->n_zero++;
            if (a * (p->scale * (1.0f / 6.0f)) > QP_E4M3_MAX) st->n_sat++;
        }
        const float sc = bs->dec[b];
        if (sc > 0.0f) {
            if (st->n_live == 0 || sc < st->min) st->min = sc;
            if (st->n_live == 0 || sc > st->max) st->max = sc;
            st->log2_fx += mx ? (int64_t)((int)bs->code[b] - 127) * 4294967296LL : qp_ue4m3_log2_fx[bs->code[b]];
            st->n_live++;
        }
    }
}

typedef struct {
    qp_counts cnt;
    qp_block_stats bst;
} chunk_result;

#define CHUNK_ROWS 16

static void quantize_chunk(const qp_kernels *k, const qp_plan *p, const float *x, int64_t r0, int64_t r1,
                           int64_t cols, uint8_t *codes, int64_t row_bytes, uint8_t *scales, int64_t scale_cols,
                           float *y, float *amax_buf, uint8_t *nf_buf, qp_blockscales *bs, chunk_result *res)
{
    const qp_format_traits *t = p->t;
    const int bc = t->block_cols;
    for (int64_t r = r0; r < r1; r++) {
        if (codes) memset(codes + r * row_bytes, 0, (size_t)row_bytes);
    }
    if (bc <= 1) {
        for (int64_t r = r0; r < r1; r++)
            k->encode_row(p, x + r * cols, cols, NULL, 1, codes ? codes + r * row_bytes : NULL,
                          y ? y + r * cols : NULL, p->sr_offset + (uint64_t)r * p->sr_stride, &res->cnt);
        return;
    }
    const int64_t nb = (cols + bc - 1) / bc;
    if (t->block_rows > 1) {
        /* 2D tiles: this chunk is one band of block_rows rows. */
        float *row_amax = amax_buf + nb;
        uint8_t *row_nf = nf_buf + nb;
        for (int64_t b = 0; b < nb; b++) amax_buf[b] = 0.0f, nf_buf[b] = 0;
        for (int64_t r = r0; r < r1; r++) {
            k->block_amax(x + r * cols, cols, bc, row_amax, row_nf);
            for (int64_t b = 0; b < nb; b++) {
                if (row_amax[b] > amax_buf[b]) amax_buf[b] = row_amax[b];
                nf_buf[b] |= row_nf[b];
            }
        }
        k->block_scales(p, amax_buf, nf_buf, nb, bs, &res->bst);
        if (scales) memcpy(scales + (r0 / t->block_rows) * scale_cols, bs->code, (size_t)nb);
        for (int64_t r = r0; r < r1; r++)
            k->encode_row(p, x + r * cols, cols, bs, bc, codes ? codes + r * row_bytes : NULL,
                          y ? y + r * cols : NULL, p->sr_offset + (uint64_t)r * p->sr_stride, &res->cnt);
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        k->block_amax(x + r * cols, cols, bc, amax_buf, nf_buf);
        /* NVFP4 block scales ignore non-finite values; MX marks the block NaN. */
        k->block_scales(p, amax_buf, nf_buf, nb, bs, &res->bst);
        if (scales) memcpy(scales + r * scale_cols, bs->code, (size_t)nb);
        k->encode_row(p, x + r * cols, cols, bs, bc, codes ? codes + r * row_bytes : NULL,
                      y ? y + r * cols : NULL, p->sr_offset + (uint64_t)r * p->sr_stride, &res->cnt);
    }
}

/* Per-thread scratch that only grows: after the first call of a shape a
 * quantization allocates nothing (the trainer's step loop relies on it). It
 * is freed when its thread exits. */
typedef struct {
    void *buf[2];
    size_t cap[2];
} thread_scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    thread_scratch *t = p;
    free(t->buf[0]);
    free(t->buf[1]);
    free(t);
}

static void scratch_key_init(void) { pthread_key_create(&scratch_key, scratch_free); }

static void *scratch(int slot, size_t bytes)
{
    pthread_once(&scratch_once, scratch_key_init);
    thread_scratch *t = pthread_getspecific(scratch_key);
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t || pthread_setspecific(scratch_key, t)) {
            free(t);
            return NULL;
        }
    }
    if (t->cap[slot] < bytes) {
        void *nb = realloc(t->buf[slot], bytes);
        if (!nb) return NULL;
        t->buf[slot] = nb;
        t->cap[slot] = bytes;
    }
    return t->buf[slot];
}

static void quantize_driver(const qp_kernels *k, qp_fmt fmt, const float *x, int64_t rows, int64_t cols,
                            uint8_t *codes, int64_t row_bytes, uint8_t *scales, int64_t scale_cols, float *y,
                            const qp_qopts *o, qp_qstats *st, float *scale_inv_out)
{
    static const qp_qopts defaults;
    if (!o) o = &defaults;
    const qp_format_traits *t = &qp_formats[fmt];
    qp_plan p = {t, 1.0f, 1.0f, 1.0f, o->stochastic, o->seed, o->stream, (uint64_t)o->sr_offset,
                 (uint64_t)(o->sr_row_stride > 0 ? o->sr_row_stride : cols)};
    const int64_t n = rows * cols;
    float amax = 0.0f;
    const int blocky = t->block_cols > 1;
    if (!blocky || t->tensor_scale) amax = k->amax(x, n);
    if (t->tensor_scale) {
        p.scale = o->scale > 0.0f ? o->scale : qp_scale_from_amax(qp_tensor_scale_range(fmt), amax, 0);
        p.scale_inv = 1.0f / p.scale;
    }
    if (scale_inv_out) *scale_inv_out = p.scale_inv;
    p.out_mul = o->unscaled ? 1.0f : p.scale_inv;

    const int64_t nchunks = (rows + CHUNK_ROWS - 1) / CHUNK_ROWS;
    chunk_result *res = scratch(0, ((size_t)nchunks + 1) * sizeof *res);
    if (res) memset(res, 0, ((size_t)nchunks + 1) * sizeof *res);
    const int64_t nb = blocky ? (cols + t->block_cols - 1) / t->block_cols : 0;
    int failed = 0;
#if QP_HAVE_OPENMP
#pragma omp parallel if (n >= (1 << 18) && nchunks > 1) reduction(| : failed)
#endif
    {
        /* one buffer for block amaxes, flags and the four arrays of qp_blockscales */
        const size_t amax_bytes = (size_t)(2 * nb) * sizeof(float), nf_bytes = (size_t)(2 * nb);
        char *mem = blocky ? scratch(1, amax_bytes + nf_bytes + (size_t)nb * (2 * sizeof(float) + 2) + 16) : NULL;
        float *amax_buf = mem ? (float *)mem : NULL;
        uint8_t *nf_buf = mem ? (uint8_t *)(mem + amax_bytes) : NULL;
        char *bs_mem = mem ? (char *)(((uintptr_t)(mem + amax_bytes + nf_bytes) + 15) & ~(uintptr_t)15) : NULL;
        qp_blockscales bsa = {0}, *bs = &bsa;
        if (bs_mem) {
            bsa.enc = (float *)bs_mem;
            bsa.dec = bsa.enc + nb;
            bsa.code = (uint8_t *)(bsa.dec + nb);
            bsa.flag = bsa.code + nb;
        }
        if (!res || (blocky && (!amax_buf || !nf_buf || !bs_mem))) {
            failed = 1;
        } else {
#if QP_HAVE_OPENMP
#pragma omp for schedule(static)
#endif
            for (int64_t c = 0; c < nchunks; c++) {
                const int64_t r0 = c * CHUNK_ROWS, r1 = r0 + CHUNK_ROWS < rows ? r0 + CHUNK_ROWS : rows;
                quantize_chunk(k, &p, x, r0, r1, cols, codes, row_bytes, scales, scale_cols, y, amax_buf, nf_buf,
                               bs, &res[c]);
            }
        }
    }
    if (failed || !res) abort(); /* out of memory inside a quantizer: nothing sensible to return */

    qp_qstats s;
    memset(&s, 0, sizeof s);
    s.n = n;
    qp_block_stats b = {0};
    for (int64_t c = 0; c < nchunks; c++) {
        s.n_nonfinite += res[c].cnt.n_nonfinite;
        s.n_nonzero += res[c].cnt.n_nonzero;
        s.n_sat += res[c].cnt.n_sat;
        s.n_flushed += res[c].cnt.n_flushed;
        if (res[c].bst.amax > amax && !t->tensor_scale) amax = res[c].bst.amax;
        const qp_block_stats *cb = &res[c].bst;
        if (cb->n_live) {
            if (!b.n_live || cb->min < b.min) b.min = cb->min;
            if (!b.n_live || cb->max > b.max) b.max = cb->max;
        }
        b.n_blocks += cb->n_blocks;
        b.n_zero += cb->n_zero;
        b.n_sat += cb->n_sat;
        b.n_live += cb->n_live;
        b.log2_fx += cb->log2_fx;
    }
    s.amax = amax;
    s.scale = p.scale;
    s.scale_inv = p.scale_inv;
    s.n_blocks = b.n_blocks;
    s.n_blocks_zero_scale = b.n_zero;
    s.n_blocks_sat_scale = b.n_sat;
    s.block_scale_min = b.min;
    s.block_scale_max = b.max;
    s.block_scale_log2_mean = b.n_live ? (double)b.log2_fx / 4294967296.0 / (double)b.n_live : 0.0;
    if (st) *st = s;
}

/* ---- path selection ---------------------------------------------------- */

static const qp_kernels *active_kernels(void)
{
    static const qp_kernels *chosen;
    if (!chosen) {
        qp_tables_init();
        const char *cap = getenv("QP_SIMD");
        const qp_kernels *k = &qp_kernels_ref;
        if (!cap || strcmp(cap, "scalar") != 0) {
            const qp_kernels *v = qp_kernels_avx512();
            if (v) k = v;
        }
        chosen = k;
    }
    return chosen;
}

const char *qp_simd_name(void) { return active_kernels()->name; }

float qp_amax(const float *x, int64_t n) { return active_kernels()->amax(x, n); }

void qp_quantize(const float *x, qp_qtensor *q, const qp_qopts *o, qp_qstats *st)
{
    quantize_driver(active_kernels(), q->fmt, x, q->rows, q->cols, q->codes, q->row_bytes, q->scales,
                    q->scale_cols, NULL, o, st, &q->scale_inv);
}

void qp_quantize_ref(const float *x, qp_qtensor *q, const qp_qopts *o, qp_qstats *st)
{
    (void)active_kernels(); /* tables */
    quantize_driver(&qp_kernels_ref, q->fmt, x, q->rows, q->cols, q->codes, q->row_bytes, q->scales,
                    q->scale_cols, NULL, o, st, &q->scale_inv);
}

void qp_qdq(qp_fmt fmt, const float *x, float *y, int64_t rows, int64_t cols, const qp_qopts *o, qp_qstats *st)
{
    quantize_driver(active_kernels(), fmt, x, rows, cols, NULL, 0, NULL, 0, y, o, st, NULL);
}

void qp_qdq_ref(qp_fmt fmt, const float *x, float *y, int64_t rows, int64_t cols, const qp_qopts *o,
                qp_qstats *st)
{
    (void)active_kernels(); /* tables */
    quantize_driver(&qp_kernels_ref, fmt, x, rows, cols, NULL, 0, NULL, 0, y, o, st, NULL);
}

/* ---- decoding packed storage -------------------------------------------- */

static uint32_t load_code(const qp_format_traits *t, const uint8_t *row, int64_t c)
{
    switch (t->elem_bits) {
    case 4: return (row[c >> 1] >> (4 * (c & 1))) & 0xF;
    case 8: return row[c];
    case 16: return (uint32_t)row[2 * c] | (uint32_t)row[2 * c + 1] << 8;
    default: {
        uint32_t v;
        memcpy(&v, row + 4 * c, 4);
        return v;
    }
    }
}

void qp_dequantize(const qp_qtensor *q, float *y)
{
    const qp_format_traits *t = &qp_formats[q->fmt];
    for (int64_t r = 0; r < q->rows; r++) {
        const uint8_t *row = q->codes + r * q->row_bytes;
        for (int64_t c = 0; c < q->cols; c++) {
            float dec = 1.0f;
            if (q->scales) {
                const uint8_t code = q->scales[(r / t->block_rows) * q->scale_cols + c / t->block_cols];
                dec = t->block_scale == QP_SCALE_E8M0 ? qp_e8m0_to_f32(code) : qp_ue4m3_to_f32(code);
            }
            y[r * q->cols + c] = qp_decode_elem(t->elem, load_code(t, row, c)) * dec * q->scale_inv;
        }
    }
}
