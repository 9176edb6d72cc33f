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

#if QP_HAVE_OPENMP
#include <omp.h>
#endif

/* The rows are qp_core.h's QP_FORMAT_TABLE, indexed by qp_fmt. */
#define QP_FORMAT_ROW_ELEM(id, ...) [id] = {.fmt = id, __VA_ARGS__},
const qp_format_traits qp_formats[QP_FMT_COUNT] = {QP_FORMAT_TABLE(QP_FORMAT_ROW_ELEM)};
_Static_assert(sizeof(qp_formats) / sizeof(qp_formats[0]) == QP_FMT_COUNT, "one row per format");

const qp_format_traits *qp_format_by_name(const char *name)
{
    for (int i = 0; i < QP_FMT_COUNT; i++)
        if (strcmp(qp_formats[i].name, name) == 0) return &qp_formats[i];
    return NULL;
}

const char *qp_format_names(void)
{
    static char names[512];
    if (!names[0]) {
        char buf[512] = "";
        for (int i = 0; i < QP_FMT_COUNT; i++) {
            if (i) strcat(buf, ", ");
            strcat(buf, qp_formats[i].name);
        }
        memcpy(names, buf, sizeof names);
    }
    return names;
}

float qp_tensor_scale_range(qp_fmt fmt) { return qp_fmt_valid(fmt) ? qp_formats[fmt].tensor_range : 0.0f; }

static int64_t blocks_per_row(const qp_format_traits *t, int64_t cols)
{
    return (cols + t->block_cols - 1) / t->block_cols;
}

int64_t qp_row_bytes(qp_fmt fmt, int64_t cols)
{
    if (!qp_fmt_valid(fmt)) return -1;
    const qp_format_traits *t = &qp_formats[fmt];
    const int64_t padded = blocks_per_row(t, cols) * t->block_cols;
    return (padded * t->elem_bits + 7) / 8;
}

void qp_scale_shape(qp_fmt fmt, int64_t rows, int64_t cols, int64_t *scale_rows, int64_t *scale_cols)
{
    *scale_rows = *scale_cols = 0;
    if (!qp_fmt_valid(fmt) || qp_formats[fmt].scale_bytes == 0) return;
    const qp_format_traits *t = &qp_formats[fmt];
    *scale_rows = (rows + t->block_rows - 1) / t->block_rows;
    *scale_cols = blocks_per_row(t, cols);
}

/* Zeroed bytes on a 64-byte boundary (whole cache lines: the vector path
 * streams aligned lines of large outputs). NULL when out of memory. */
static void *zalloc64(size_t bytes)
{
    void *p = NULL;
    bytes = (bytes + 63) / 64 * 64;
    if (posix_memalign(&p, 64, bytes)) return NULL;
    memset(p, 0, bytes);
    return p;
}

int qp_qtensor_alloc(qp_qtensor *q, qp_fmt fmt, int64_t rows, int64_t cols)
{
    memset(q, 0, sizeof *q);
    if (!qp_fmt_valid(fmt) || rows < 0 || cols < 0) return -1;
    if (cols > 0 && rows > INT64_MAX / 8 / cols) return -1;
    q->fmt = fmt;
    q->rows = rows;
    q->cols = cols;
    q->row_bytes = qp_row_bytes(fmt, cols);
    q->scale_inv = 1.0f;
    qp_scale_shape(fmt, rows, cols, &q->scale_rows, &q->scale_cols);
    q->codes = zalloc64((size_t)(rows * q->row_bytes) + 1);
    if (q->scale_rows) q->scales = zalloc64((size_t)(q->scale_rows * q->scale_cols * qp_formats[fmt].scale_bytes) + 1);
    if (qp_formats[fmt].row_scaled) q->row_scale_inv = zalloc64((size_t)rows * sizeof(float) + 1);
    if (!q->codes || (q->scale_rows && !q->scales) || (qp_formats[fmt].row_scaled && !q->row_scale_inv)) {
        qp_qtensor_free(q);
        return -1;
    }
    return 0;
}

void qp_qtensor_free(qp_qtensor *q)
{
    free(q->codes);
    free(q->scales);
    free(q->row_scale_inv);
    q->codes = q->scales = NULL;
    q->row_scale_inv = NULL;
}

int64_t qp_ue4m3_log2_fx[128];

void qp_tables_init(void)
{
    static int done;
    if (done) return;
    /* the FP32 scales' log2 (qp_log2_fx_f32): exponent plus a function of
     * the mantissa bits, which the vector path's 8-entry tables rely on */
    for (int c = 1; c < 127; c++) qp_ue4m3_log2_fx[c] = qp_log2_fx_f32(qp_ue4m3_to_f32((uint8_t)c));
    done = 1;
}

/* TE's tensor amax takes NaN and Inf in (torch.max propagates NaN): with a
 * NaN every scale of the tensor is NaN, with an Inf S = 1536/Inf = 0, which
 * TE replaces by 1 (reference_nvfp4.py:712-730). The -te rows reproduce it:
 * p->amax becomes NaN or Inf (qp_block_rule's TE case reads it), S NaN or 1. */
static void te_nonfinite_amax(qp_plan *p, const float *x, int64_t n)
{
    int inf = 0;
    for (int64_t i = 0; i < n; i++) {
        if (qp_isfinitef(x[i])) continue;
        if (qp_isnanf(x[i])) {
            p->amax = p->scale = p->scale_inv = qp_nanf();
            p->out_mul = p->out_mul == 1.0f ? 1.0f : p->scale_inv;
            return;
        }
        inf = 1;
    }
    if (!inf) return;
    p->amax = INFINITY;
    p->scale = p->scale_inv = 1.0f;
    p->out_mul = 1.0f;
}

/* Block b's scale s (block amax a) into bs, counted in st. */
static void put_block_scale(const qp_plan *p, qp_blockscales *bs, int64_t b, const qp_bscale *s, float a,
                            qp_block_stats *st)
{
    bs->enc[b] = s->enc;
    bs->dec[b] = s->dec;
    bs->code[b] = (uint8_t)s->code;
    bs->flag[b] = s->flag;
    st->n_blocks++;
    if (a > st->amax) st->amax = a;
    if (p->skip_block_stats || (s->flag & QP_BLOCK_NAN) || !(a > 0.0f)) return;
    st->n_zero += s->clamped_low;
    st->n_sat += s->clamped_high;
    const float sc = s->dec;
    if (sc > 0.0f) {
        if (st->n_live == 0 || sc < st->min) st->min = sc;
        if (st->n_live == 0 || sc > st->max) st->max = sc;
        st->log2_fx += qp_block_scale_log2_fx(p->t->block_scale, (uint8_t)s->code, sc);
        st->n_live++;
    }
}

void qp_block_scales_ref(const qp_plan *p, const float *x, int64_t cols, int bc, const float *amax,
                         const uint8_t *nonfinite, int64_t nb, qp_blockscales *bs, qp_block_stats *st)
{
    const qp_format_traits *t = p->t;
    const qp_tplan tp = qp_plan_tensor(p);
    /* MX marks blocks holding NaN/Inf; TE's Four Over Six reads the flag under
     * a non-finite tensor amax; the other rules ignore non-finite values */
    const int nan_blocks = t->block_scale == QP_SCALE_E8M0 || qp_rule_is_4o6_te(t->rule);
    for (int64_t b = 0; b < nb; b++) {
        const float a = amax[b];
        const int64_t c0 = b * bc, n = cols - c0 < bc ? cols - c0 : bc;
        const qp_bscale s = qp_block_rule(t, &tp, a, nan_blocks && nonfinite[b], x ? x + c0 : NULL, (int)n);
        put_block_scale(p, bs, b, &s, a, st);
    }
}

/* Four Over Six as TE computes it on a row of 1D blocks (k's block_scales
 * for these rules): each run of eight whole, finite blocks takes its two
 * candidates' errors from k->te_errors8, eight rows of 16 at a time; the
 * rest, a non-finite tensor amax (map-to-6 or NaN everywhere) and blocks
 * holding NaN or Inf, the reference rule (qp_block_rule). The same scales
 * and statistics either way. */
static void te_block_scales(const qp_kernels *k, const qp_plan *p, const float *x, int64_t cols, int bc,
                            const float *amax, const uint8_t *nf, int64_t nb, qp_blockscales *bs, qp_block_stats *st)
{
    const qp_format_traits *t = p->t;
    const qp_tplan tp = qp_plan_tensor(p);
    const int mse = t->rule == QP_RULE_NVFP4_4O6_TE_MSE;
    int64_t b = 0;
    if (x && bc == QK_NVFP4 && qp_isfinitef(tp.amax))
        for (; b + 8 <= nb && (b + 8) * bc <= cols; b += 8) {
            uint64_t any_nf = 0;
            memcpy(&any_nf, nf + b, 8);
            if (any_nf) {
                qp_blockscales part = {bs->enc + b, bs->dec + b, bs->code + b, bs->flag + b};
                qp_block_scales_ref(p, x + b * bc, 8 * bc, bc, amax + b, nf + b, 8, &part, st);
                continue;
            }
            qp_bscale s4[8], s6[8];
            float e4[8], e6[8];
            for (int j = 0; j < 8; j++) qp_4o6_te_candidates(amax[b + j], &tp, t->elem_max, &s4[j], &s6[j]);
            k->te_errors8(x + b * bc, bc, s4, tp.amax, t->tensor_range, mse, e4);
            k->te_errors8(x + b * bc, bc, s6, tp.amax, t->tensor_range, mse, e6);
            for (int j = 0; j < 8; j++) put_block_scale(p, bs, b + j, e4[j] < e6[j] ? &s4[j] : &s6[j], amax[b + j], st);
        }
    if (b < nb) {
        qp_blockscales rest = {bs->enc + b, bs->dec + b, bs->code + b, bs->flag + b};
        qp_block_scales_ref(p, x ? x + b * bc : NULL, cols - b * bc, bc, amax + b, nf + b, nb - b, &rest, st);
    }
}

/* Four Over Six as TE computes it on a band of 16x16 tiles (nr <= 16 rows of
 * x, cols wide; amax: the tiles' finite amaxes): each tile's error is the
 * sum of its rows' errors in TE's tree order (qp_4o6_te_tile_error; rows
 * past the tensor are TE's zero padding, error 0). A whole tile's rows take
 * k->te_errors8, eight at a time. */
static void te_tile_scales(const qp_kernels *k, const qp_plan *p, const float *x, int64_t nr, int64_t cols,
                           const float *amax, const uint8_t *nf, int64_t nb, qp_blockscales *bs, qp_block_stats *st)
{
    const qp_format_traits *t = p->t;
    const qp_tplan tp = qp_plan_tensor(p);
    const int bc = t->block_cols, mse = t->rule == QP_RULE_NVFP4_4O6_TE_MSE;
    for (int64_t b = 0; b < nb; b++) {
        const int64_t c0 = b * bc;
        const int n = (int)(cols - c0 < bc ? cols - c0 : bc);
        qp_bscale s4, s6;
        qp_4o6_te_candidates(amax[b], &tp, t->elem_max, &s4, &s6);
        if (!qp_isfinitef(tp.amax)) { /* TE's errors are all NaN or Inf: map-to-6 */
            const qp_bscale s = qp_block_rule(t, &tp, amax[b], nf[b], NULL, 0);
            put_block_scale(p, bs, b, &s, amax[b], st);
            continue;
        }
        float e4[QK_NVFP4] = {0}, e6[QK_NVFP4] = {0};
        if (n == QK_NVFP4 && nr == QK_NVFP4) {
            const qp_bscale c4[8] = {s4, s4, s4, s4, s4, s4, s4, s4}, c6[8] = {s6, s6, s6, s6, s6, s6, s6, s6};
            for (int r = 0; r < QK_NVFP4; r += 8) {
                k->te_errors8(x + r * cols + c0, cols, c4, tp.amax, t->tensor_range, mse, e4 + r);
                k->te_errors8(x + r * cols + c0, cols, c6, tp.amax, t->tensor_range, mse, e6 + r);
            }
        } else {
            for (int64_t r = 0; r < nr && r < QK_NVFP4; r++) {
                e4[r] = qp_4o6_te_row_error(x + r * cols + c0, n, s4, tp.amax, t->tensor_range, mse);
                e6[r] = qp_4o6_te_row_error(x + r * cols + c0, n, s6, tp.amax, t->tensor_range, mse);
            }
        }
        const qp_bscale s = qp_4o6_te_tile_error(e4) < qp_4o6_te_tile_error(e6) ? s4 : s6;
        put_block_scale(p, bs, b, &s, amax[b], st);
    }
}

/* A row of 1D blocks' scales by format p->t's rule on path k. */
static void block_scales(const qp_kernels *k, const qp_plan *p, const float *x, int64_t cols, int bc,
                         const float *amax, const uint8_t *nf, int64_t nb, qp_blockscales *bs, qp_block_stats *st)
{
    if (qp_rule_is_4o6_te(p->t->rule)) te_block_scales(k, p, x, cols, bc, amax, nf, nb, bs, st);
    else k->block_scales(p, x, cols, bc, amax, nf, nb, bs, st);
}

int64_t qp_block_scale_log2_fx(qp_block_scale kind, uint8_t code, float dec)
{
    switch (kind) {
    case QP_SCALE_E8M0: return (int64_t)((int)code - 127) * 4294967296LL;
    case QP_SCALE_UE4M3: return qp_ue4m3_log2_fx[code & 0x7F];
    case QP_SCALE_F32: return qp_log2_fx_f32(dec);
    case QP_SCALE_NONE:
    case QP_SCALE_TENSOR:
    case QP_SCALE_COUNT: break;
    }
    return 0;
}

/* Rows per chunk: 16, or one band of 2D blocks when they are taller. */
#define CHUNK_ROWS 16
static int64_t chunk_rows(const qp_format_traits *t) { return t->block_rows > CHUNK_ROWS ? t->block_rows : CHUNK_ROWS; }

/* Tensors whose input and output together exceed a typical last-level cache
 * have their outputs written with streaming stores: a reader would not find
 * them in the caches anyway, and streaming saves reading each output line
 * before writing it. Speed only: the values written are the same. */
#define QP_STREAM_MIN_BYTES ((int64_t)32 << 20)

/* Formats whose block scales depend on a tensor scale (NVFP4): the first pass
 * over the tensor stores every block amax, the tensor amax is their maximum,
 * and the second pass encodes without reading any block twice. */
static int two_pass(const qp_format_traits *t) { return t->block_cols > 1 && t->tensor_scale; }

/* The block scales of one row or band into packed storage. */
static void store_scales(const qp_format_traits *t, uint8_t *dst, const qp_blockscales *bs, int64_t nb)
{
    if (t->block_scale == QP_SCALE_F32) {
        for (int64_t b = 0; b < nb; b++) {
            const uint32_t u = qp_f32_bits(bs->dec[b]);
            dst[4 * b] = (uint8_t)u, dst[4 * b + 1] = (uint8_t)(u >> 8);
            dst[4 * b + 2] = (uint8_t)(u >> 16), dst[4 * b + 3] = (uint8_t)(u >> 24);
        }
    } else {
        memcpy(dst, bs->code, (size_t)nb);
    }
}

/* Marks the blocks holding NaN/Inf for the vector encoder (QP_BLOCK_NONFINITE). */
static void mark_nonfinite(qp_blockscales *bs, const uint8_t *nf, int64_t nb)
{
    for (int64_t b = 0; b < nb; b += 8) {
        uint64_t w = 0;
        memcpy(&w, nf + b, (size_t)(nb - b < 8 ? nb - b : 8));
        if (!w) continue; /* (nearly always) */
        for (int64_t i = b; i < b + 8 && i < nb; i++) bs->flag[i] |= nf[i] ? QP_BLOCK_NONFINITE : 0;
    }
}

/* Block amaxes of rows [r0, r1): one row of nb entries per row for 1D
 * blocks; for 2D tiles one row, the maximum over the band: the block
 * amaxes of the band's column maxima (colmax: scratch for cols floats),
 * one pass over the band instead of one block_amax call per row (a row of
 * fewer than sixteen blocks is not a group the vector paths reduce at
 * once). A tile whose columns hold NaN or Inf is done again row by row: its
 * finite amax. */
static void band_block_amax(const qp_kernels *k, const qp_format_traits *t, const float *x, int64_t r0, int64_t r1,
                            int64_t cols, float *amax, uint8_t *nf, float *colmax)
{
    const int bc = t->block_cols;
    const int64_t nb = (cols + bc - 1) / bc;
    if (t->block_rows == 1 && cols % bc == 0) {
        /* rows of whole blocks: the band's blocks are consecutive, one call
         * (a row of fewer than sixteen blocks is not a group the vector
         * path reduces at once) */
        k->block_amax(x + r0 * cols, (r1 - r0) * cols, bc, amax, nf);
        return;
    }
    if (t->block_rows == 1) {
        for (int64_t r = r0; r < r1; r++) k->block_amax(x + r * cols, cols, bc, amax + (r - r0) * nb, nf + (r - r0) * nb);
        return;
    }
    k->col_absmax(x + r0 * cols, r1 - r0, cols, colmax);
    k->block_amax(colmax, cols, bc, amax, nf);
    for (int64_t b = 0; b < nb; b++) {
        if (!nf[b]) continue; /* (nearly always) */
        const int64_t c0 = b * bc, w = cols - c0 < bc ? cols - c0 : bc;
        amax[b] = 0.0f;
        for (int64_t r = r0; r < r1; r++) {
            float a;
            uint8_t f;
            k->block_amax(x + r * cols + c0, w, bc, &a, &f);
            if (a > amax[b]) amax[b] = a;
        }
    }
}

/* The stored bytes the vector rows leave to the scalar rule
 * (qp_quantize_elem), written over theirs: a zero-scale block's elements
 * (stored as x * FLT_MAX encoded; the rows store 0), and in a row of a Four
 * Over Six -te format TE's bytes (qp_te_e2m1) too: an element whose scaled
 * value is +-0 stores code 0 and decodes +0 (the rows keep the sign), a NaN
 * stores 0. Those elements, and in a -te row any non-finite one, are
 * encoded again; the counts are the same either way (the sign of a zero
 * code and the code of a zero-scale block count nowhere), so encode_row's
 * stand. Every other element's bits are the vector rows'. */
static void scalar_bytes(const qp_plan *p, const float *x, int64_t cols, const qp_blockscales *bs, int bc,
                         uint8_t *codes, float *y, uint64_t gidx0)
{
    const qp_format_traits *t = p->t;
    const qp_tplan tp = qp_plan_tensor(p);
    const int te = qp_rule_is_4o6_te(t->rule);
    for (int64_t c0 = 0, b = 0; c0 < cols; c0 += bc, b++) {
        const qp_bscale s = {bs->enc[b], bs->dec[b], bs->code[b], bs->flag[b], 0, 0};
        if ((s.flag & QP_BLOCK_NAN) || !(te || (s.flag & QP_BLOCK_ZERO))) continue;
        const int64_t c1 = c0 + bc < cols ? c0 + bc : cols;
        for (int64_t c = c0; c < c1; c++) {
            const float xv = x[c];
            if (!(s.flag & QP_BLOCK_ZERO) && qp_isfinitef(xv) && xv * s.enc != 0.0f) continue;
            const uint32_t w = p->sr ? qp_sr_word(p->seed, p->stream, gidx0 + (uint64_t)c, qp_sr_bits(t->elem)) : 0;
            qp_ecounts ec = {0, 0, 0, 0};
            float yv;
            const uint32_t code = qp_quantize_elem(t, &tp, &s, xv, w, &yv, &ec);
            if (codes) {
                if (t->elem == QP_ELEM_E2M1) codes[c >> 1] &= (uint8_t)~(0xFu << (4 * (c & 1))); /* OR-ed in */
                qp_store_code(t->elem, codes, c, code);
            }
            if (y && p->y_bits) ((uint16_t *)(void *)y)[c] = (uint16_t)(qp_f32_bits(yv) >> 16);
            else if (y) y[c] = yv;
        }
    }
}

/* Encode row r (x its first element) into its codes and decoded values: y's
 * row, or their BF16 bits y16's (qp_plan.y_bits). */
static void encode_row_out(const qp_kernels *k, const qp_plan *p, const float *x, int64_t r, int64_t cols,
                           const qp_blockscales *bs, int bc, uint8_t *codes, int64_t row_bytes, float *y,
                           uint16_t *y16, qp_counts *cnt)
{
    float *out = y16 ? (float *)(void *)(y16 + r * cols) : y ? y + r * cols : NULL;
    uint8_t *rc = codes ? codes + r * row_bytes : NULL;
    const uint64_t gidx0 = p->sr_offset + (uint64_t)r * p->sr_stride;
    k->encode_row(p, x, cols, bs, bc, rc, out, gidx0, cnt);
    if (k != &qp_kernels_ref && bs && (qp_rule_is_4o6_te(p->t->rule) || (rc && p->t->block_scale == QP_SCALE_UE4M3)))
        scalar_bytes(p, x, cols, bs, bc, rc, out, gidx0);
}

/* Whether a chunk's rows can be encoded as one row of (r1 - r0) * cols: rows
 * of whole 1D blocks (or none), codes (when written) packed without padding
 * and SR words drawn consecutively from row to row. The same blocks, codes,
 * values, SR words and counts, and one call instead of one per row (a row
 * of a narrow tensor holds only a few vectors, and each call sets up its
 * tables; its few blocks, fewer than the vector paths' sixteen at a time,
 * would take the scalar block-scale rule). */
static int rows_join(const qp_plan *p, int64_t cols, const uint8_t *codes, int64_t row_bytes)
{
    const qp_format_traits *t = p->t;
    return t->block_rows == 1 && cols % t->block_cols == 0 && (!codes || row_bytes * 8 == cols * t->elem_bits) &&
           p->sr_stride == (uint64_t)cols && !p->row_scale;
}

/* Row r of a row-scaled format (nvfp4-row) under its own scales: p's
 * row_scale[r] and row_scale_inv[r] for the tensor's, applied to its
 * decoded values even when unscaled (no per-tensor factor can carry them).
 * A row whose TE amax is NaN gets TE's NaN block scales (0x7F), every code
 * 0 and every value NaN; one whose amax is Inf (S = 1) takes each block
 * holding an Inf at amax Inf, as TE's block amax does (the scale 448), on
 * the scalar loops. amax/nf: the row's finite block amaxes and flags;
 * spare: nb floats of scratch. */
static void row_scaled_row(const qp_kernels *k, const qp_plan *p, const float *x, int64_t r, int64_t cols,
                           const float *amax, const uint8_t *nf, int64_t nb, uint8_t *codes, int64_t row_bytes,
                           uint8_t *scales, int64_t scale_cols, float *y, uint16_t *y16, float *spare,
                           qp_blockscales *bs, qp_chunk_result *res)
{
    const qp_format_traits *t = p->t;
    qp_plan pr = *p;
    pr.scale = p->row_scale[r];
    pr.scale_inv = pr.out_mul = p->row_scale_inv[r];
    pr.amax = p->row_te_amax[r];
    if (qp_isnanf(pr.amax)) {
        for (int64_t b = 0; b < nb; b++) {
            bs->enc[b] = bs->dec[b] = qp_nanf();
            bs->code[b] = 0x7F;
            bs->flag[b] = QP_BLOCK_NAN;
        }
        res->bst.n_blocks += nb;
        k = &qp_kernels_ref;
    } else if (!qp_isfinitef(pr.amax)) {
        for (int64_t b = 0; b < nb; b++) spare[b] = nf[b] ? pr.amax : amax[b];
        k = &qp_kernels_ref;
        block_scales(k, &pr, x + r * cols, cols, t->block_cols, spare, nf, nb, bs, &res->bst);
    } else {
        block_scales(k, &pr, x + r * cols, cols, t->block_cols, amax, nf, nb, bs, &res->bst);
        mark_nonfinite(bs, nf, nb);
    }
    if (scales) store_scales(t, scales + r * scale_cols * t->scale_bytes, bs, nb);
    encode_row_out(k, &pr, x + r * cols, r, cols, bs, t->block_cols, codes, row_bytes, y, y16, &res->cnt);
}

/* A row-scaled format's row amaxes as TE takes them (the largest finite
 * block amax, or NaN / Inf where the row holds one, NaN first) and the row
 * scales from them (qp_te_tensor_scale), into ra, rs and rsi (rows each). */
static void row_scales(const qp_format_traits *t, const float *x, int64_t rows, int64_t cols, const float *pre_amax,
                       const uint8_t *pre_nf, int64_t nb, float *ra, float *rs, float *rsi)
{
    for (int64_t r = 0; r < rows; r++) {
        float a = 0.0f;
        int nonfinite = 0;
        for (int64_t b = 0; b < nb; b++) {
            if (pre_amax[r * nb + b] > a) a = pre_amax[r * nb + b];
            nonfinite |= pre_nf[r * nb + b];
        }
        if (nonfinite) {
            int has_nan = 0;
            for (int64_t c = 0; c < cols; c++) has_nan |= qp_isnanf(x[r * cols + c]);
            a = has_nan ? qp_nanf() : INFINITY;
        }
        ra[r] = a;
        rs[r] = qp_te_tensor_scale(t->tensor_range, a);
        rsi[r] = 1.0f / rs[r];
    }
}

/* Quantize rows [r0, r1). pre_amax/pre_nf: the block amaxes of these rows
 * (row r0's or the band's first), stored by the first pass of a two-pass
 * format; NULL to compute them here. */
static void quantize_chunk(const qp_kernels *k, const qp_plan *p, const float *x, int64_t r0, int64_t r1,
                           int64_t cols, uint8_t *codes, int64_t row_bytes, uint8_t *scales, int64_t scale_cols,
                           float *y, uint16_t *y16, const float *pre_amax, const uint8_t *pre_nf,
                           float *amax_buf, uint8_t *nf_buf, float *colmax, qp_blockscales *bs,
                           qp_chunk_result *res)
{
    const qp_format_traits *t = p->t;
    const int bc = t->block_cols;
    const int64_t nb = (cols + bc - 1) / bc, nr = r1 - r0;
    if (rows_join(p, cols, codes, row_bytes)) {
        /* row r0 of the chunk read as one row (encode_row_out's row index 0 of x + r0 * cols) */
        const float *xc = x + r0 * cols;
        uint8_t *cc = codes ? codes + r0 * row_bytes : NULL;
        float *yc = y ? y + r0 * cols : NULL;
        uint16_t *hc = y16 ? y16 + r0 * cols : NULL;
        qp_plan pc = *p;
        pc.sr_offset = p->sr_offset + (uint64_t)r0 * p->sr_stride;
        if (bc <= 1) {
            encode_row_out(k, &pc, xc, 0, nr * cols, NULL, 1, cc, nr * row_bytes, yc, hc, &res->cnt);
            return;
        }
        const float *amax = pre_amax ? pre_amax : amax_buf;
        const uint8_t *nf = pre_nf ? pre_nf : nf_buf;
        if (!pre_amax) k->block_amax(xc, nr * cols, bc, amax_buf, nf_buf);
        block_scales(k, p, xc, nr * cols, bc, amax, nf, nr * nb, bs, &res->bst);
        mark_nonfinite(bs, nf, nr * nb);
        if (scales)
            for (int64_t r = r0; r < r1; r++) {
                const qp_blockscales row = {bs->enc + (r - r0) * nb, bs->dec + (r - r0) * nb, bs->code + (r - r0) * nb,
                                            bs->flag + (r - r0) * nb};
                store_scales(t, scales + r * scale_cols * t->scale_bytes, &row, nb);
            }
        encode_row_out(k, &pc, xc, 0, nr * cols, bs, bc, cc, nr * row_bytes, yc, hc, &res->cnt);
        return;
    }
    if (bc <= 1) {
        for (int64_t r = r0; r < r1; r++)
            encode_row_out(k, p, x + r * cols, r, cols, NULL, 1, codes, row_bytes, y, y16, &res->cnt);
        return;
    }
    if (t->block_rows > 1) {
        /* 2D tiles: this chunk is one band of block_rows rows (a 16-row band
         * stays in L2 between its amax and its encoding; a 128-row band of
         * wide rows is read again from L3, which keeps each row one
         * sequential stream for the prefetchers) */
        const float *amax = pre_amax ? pre_amax : amax_buf;
        const uint8_t *nf = pre_nf ? pre_nf : nf_buf;
        if (!pre_amax) band_block_amax(k, t, x, r0, r1, cols, amax_buf, nf_buf, colmax);
        if (qp_rule_is_4o6_te(t->rule)) te_tile_scales(k, p, x + r0 * cols, r1 - r0, cols, amax, nf, nb, bs, &res->bst);
        else k->block_scales(p, NULL, cols, bc, amax, nf, nb, bs, &res->bst);
        mark_nonfinite(bs, nf, nb);
        if (scales) store_scales(t, scales + (r0 / t->block_rows) * scale_cols * t->scale_bytes, bs, nb);
        for (int64_t r = r0; r < r1; r++)
            encode_row_out(k, p, x + r * cols, r, cols, bs, bc, codes, row_bytes, y, y16, &res->cnt);
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        const float *amax = pre_amax ? pre_amax + (r - r0) * nb : amax_buf;
        const uint8_t *nf = pre_nf ? pre_nf + (r - r0) * nb : nf_buf;
        if (!pre_amax) k->block_amax(x + r * cols, cols, bc, amax_buf, nf_buf);
        if (p->row_scale) {
            row_scaled_row(k, p, x, r, cols, amax, nf, nb, codes, row_bytes, scales, scale_cols, y, y16, amax_buf,
                           bs, res);
            continue;
        }
        /* NVFP4 block scales ignore non-finite values; MX marks the block NaN. */
        block_scales(k, p, x + r * cols, cols, bc, amax, nf, nb, bs, &res->bst);
        mark_nonfinite(bs, nf, nb);
        if (scales) store_scales(t, scales + r * scale_cols * t->scale_bytes, bs, nb);
        encode_row_out(k, p, x + r * cols, r, cols, bs, bc, codes, row_bytes, y, y16, &res->cnt);
    }
}

/* Per-thread scratch that only grows: after the first call of a shape a
 * quantization allocates nothing (the trainer's step loop relies on it). It
 * is freed when its thread exits. */
typedef struct {
    void *buf[QP_SCRATCH_SLOTS];
    size_t cap[QP_SCRATCH_SLOTS];
} thread_scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    thread_scratch *t = p;
    for (int i = 0; i < QP_SCRATCH_SLOTS; i++) free(t->buf[i]);
    free(t);
}

static void scratch_key_init(void) { pthread_key_create(&scratch_key, scratch_free); }

void *qp_scratch(int slot, size_t bytes)
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

/* The finite amax of x[0..n) (one thread's chunks of a per-tensor format),
 * read from the end backwards in 1 MiB pieces: the encoding pass then
 * starts on the part the caches still hold (its outputs, when large, are
 * streamed past them). The two-pass formats' first pass walks its chunks
 * backwards likewise (my_chunks). */
static float first_pass_amax(const qp_kernels *k, const float *x, int64_t n)
{
    const int64_t piece = (int64_t)1 << 18;
    float amax = 0.0f;
    for (int64_t end = n; end > 0; end -= piece) {
        const int64_t start = end > piece ? end - piece : 0;
        const float m = k->amax(x + start, end - start);
        if (m > amax) amax = m;
    }
    return amax;
}

/* The chunks [lo, hi) the calling thread of a parallel region takes (all
 * of them outside one): contiguous, in thread order, the same in both passes
 * of a two-pass format. Its first pass walks them backwards and its second
 * forwards, so each thread encodes the chunks it read last, still in its own
 * cache: a tensor that fits the caches is read from them, not moved between
 * cores as an ordinary static schedule's two passes would (the first
 * backwards over the whole tensor, each thread taking the other end); a
 * larger one starts its second pass on what the last-level cache still
 * holds. Which thread does a chunk changes no result. */
static void my_chunks(int64_t nchunks, int64_t *lo, int64_t *hi)
{
    int64_t t = 0, nt = 1;
#if QP_HAVE_OPENMP
    t = omp_get_thread_num(), nt = omp_get_num_threads();
#endif
    const int64_t base = nchunks / nt, extra = nchunks % nt;
    *lo = t * base + (t < extra ? t : extra);
    *hi = *lo + base + (t < extra);
}

/* This thread's row buffers for nb blocks of a row of cols: block amaxes
 * and flags, a band's column maxima (cols floats) and the four arrays of
 * qp_blockscales. NULL when out of memory. */
static float *row_buffers(int64_t nb, int64_t cols, uint8_t **nf_buf, float **colmax, qp_blockscales *bs)
{
    const int64_t nbs = nb * CHUNK_ROWS; /* a joined chunk's blocks (rows_join) */
    const size_t amax_bytes = (size_t)nbs * sizeof(float), nf_bytes = (size_t)nbs;
    const size_t bs_bytes = (size_t)nbs * (2 * sizeof(float) + 2);
    char *mem = qp_scratch(1, amax_bytes + nf_bytes + bs_bytes + (size_t)cols * sizeof(float) + 32);
    if (!mem) return NULL;
    *nf_buf = (uint8_t *)(mem + amax_bytes);
    char *bs_mem = (char *)(((uintptr_t)(mem + amax_bytes + nf_bytes) + 15) & ~(uintptr_t)15);
    bs->enc = (float *)bs_mem;
    bs->dec = bs->enc + nbs;
    bs->code = (uint8_t *)(bs->dec + nbs);
    bs->flag = bs->code + nbs;
    *colmax = (float *)(((uintptr_t)(bs->flag + nbs) + 15) & ~(uintptr_t)15);
    return (float *)mem;
}

void qp_plan_scale(qp_plan *p, const qp_qopts *o, float amax)
{
    if (p->t->tensor_scale) {
        p->scale = o->scale > 0.0f ? o->scale : qp_scale_rule_from_amax(p->t->tensor_range, amax, 0);
        p->scale_inv = 1.0f / p->scale;
    }
    p->out_mul = o->unscaled ? 1.0f : p->scale_inv;
    /* TE's Four Over Six decodes its errors with the tensor amax; under a
     * caller's scale: the caller's amax, else the amax S maps onto the range */
    p->amax = !(o->scale > 0.0f) ? amax : o->amax > 0.0f ? o->amax : p->t->tensor_range / o->scale;
}

void qp_finish_stats(const qp_plan *p, const qp_chunk_result *res, int64_t nchunks, int64_t n, float amax,
                     qp_qstats *st)
{
    const qp_format_traits *t = p->t;
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
        if (res[c].cnt.amax > amax && p->row_amax) amax = res[c].cnt.amax;
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
    /* what each path may have counted anyway */
    if (p->skip_counts) s.n_nonfinite = s.n_nonzero = s.n_sat = s.n_flushed = 0;
    if (p->skip_block_stats) b = (qp_block_stats){.n_blocks = b.n_blocks};
    s.amax = amax;
    s.scale = p->scale;
    s.scale_inv = p->scale_inv;
    s.n_blocks = b.n_blocks;
    s.n_blocks_zero_scale = b.n_zero;
    s.n_blocks_sat_scale = b.n_sat;
    s.block_scale_min = b.min;
    s.block_scale_max = b.max;
    s.block_scale_log2_mean = b.n_live ? (double)b.log2_fx / 4294967296.0 / (double)b.n_live : 0.0;
    *st = s;
}

static int quantize_driver(const qp_kernels *k, qp_fmt fmt, const float *x, int64_t rows, int64_t cols,
                            uint8_t *codes, int64_t row_bytes, uint8_t *scales, int64_t scale_cols, float *y,
                            uint16_t *y16, const qp_qopts *o, qp_qstats *st, float *scale_inv_out,
                            float *row_inv_out)
{
    static const qp_qopts defaults;
    if (!o) o = &defaults;
    if (!qp_fmt_valid(fmt) || rows < 0 || cols < 0) return -1;
    const qp_format_traits *t = &qp_formats[fmt];
    qp_plan p = qp_plan_from_opts(t, o, cols, y16 != NULL);
    const int64_t n = rows * cols;
    const int blocky = t->block_cols > 1, twopass = two_pass(t);
    const int64_t crows = chunk_rows(t), nchunks = (rows + crows - 1) / crows;
    const int64_t nb = blocky ? (cols + t->block_cols - 1) / t->block_cols : 0;
    const int parallel = n >= qp_parallel_min() && nchunks > 1;
    qp_chunk_result *res = qp_scratch(0, ((size_t)nchunks + 1) * sizeof *res);
    if (!res) abort(); /* out of memory inside a quantizer: nothing sensible to return */
    memset(res, 0, ((size_t)nchunks + 1) * sizeof *res);

    /* the stored block amaxes of a two-pass format: one row of nb per row (1D) or per band (2D) */
    float *pre_amax = NULL;
    uint8_t *pre_nf = NULL;
    const int64_t pre_rows = (rows + t->block_rows - 1) / t->block_rows;
    if (twopass) {
        char *mem = qp_scratch(2, (size_t)(pre_rows * nb) * (sizeof(float) + 1) + 1);
        if (!mem) abort();
        pre_amax = (float *)mem;
        pre_nf = (uint8_t *)(pre_amax + pre_rows * nb);
    }

    float amax = 0.0f;
    int failed = 0;
    if (twopass) {
#if QP_HAVE_OPENMP
#pragma omp parallel if (parallel) reduction(| : failed)
#endif
        {
            qp_blockscales unused;
            uint8_t *nf_buf = NULL;
            float *colmax = NULL;
            float *amax_buf = row_buffers(nb, cols, &nf_buf, &colmax, &unused);
            if (!amax_buf) {
                failed = 1;
            } else {
                int64_t lo, hi;
                my_chunks(nchunks, &lo, &hi);
                for (int64_t c = hi - 1; c >= lo; c--) { /* backwards: see my_chunks */
                    const int64_t r0 = c * crows, r1 = r0 + crows < rows ? r0 + crows : rows;
                    const int64_t first = r0 / t->block_rows, count = (r1 - r0 + t->block_rows - 1) / t->block_rows;
                    band_block_amax(k, t, x, r0, r1, cols, pre_amax + first * nb, pre_nf + first * nb, colmax);
                    res[c].pass1_amax = k->amax(pre_amax + first * nb, count * nb);
                }
            }
        }
        if (failed) abort();
    } else if (!blocky && t->tensor_scale) {
        /* each thread over its chunks, as the encoding pass will take them */
#if QP_HAVE_OPENMP
#pragma omp parallel if (parallel)
#endif
        {
            int64_t lo, hi;
            my_chunks(nchunks, &lo, &hi);
            const int64_t r0 = lo * crows, r1 = hi * crows < rows ? hi * crows : rows;
            if (r1 > r0) res[lo].pass1_amax = first_pass_amax(k, x + r0 * cols, (r1 - r0) * cols);
        }
    }
    /* the first pass's tensor amax (0 for the formats without one: res is zeroed) */
    for (int64_t c = 0; c < nchunks; c++)
        if (res[c].pass1_amax > amax) amax = res[c].pass1_amax;
    p.row_amax = !blocky && !t->tensor_scale; /* the amax comes with the encoding */
    qp_plan_scale(&p, o, amax);
    if (qp_rule_is_4o6_te(t->rule) && !(o->scale > 0.0f)) te_nonfinite_amax(&p, x, n);
    if (t->row_scaled) {
        /* one scale per row: none for the tensor */
        float *rmem = qp_scratch(5, (size_t)rows * 3 * sizeof(float) + 1);
        if (!rmem) abort();
        row_scales(t, x, rows, cols, pre_amax, pre_nf, nb, rmem, rmem + rows, rmem + 2 * rows);
        p.row_te_amax = rmem;
        p.row_scale = rmem + rows;
        p.row_scale_inv = rmem + 2 * rows;
        p.scale = p.scale_inv = p.out_mul = 1.0f;
        if (row_inv_out) memcpy(row_inv_out, p.row_scale_inv, (size_t)rows * sizeof(float));
    }
    if (scale_inv_out) *scale_inv_out = p.scale_inv;
    const int64_t out_bytes = y ? n * (int64_t)sizeof(float) : rows * row_bytes;
    /* BF16 output goes through a row in L1, which streaming stores would evict */
    p.nt = !y16 && n * (int64_t)sizeof(float) + out_bytes >= QP_STREAM_MIN_BYTES;

#if QP_HAVE_OPENMP
#pragma omp parallel if (parallel) reduction(| : failed)
#endif
    {
        qp_blockscales bsa = {0};
        uint8_t *nf_buf = NULL;
        float *colmax = NULL;
        float *amax_buf = blocky ? row_buffers(nb, cols, &nf_buf, &colmax, &bsa) : NULL;
        if (blocky && !amax_buf) {
            failed = 1;
        } else {
            int64_t lo, hi;
            my_chunks(nchunks, &lo, &hi);
            for (int64_t c = lo; c < hi; c++) {
                const int64_t r0 = c * crows, r1 = r0 + crows < rows ? r0 + crows : rows;
                const int64_t first = (r0 / t->block_rows) * nb;
                quantize_chunk(k, &p, x, r0, r1, cols, codes, row_bytes, scales, scale_cols, y, y16,
                               twopass ? pre_amax + first : NULL, twopass ? pre_nf + first : NULL, amax_buf, nf_buf,
                               colmax, &bsa, &res[c]);
            }
        }
    }
    if (failed) abort(); /* out of memory inside a quantizer: nothing sensible to return */

    if (st) qp_finish_stats(&p, res, nchunks, n, amax, st);
    return 0;
}

/* ---- threads ------------------------------------------------------------ */

static int64_t parallel_min = QP_PARALLEL_MIN_DEFAULT;

void qp_set_parallel_min(int64_t n) { parallel_min = n > 1 ? n : 1; }

int64_t qp_parallel_min(void) { return parallel_min; }

/* ---- path selection ---------------------------------------------------- */

const qp_kernels *qp_active_kernels(void)
{
    static const qp_kernels *chosen;
    if (!chosen) {
        qp_tables_init();
        const char *cap = getenv("QP_SIMD");
        const qp_kernels *k = &qp_kernels_ref;
        if (!cap || strcmp(cap, "scalar") != 0) {
            const qp_kernels *v = qp_kernels_avx512();
            if (!v) v = qp_kernels_avx2();
            if (v) k = v;
        }
        chosen = k;
    }
    return chosen;
}

const char *qp_simd_name(void) { return qp_active_kernels()->name; }

float qp_amax(const float *x, int64_t n)
{
    const qp_kernels *k = qp_active_kernels();
    const int64_t chunk = 1 << 16, nch = (n + chunk - 1) / chunk;
    if (nch < 2 || n < qp_parallel_min()) return k->amax(x, n);
    /* chunks among the threads: max is order-free, so any thread count gives these bits */
    float m = 0.0f;
#pragma omp parallel for schedule(static) reduction(max : m)
    for (int64_t c = 0; c < nch; c++) {
        const int64_t lo = c * chunk;
        const float a = k->amax(x + lo, n - lo < chunk ? n - lo : chunk);
        if (a > m) m = a;
    }
    return m;
}

int qp_quantize(const float *x, qp_qtensor *q, const qp_qopts *o, qp_qstats *st)
{
    return quantize_driver(qp_active_kernels(), q->fmt, x, q->rows, q->cols, q->codes, q->row_bytes, q->scales,
                           q->scale_cols, NULL, NULL, o, st, &q->scale_inv, q->row_scale_inv);
}

int qp_quantize_ref(const float *x, qp_qtensor *q, const qp_qopts *o, qp_qstats *st)
{
    (void)qp_active_kernels(); /* tables */
    return quantize_driver(&qp_kernels_ref, q->fmt, x, q->rows, q->cols, q->codes, q->row_bytes, q->scales,
                           q->scale_cols, NULL, NULL, o, st, &q->scale_inv, q->row_scale_inv);
}

int qp_qdq(qp_fmt fmt, const float *x, float *y, int64_t rows, int64_t cols, const qp_qopts *o, qp_qstats *st)
{
    return quantize_driver(qp_active_kernels(), fmt, x, rows, cols, NULL, 0, NULL, 0, y, NULL, o, st, NULL, NULL);
}

int qp_qdq_ref(qp_fmt fmt, const float *x, float *y, int64_t rows, int64_t cols, const qp_qopts *o,
               qp_qstats *st)
{
    (void)qp_active_kernels(); /* tables */
    return quantize_driver(&qp_kernels_ref, fmt, x, rows, cols, NULL, 0, NULL, 0, y, NULL, o, st, NULL, NULL);
}

/* Only values that are BF16 values: their low halves are zero, so the high
 * halves are the values. */
static int qdq_bf16(const qp_kernels *k, qp_fmt fmt, const float *x, uint16_t *y, int64_t rows, int64_t cols,
                    const qp_qopts *o, qp_qstats *st)
{
    if (!qp_fmt_valid(fmt) || !qp_formats[fmt].unscaled_exact || !o || !o->unscaled) return -1;
    return quantize_driver(k, fmt, x, rows, cols, NULL, 0, NULL, 0, NULL, y, o, st, NULL, NULL);
}

int qp_qdq_bf16(qp_fmt fmt, const float *x, uint16_t *y, int64_t rows, int64_t cols, const qp_qopts *o,
                qp_qstats *st)
{
    return qdq_bf16(qp_active_kernels(), fmt, x, y, rows, cols, o, st);
}

int qp_qdq_bf16_ref(qp_fmt fmt, const float *x, uint16_t *y, int64_t rows, int64_t cols, const qp_qopts *o,
                    qp_qstats *st)
{
    (void)qp_active_kernels(); /* tables */
    return qdq_bf16(&qp_kernels_ref, fmt, x, y, rows, cols, o, st);
}

void qp_round_tally_stats(const qp_round_tally *t, int64_t n, float scale, qp_qstats *st)
{
    memset(st, 0, sizeof *st);
    st->n = n;
    st->n_nonfinite = t->nonfinite;
    st->n_nonzero = t->nonzero;
    st->n_sat = t->sat;
    st->n_flushed = t->flushed;
    memcpy(&st->amax, &t->amax_bits, sizeof st->amax);
    st->scale = scale;
    st->scale_inv = 1.0f / scale; /* qp_plan_scale's */
}

void qp_round_tally_merge(qp_round_tally *a, const qp_round_tally *b)
{
    a->nonfinite += b->nonfinite;
    a->nonzero += b->nonzero;
    a->sat += b->sat;
    a->flushed += b->flushed;
    if (b->amax_bits > a->amax_bits) a->amax_bits = b->amax_bits;
}

/* ---- decoding packed storage -------------------------------------------- */

float qp_block_scale_at(const qp_qtensor *q, int64_t r, int64_t c)
{
    if (!qp_fmt_valid(q->fmt) || !q->scales) return 1.0f;
    const qp_format_traits *t = &qp_formats[q->fmt];
    const int64_t i = (r / t->block_rows) * q->scale_cols + c / t->block_cols;
    return qp_block_scale_decode(t->block_scale, q->scales + i * t->scale_bytes);
}

void qp_decode_codes(const qp_qtensor *q, float *y)
{
    if (!qp_fmt_valid(q->fmt)) {
        for (int64_t i = 0; i < q->rows * q->cols; i++) y[i] = NAN;
        return;
    }
    const qp_format_traits *t = &qp_formats[q->fmt];
    for (int64_t r = 0; r < q->rows; r++) {
        const uint8_t *row = q->codes + r * q->row_bytes;
        for (int64_t c = 0; c < q->cols; c++) y[r * q->cols + c] = qp_decode_elem(t->elem, qp_load_code(t->elem, row, c));
    }
}

void qp_dequantize(const qp_qtensor *q, float *y)
{
    if (!qp_fmt_valid(q->fmt)) {
        qp_decode_codes(q, y);
        return;
    }
    const qp_format_traits *t = &qp_formats[q->fmt];
    /* a UE4M3 scale of 0 decodes its block to +0, as qp_qdq gives it (its
     * elements are stored as x * FLT_MAX encoded: code x 0 would keep x's sign) */
    const int zero_scale_plus0 = t->block_scale == QP_SCALE_UE4M3;
    for (int64_t r = 0; r < q->rows; r++) {
        const uint8_t *row = q->codes + r * q->row_bytes;
        for (int64_t c = 0; c < q->cols; c++) {
            const float bs = qp_block_scale_at(q, r, c);
            y[r * q->cols + c] = zero_scale_plus0 && bs == 0.0f
                                     ? 0.0f
                                     : qp_decode_elem(t->elem, qp_load_code(t->elem, row, c)) * bs *
                                           (t->row_scaled && q->row_scale_inv ? q->row_scale_inv[r] : q->scale_inv);
        }
    }
}
