/* test_quant.c — tensor quantizers: the published scale rules on hand-made
 * blocks, packed storage == fused quantize-dequantize, padding of partial
 * blocks, zero and non-finite inputs, stochastic rounding, thread-count
 * independence and the format table. */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>

#include "qp_format.h"
#include "qp_quant.h"
#include "qp_test.h"
#if QP_HAVE_OPENMP
#include <omp.h>
#endif

static float *randn(int64_t n, unsigned long long seed, float sigma)
{
    float *x = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) x[i] = sigma * qp_test_normal(&seed);
    return x;
}

/* Packed storage decoded gives exactly what the fused path gives. */
static void test_packed_equals_fused(void)
{
    const int64_t shapes[][2] = {{1, 1}, {3, 37}, {17, 64}, {33, 100}, {16, 16}, {40, 130}};
    for (int f = 0; f < QP_FMT_COUNT; f++)
        for (unsigned s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
            float *x = randn(n, 100 + s, 0.7f), *y1 = malloc(n * 4), *y2 = malloc(n * 4);
            for (int64_t i = 0; i < n; i += 7) x[i] *= 40.0f; /* outliers */
            qp_qtensor q;
            CHECK(qp_qtensor_alloc(&q, (qp_fmt)f, rows, cols) == 0, "alloc");
            qp_qstats s1, s2;
            qp_quantize(x, &q, NULL, &s1);
            qp_dequantize(&q, y1);
            qp_qdq((qp_fmt)f, x, y2, rows, cols, NULL, &s2);
            int same = 1;
            for (int64_t i = 0; i < n; i++) same &= qp_same_float(y1[i], y2[i]);
            CHECK(same, "%s %lldx%lld: dequantize(quantize) != qdq", qp_formats[f].name, (long long)rows,
                  (long long)cols);
            CHECK(memcmp(&s1, &s2, sizeof s1) == 0, "%s stats differ between packed and fused", qp_formats[f].name);
            CHECK(q.row_bytes == qp_row_bytes((qp_fmt)f, cols), "row bytes");
            qp_qtensor_free(&q);
            free(x), free(y1), free(y2);
        }
}

static void test_fp8_tensor_scale(void)
{
    float x[4] = {3.5f, -1.0f, 0.001f, 2.0f}, y[4];
    qp_qstats st;
    qp_qdq(QP_FMT_FP8_E4M3, x, y, 1, 4, NULL, &st);
    CHECK(st.amax == 3.5f && st.scale == 448.0f / 3.5f && st.scale_inv == 1.0f / (448.0f / 3.5f), "fp8 scale");
    CHECK(y[0] == 3.5f && y[1] == -1.0f && y[3] == 2.0f, "fp8 exact values: %g %g %g", y[0], y[1], y[3]);
    const float expect2 = qp_e4m3_to_f32(qp_f32_to_e4m3(0.001f * st.scale)) * st.scale_inv;
    CHECK(y[2] == expect2, "fp8 small value %g vs %g", y[2], expect2);
    CHECK(st.n_sat == 0, "current scaling never saturates");
    /* A caller's (delayed) scale that is too large saturates and is counted. */
    qp_qopts o = {.scale = 256.0f};
    qp_qdq(QP_FMT_FP8_E4M3, x, y, 1, 4, &o, &st);
    CHECK(st.n_sat == 2 && y[0] == 448.0f / 256.0f && y[3] == 448.0f / 256.0f, "delayed scale saturates: %lld",
          (long long)st.n_sat);
    qp_qdq(QP_FMT_FP8_E5M2, x, y, 1, 4, NULL, &st);
    CHECK(st.scale == 57344.0f / 3.5f, "e5m2 scale");
}

static void test_mx_scale_rule(void)
{
    /* Block amax 3.0: X = 2^(floor(log2 3) - 8) = 2^-7; 3.9 in the next block gives X = 2^-7 too
     * and 3.9 / X = 499.2 saturates to 448 (the OCP rule lets the top of a binade saturate). */
    float x[64] = {0}, y[64];
    x[0] = 3.0f, x[1] = 1.0f, x[2] = -0.02f;
    x[32] = 3.9f, x[33] = 3.4f;
    qp_qtensor q;
    qp_qtensor_alloc(&q, QP_FMT_MXFP8, 1, 64);
    qp_qstats st;
    qp_quantize(x, &q, NULL, &st);
    qp_dequantize(&q, y);
    CHECK(q.scales[0] == 127 - 7 && q.scales[1] == 127 - 7, "mxfp8 E8M0 scales %d %d", q.scales[0], q.scales[1]);
    CHECK(y[0] == 3.0f && y[1] == 1.0f, "mxfp8 exact");
    CHECK(y[32] == 448.0f / 128.0f && y[33] == 448.0f / 128.0f, "mxfp8 saturation / rounding: %g %g", y[32], y[33]);
    CHECK(st.n_sat == 1 && st.n_blocks == 2 && st.amax == 3.9f, "mxfp8 stats sat=%lld", (long long)st.n_sat);
    qp_qtensor_free(&q);

    /* MXFP4: amax 5 -> X = 2^(2-2) = 1; 7.9 alone -> X = 1 and saturates to 6. */
    float z[32] = {5.0f, 2.4f, 0.2f, -0.3f}, w[32];
    qp_qdq(QP_FMT_MXFP4, z, w, 1, 32, NULL, &st);
    CHECK(w[0] == 4.0f && w[1] == 2.0f && w[2] == 0.0f && w[3] == -0.5f, "mxfp4 %g %g %g %g", w[0], w[1], w[2], w[3]);
    CHECK(st.n_flushed == 1, "mxfp4 flushed 0.2");
    z[0] = 7.9f;
    qp_qdq(QP_FMT_MXFP4, z, w, 1, 32, NULL, &st);
    CHECK(w[0] == 6.0f && st.n_sat == 1, "mxfp4 saturates 7.9 -> %g", w[0]);
    /* Tiny block: the scale exponent clamps at -127 and is counted. */
    float t[32] = {1e-39f};
    qp_qdq(QP_FMT_MXFP8, t, w, 1, 32, NULL, &st);
    CHECK(st.n_blocks_zero_scale == 1, "mx scale underflow counted");
}

static void test_nvfp4_scale_rule(void)
{
    /* Tensor amax 10: S = 2688/10 = 268.8. A block with amax 2: d = 2*268.8/6 = 89.6 -> E4M3 88;
     * e = 1/(88/268.8) = 3.0545...: 2*e = 6.109 saturates to 6 (d rounded down). */
    float x[32] = {0}, y[32];
    x[0] = 10.0f, x[1] = 1.0f;
    x[16] = 2.0f, x[17] = 0.5f, x[18] = -1.0f;
    qp_qtensor q;
    qp_qtensor_alloc(&q, QP_FMT_NVFP4, 1, 32);
    qp_qstats st;
    qp_quantize(x, &q, NULL, &st);
    qp_dequantize(&q, y);
    const float S = 2688.0f / 10.0f;
    CHECK(st.scale == S && q.scale_inv == 1.0f / S, "nvfp4 tensor scale");
    CHECK(qp_ue4m3_to_f32(q.scales[1]) == 88.0f, "nvfp4 block scale %g", qp_ue4m3_to_f32(q.scales[1]));
    CHECK(qp_ue4m3_to_f32(q.scales[0]) == 448.0f, "block holding the amax gets 448");
    const float e = 1.0f / (88.0f * (1.0f / S));
    const float want16 = qp_e2m1_to_f32(qp_f32_to_e2m1(2.0f * e)) * 88.0f * (1.0f / S);
    const float want17 = qp_e2m1_to_f32(qp_f32_to_e2m1(0.5f * e)) * 88.0f * (1.0f / S);
    CHECK(y[16] == want16 && y[17] == want17, "nvfp4 elements %g %g vs %g %g", y[16], y[17], want16, want17);
    CHECK(fabsf(y[0] - 10.0f) < 1e-5f, "nvfp4 amax element exact: %g", y[0]);
    CHECK(st.n_sat == 1, "nvfp4 saturation counted: %lld", (long long)st.n_sat);
    qp_qtensor_free(&q);

    /* 2D: one scale per 16x16 tile, shared by all its rows. */
    float *m = randn(32 * 32, 9, 1.0f), *m2 = malloc(32 * 32 * 4);
    m[5 * 32 + 20] = 50.0f; /* tile (0,1) */
    qp_qtensor_alloc(&q, QP_FMT_NVFP4_2D, 32, 32);
    CHECK(q.scale_rows == 2 && q.scale_cols == 2, "2d scale shape");
    qp_quantize(m, &q, NULL, &st);
    CHECK(q.scales[1] == 0x7E && q.scales[0] != 0x7E && st.n_blocks == 4, "2d tile scales %02x %02x", q.scales[0],
          q.scales[1]);
    qp_dequantize(&q, m2);
    CHECK(fabsf(m2[5 * 32 + 20] - 50.0f) < 1e-4f, "2d amax exact");
    qp_qtensor_free(&q);
    free(m), free(m2);
}

/* A partial last block behaves as if padded with zeros. */
static void test_padding(void)
{
    for (int f = 0; f < QP_FMT_COUNT; f++) {
        const int64_t rows = 19, cols = 37, pcols = 64, prows = 32;
        float *x = randn(rows * cols, 3, 2.0f), *xp = calloc(prows * pcols, 4);
        float *y = malloc(rows * cols * 4), *yp = malloc(prows * pcols * 4);
        for (int64_t r = 0; r < rows; r++) memcpy(xp + r * pcols, x + r * cols, cols * 4);
        qp_qstats st, stp;
        qp_qdq((qp_fmt)f, x, y, rows, cols, NULL, &st);
        qp_qdq((qp_fmt)f, xp, yp, prows, pcols, NULL, &stp);
        int same = 1;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) same &= qp_same_float(y[r * cols + c], yp[r * pcols + c]);
        CHECK(same, "%s: partial block != zero-padded block", qp_formats[f].name);
        CHECK(st.amax == stp.amax && st.n_sat == stp.n_sat && st.n_flushed == stp.n_flushed, "%s padded stats",
              qp_formats[f].name);
        qp_qtensor q;
        qp_qtensor_alloc(&q, (qp_fmt)f, rows, cols);
        qp_quantize(x, &q, NULL, NULL);
        int pad_zero = 1;
        const int64_t used = (cols * qp_formats[f].elem_bits + 7) / 8;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t b = used; b < q.row_bytes; b++) pad_zero &= q.codes[r * q.row_bytes + b] == 0;
        CHECK(pad_zero, "%s: padding codes are 0", qp_formats[f].name);
        qp_qtensor_free(&q);
        free(x), free(xp), free(y), free(yp);
    }
}

static void test_zero_and_nonfinite(void)
{
    float z[64] = {0}, y[64];
    for (int f = 0; f < QP_FMT_COUNT; f++) {
        qp_qstats st;
        qp_qdq((qp_fmt)f, z, y, 2, 32, NULL, &st);
        int zero = 1;
        for (int i = 0; i < 64; i++) zero &= y[i] == 0.0f;
        CHECK(zero && st.amax == 0.0f && st.scale == 1.0f && st.n_flushed == 0 && st.n_nonzero == 0,
              "%s all-zero tensor", qp_formats[f].name);
    }
    /* MX: a NaN poisons its own block's scale only. */
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = (float)(i % 5) - 2.0f;
    x[3] = NAN;
    qp_qtensor q;
    qp_qtensor_alloc(&q, QP_FMT_MXFP8, 1, 64);
    qp_qstats st;
    qp_quantize(x, &q, NULL, &st);
    qp_dequantize(&q, y);
    CHECK(q.scales[0] == 0xFF && q.scales[1] != 0xFF && isnan(y[0]) && isnan(y[31]) && !isnan(y[32]),
          "mx NaN block");
    CHECK(st.n_nonfinite == 1, "nonfinite counted");
    qp_qtensor_free(&q);
    /* Per-tensor: amax ignores Inf; Inf saturates; NaN stays NaN in FP8. */
    float w[4] = {INFINITY, 2.0f, NAN, -1.0f};
    qp_qdq(QP_FMT_FP8_E4M3, w, y, 1, 4, NULL, &st);
    CHECK(st.amax == 2.0f && y[0] == 2.0f && y[1] == 2.0f && isnan(y[2]) && st.n_nonfinite == 2,
          "fp8 inf/nan: %g %g %g", y[0], y[1], y[2]);
    qp_qdq(QP_FMT_NVFP4, w, y, 1, 4, NULL, &st);
    CHECK(st.amax == 2.0f && y[1] == 2.0f && y[0] == y[1] && y[2] == y[1], "nvfp4 inf/nan encode as +max: %g %g",
          y[0], y[2]);
    qp_qdq(QP_FMT_BF16, w, y, 1, 4, NULL, &st);
    CHECK(isinf(y[0]) && isnan(y[2]) && y[3] == -1.0f, "bf16 keeps inf/nan");
}

static void test_stochastic(void)
{
    const int64_t n = 256;
    float *x = randn(n, 77, 1.0f), *y = malloc(n * 4), *y2 = malloc(n * 4);
    double *mean = calloc(n, sizeof(double));
    const int draws = 4000;
    for (int d = 0; d < draws; d++) {
        qp_qopts o = {.stochastic = true, .seed = 42, .stream = (uint64_t)d};
        qp_qdq(QP_FMT_NVFP4, x, y, 1, n, &o, NULL);
        for (int64_t i = 0; i < n; i++) mean[i] += y[i] / draws;
    }
    /* Unbiased: the average over draws approaches x (scales are fixed by amax).
     * A block's largest element can sit above 6 after the E4M3 block scale
     * rounded down; it saturates whatever the rounding, so only elements
     * below 0.8 of their block's amax are held to it. The standard error
     * of a mean of 4000 draws is under 0.01 here. */
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float bmax = 0.0f;
        for (int64_t j = i / 16 * 16; j < i / 16 * 16 + 16; j++) bmax = fmaxf(bmax, fabsf(x[j]));
        if (fabsf(x[i]) > 0.8f * bmax) continue;
        const double err_sr = fabs(mean[i] - x[i]);
        if (err_sr > worst) worst = err_sr;
    }
    CHECK(worst < 0.04, "nvfp4 SR mean error %g", worst);
    qp_qopts a = {.stochastic = true, .seed = 1, .stream = 5}, b = a;
    qp_qdq(QP_FMT_NVFP4, x, y, 1, n, &a, NULL);
    qp_qdq(QP_FMT_NVFP4, x, y2, 1, n, &b, NULL);
    CHECK(memcmp(y, y2, n * 4) == 0, "SR reproducible");
    b.stream = 6;
    qp_qdq(QP_FMT_NVFP4, x, y2, 1, n, &b, NULL);
    CHECK(memcmp(y, y2, n * 4) != 0, "SR streams differ");
    free(x), free(y), free(y2), free(mean);
}

/* qp_qopts.sr_offset / sr_row_stride: a row slice and a column slice of a
 * tensor, quantized alone with the whole tensor's per-tensor scale, give the
 * whole quantization's elements bit for bit (what a data-parallel rank relies
 * on: its rows of X, its token columns of dY^T), in the reference and the
 * fast path. Column slices start block-aligned for block formats and anywhere
 * (unaligned word index) for per-tensor ones. */
static void test_sr_slices(void)
{
    const int64_t R = 256, C = 384;
    float *x = randn(R * C, 91, 1.0f), *whole = malloc(R * C * 4), *part = malloc(R * C * 4),
          *src = malloc(R * C * 4);
    for (int f = QP_FMT_BF16; f < QP_FMT_COUNT; f++) {
        const qp_format_traits *t = &qp_formats[f];
        for (int path = 0; path < 2; path++) {
            int (*qdq)(qp_fmt, const float *, float *, int64_t, int64_t, const qp_qopts *, qp_qstats *) =
                path ? qp_qdq : qp_qdq_ref;
            qp_qopts o = {.stochastic = true, .seed = 7, .stream = 123, .unscaled = true};
            qp_qstats st;
            qdq((qp_fmt)f, x, whole, R, C, &o, &st);
            if (t->tensor_scale) o.scale = st.scale, o.amax = st.amax;
            /* rows [R/2, R) (R/2 a multiple of every block height): a constant offset */
            qp_qopts ro = o;
            ro.sr_offset = R / 2 * C;
            qdq((qp_fmt)f, x + R / 2 * C, part, R / 2, C, &ro, NULL);
            CHECK(memcmp(part, whole + R / 2 * C, R / 2 * C * 4) == 0, "%s %s: row slice", t->name,
                  path ? "fast" : "ref");
            /* columns [c0, c0 + w) of every row: offset c0, row stride C (a
             * row-scaled format's slice has its own row amaxes, hence scales:
             * no caller's scale stands for them, and its rows are checked
             * whole above) */
            if (t->row_scaled) continue;
            const int64_t c0 = t->block_cols > 1 ? t->block_cols : 5, w = t->block_cols > 32 ? t->block_cols : 32;
            for (int64_t r = 0; r < R; r++) memcpy(src + r * w, x + r * C + c0, w * 4);
            qp_qopts co = o;
            co.sr_offset = c0;
            co.sr_row_stride = C;
            qdq((qp_fmt)f, src, part, R, w, &co, NULL);
            int same = 1;
            for (int64_t r = 0; r < R; r++) same &= memcmp(part + r * w, whole + r * C + c0, w * 4) == 0;
            CHECK(same, "%s %s: column slice at %lld", t->name, path ? "fast" : "ref", (long long)c0);
            /* and the stride matters: without it the slice draws other words */
            co.sr_row_stride = 0;
            qdq((qp_fmt)f, src, part, R, w, &co, NULL);
            same = 1;
            for (int64_t r = 0; r < R; r++) same &= memcmp(part + r * w, whole + r * C + c0, w * 4) == 0;
            CHECK(!same, "%s %s: column slice without the row stride differs", t->name, path ? "fast" : "ref");
        }
    }
    free(x), free(whole), free(part), free(src);
}

/* The fused and packed entry points, each a fast path or its scalar reference. */
typedef int (*qdq_fn)(qp_fmt, const float *, float *, int64_t, int64_t, const qp_qopts *, qp_qstats *);
typedef int (*quantize_fn)(const float *, qp_qtensor *, const qp_qopts *, qp_qstats *);

/* A tensor quantized whole, where the driver encodes each chunk of rows as
 * one long row (rows of whole 1D blocks, unpadded codes, consecutive SR
 * words; the fused path's values too), gives what quantizing it one row at
 * a time gives: codes, block scales, values and every count, with NaN, Inf,
 * zeros and tiny values in it, rounding to nearest and stochastically. C:
 * rows of 16 NVFP4 blocks, and of fewer than the sixteen blocks the vector
 * paths take at once (a joined chunk is many of them). */
static void test_rows_joined(int64_t C)
{
    const int64_t R = 48;
    float *x = randn(R * C, 17, 1.0f), *whole = malloc(R * C * 4), *rows = malloc(R * C * 4);
    for (int64_t i = 0; i < R * C; i += 37) x[i] *= 1e-9f;
    x[5 * C + 3] = NAN, x[9 * C + 40] = INFINITY, x[20 * C + 7] = -INFINITY;
    for (int64_t c = 32; c < 64; c++) x[30 * C + c] = 0.0f;
    for (int f = QP_FMT_BF16; f < QP_FMT_COUNT; f++) {
        const qp_format_traits *t = &qp_formats[f];
        if (t->block_rows > 1 || C % t->block_cols) continue;
        /* TE's Four Over Six: the NaN above makes every scale of the whole
         * tensor NaN, which its rows alone do not see (test_te_parity) */
        if (qp_rule_is_4o6_te(t->rule)) continue;
        for (int path = 0; path < 4; path++) {
            const int fast = path & 1, sr = path >> 1;
            const qdq_fn qdq = fast ? qp_qdq : qp_qdq_ref;
            const quantize_fn quant = fast ? qp_quantize : qp_quantize_ref;
            qp_qopts o = {.stochastic = sr, .seed = 5, .stream = 77, .unscaled = true};
            qp_qstats ws, rs, sum;
            qdq((qp_fmt)f, x, whole, R, C, &o, &ws);
            if (t->tensor_scale) o.scale = ws.scale, o.amax = ws.amax; /* the rows take the tensor's scale */
            memset(&sum, 0, sizeof sum);
            int64_t zero_scale = 0, sat_scale = 0, blocks = 0;
            for (int64_t r = 0; r < R; r++) {
                qp_qopts ro = o;
                ro.sr_offset = r * C;
                qdq((qp_fmt)f, x + r * C, rows + r * C, 1, C, &ro, &rs);
                sum.n_nonfinite += rs.n_nonfinite, sum.n_nonzero += rs.n_nonzero;
                sum.n_sat += rs.n_sat, sum.n_flushed += rs.n_flushed;
                zero_scale += rs.n_blocks_zero_scale, sat_scale += rs.n_blocks_sat_scale, blocks += rs.n_blocks;
            }
            const char *name = fast ? "fast" : "ref";
            CHECK(memcmp(whole, rows, R * C * 4) == 0, "%s %s sr %d C %lld: whole vs rows' values", t->name, name, sr,
                  (long long)C);
            CHECK(ws.n_nonfinite == sum.n_nonfinite && ws.n_nonzero == sum.n_nonzero && ws.n_sat == sum.n_sat &&
                      ws.n_flushed == sum.n_flushed && ws.n_blocks == blocks &&
                      ws.n_blocks_zero_scale == zero_scale && ws.n_blocks_sat_scale == sat_scale,
                  "%s %s sr %d: counts (nonzero %lld/%lld, sat %lld/%lld, flushed %lld/%lld, nonfinite %lld/%lld)",
                  t->name, name, sr, (long long)ws.n_nonzero, (long long)sum.n_nonzero, (long long)ws.n_sat,
                  (long long)sum.n_sat, (long long)ws.n_flushed, (long long)sum.n_flushed,
                  (long long)ws.n_nonfinite, (long long)sum.n_nonfinite);
            /* packed codes and block scales */
            qp_qtensor qw, qr;
            if (qp_qtensor_alloc(&qw, (qp_fmt)f, R, C) || qp_qtensor_alloc(&qr, (qp_fmt)f, 1, C)) abort();
            quant(x, &qw, &o, NULL);
            int same = 1;
            for (int64_t r = 0; r < R; r++) {
                qp_qopts ro = o;
                ro.sr_offset = r * C;
                quant(x + r * C, &qr, &ro, NULL);
                same &= memcmp(qr.codes, qw.codes + r * qw.row_bytes, (size_t)qw.row_bytes) == 0;
                if (t->scale_bytes)
                    same &= memcmp(qr.scales, qw.scales + r * qw.scale_cols * t->scale_bytes,
                                   (size_t)(qw.scale_cols * t->scale_bytes)) == 0;
            }
            CHECK(same, "%s %s sr %d: whole vs rows' codes and scales", t->name, name, sr);
            qp_qtensor_free(&qw);
            qp_qtensor_free(&qr);
        }
    }
    free(x), free(whole), free(rows);
}

/* What no_counts leaves out: the four element counts and the block-scale
 * statistics but n_blocks. */
static int counts_zeroed(const qp_qstats *s)
{
    return !s->n_nonfinite && !s->n_nonzero && !s->n_sat && !s->n_flushed && !s->n_blocks_zero_scale &&
           !s->n_blocks_sat_scale && s->block_scale_min == 0.0f && s->block_scale_max == 0.0f &&
           s->block_scale_log2_mean == 0.0;
}

static void copy_counts(qp_qstats *dst, const qp_qstats *src)
{
    dst->n_nonfinite = src->n_nonfinite, dst->n_nonzero = src->n_nonzero, dst->n_sat = src->n_sat;
    dst->n_flushed = src->n_flushed, dst->n_blocks_zero_scale = src->n_blocks_zero_scale;
    dst->n_blocks_sat_scale = src->n_blocks_sat_scale, dst->block_scale_min = src->block_scale_min;
    dst->block_scale_max = src->block_scale_max, dst->block_scale_log2_mean = src->block_scale_log2_mean;
}

/* no_counts changes no value, code or scale and no statistic but the four
 * element counts and the block-scale statistics (n_blocks aside), which
 * come back 0: every format, fused and packed, fast and reference, rounding
 * to nearest and stochastically, with NaN, Inf, zeros and saturating values
 * in the tensor; NVFP4's column layout too. */
static void test_no_counts(void)
{
    const int64_t R = 32, C = 128, n = R * C;
    float *x = randn(n, 41, 1.0f), *y1 = malloc(n * 4), *y2 = malloc(n * 4);
    for (int64_t i = 0; i < n; i += 53) x[i] *= 1e4f;
    x[3] = NAN, x[200] = INFINITY, x[300] = 0.0f;
    /* TE's Four Over Six makes a tensor with a NaN all NaN (test_te_parity):
     * those rows see the Inf only */
    float *xf = malloc(n * 4);
    memcpy(xf, x, n * 4);
    xf[3] = 1.5f;
    for (int f = 0; f < QP_FMT_COUNT; f++)
        for (int path = 0; path < 4; path++) {
            const int te = qp_rule_is_4o6_te(qp_formats[f].rule);
            const float *xs = te ? xf : x;
            const int fast = path & 1, sr = path >> 1;
            const qdq_fn qdq = fast ? qp_qdq : qp_qdq_ref;
            const quantize_fn quant = fast ? qp_quantize : qp_quantize_ref;
            qp_qopts on = {.stochastic = sr, .seed = 9, .stream = 4}, off = on;
            off.no_counts = true;
            qp_qstats s1, s2;
            qdq((qp_fmt)f, xs, y1, R, C, &on, &s1);
            qdq((qp_fmt)f, xs, y2, R, C, &off, &s2);
            const int blocky = qp_formats[f].block_cols > 1;
            const int counted = s1.n_nonzero > 0 && s1.n_nonfinite == (te ? 1 : 2) && (!blocky || s1.block_scale_max > 0.0f);
            const int zeroed = counts_zeroed(&s2);
            copy_counts(&s2, &s1);
            CHECK(counted && zeroed && memcmp(y1, y2, n * 4) == 0 && memcmp(&s1, &s2, sizeof s1) == 0,
                  "%s %s sr %d: qdq with no_counts differs beyond its counts", qp_formats[f].name,
                  fast ? "fast" : "ref", sr);
            qp_qtensor q1, q2;
            if (qp_qtensor_alloc(&q1, (qp_fmt)f, R, C) || qp_qtensor_alloc(&q2, (qp_fmt)f, R, C)) abort();
            quant(xs, &q1, &on, &s1);
            quant(xs, &q2, &off, &s2);
            const size_t scale_bytes = (size_t)(q1.scale_rows * q1.scale_cols * qp_formats[f].scale_bytes);
            CHECK(memcmp(q1.codes, q2.codes, (size_t)(R * q1.row_bytes)) == 0 &&
                      (!scale_bytes || memcmp(q1.scales, q2.scales, scale_bytes) == 0) && s2.n_sat == 0 &&
                      s1.amax == s2.amax && s1.scale == s2.scale && s1.n_blocks == s2.n_blocks,
                  "%s %s sr %d: packed codes or scales with no_counts", qp_formats[f].name, fast ? "fast" : "ref",
                  sr);
            qp_qtensor_free(&q1);
            qp_qtensor_free(&q2);
        }
    /* the column layout (finite inputs: NaN and Inf take the transposed path) */
    float *t = randn(n, 43, 1.0f);
    for (int64_t i = 0; i < n; i += 29) t[i] *= 300.0f;
    for (int sr = 0; sr < 2; sr++) {
        qp_qopts on = {.stochastic = sr, .seed = 9, .stream = 4, .unscaled = true}, off = on;
        off.no_counts = true;
        qp_qstats s1, s2;
        /* the direct band encoder exists on the AVX-512 path only; elsewhere
           the transposed path runs, and the checks below hold the same */
        const int has_bands = !strcmp(qp_simd_name(), "avx512");
        CHECK(qp_qdq_cols_direct(QP_FMT_NVFP4, R, C, 16, &on) == has_bands, "the column layout applies (%s)",
              qp_simd_name());
        qp_qdq_cols(QP_FMT_NVFP4, t, y1, R, C, 16, 11, &on, &s1);
        qp_qdq_cols(QP_FMT_NVFP4, t, y2, R, C, 16, 11, &off, &s2);
        const int counted = s1.n_nonzero == n && s1.n_sat + s1.n_flushed > 0 && s1.block_scale_max > 0.0f;
        const int zeroed = counts_zeroed(&s2);
        copy_counts(&s2, &s1);
        CHECK(counted && zeroed && memcmp(y1, y2, n * 4) == 0 && memcmp(&s1, &s2, sizeof s1) == 0,
              "nvfp4 columns sr %d: no_counts differs beyond its counts", sr);
    }
    /* no_block_stats alone: the block-scale statistics zeroed, the counts as
     * always (TE's Four Over Six rows on x without its NaN, as above) */
    for (int f = 0; f < QP_FMT_COUNT; f++)
        for (int fast = 0; fast < 2; fast++) {
            const float *xs = qp_rule_is_4o6_te(qp_formats[f].rule) ? xf : x;
            qp_qopts on = {.seed = 9, .stream = 4}, off = on;
            off.no_block_stats = true;
            qp_qstats s1, s2;
            (fast ? qp_qdq : qp_qdq_ref)((qp_fmt)f, xs, y1, R, C, &on, &s1);
            (fast ? qp_qdq : qp_qdq_ref)((qp_fmt)f, xs, y2, R, C, &off, &s2);
            const int blocky = qp_formats[f].block_cols > 1;
            const int zeroed = !s2.n_blocks_zero_scale && !s2.n_blocks_sat_scale && s2.block_scale_min == 0.0f &&
                               s2.block_scale_max == 0.0f && s2.block_scale_log2_mean == 0.0;
            const int counted = s2.n_nonzero == s1.n_nonzero && s2.n_nonfinite == (xs == xf ? 1 : 2) && s2.n_sat == s1.n_sat &&
                                s2.n_flushed == s1.n_flushed && (!blocky || s1.block_scale_max > 0.0f);
            copy_counts(&s2, &s1);
            CHECK(zeroed && counted && memcmp(y1, y2, n * 4) == 0 && memcmp(&s1, &s2, sizeof s1) == 0,
                  "%s %s: no_block_stats differs beyond the block-scale statistics", qp_formats[f].name,
                  fast ? "fast" : "ref");
        }
    free(x), free(xf), free(t), free(y1), free(y2);
}

static void test_threads(void)
{
#if QP_HAVE_OPENMP
    const int64_t rows = 512, cols = 1024, n = rows * cols;
    float *x = randn(n, 5, 1.0f), *y1 = malloc(n * 4), *y2 = malloc(n * 4);
    for (int f = 0; f < QP_FMT_COUNT; f++) {
        qp_qstats s1, s2;
        qp_qopts o = {.stochastic = f >= QP_FMT_NVFP4, .seed = 3};
        omp_set_num_threads(1);
        qp_qdq((qp_fmt)f, x, y1, rows, cols, &o, &s1);
        omp_set_num_threads(2);
        qp_qdq((qp_fmt)f, x, y2, rows, cols, &o, &s2);
        CHECK(memcmp(y1, y2, n * 4) == 0 && memcmp(&s1, &s2, sizeof s1) == 0, "%s: 1 vs 2 threads",
              qp_formats[f].name);
    }
    free(x), free(y1), free(y2);
#endif
}

/* Unscaled output times the tensor decode scale is the scaled output, and
 * every unscaled value is exact in BF16. */
static void test_unscaled(void)
{
    const int64_t rows = 32, cols = 64, n = rows * cols;
    float *x = randn(n, 21, 3.0f), *y = malloc(n * 4), *u = malloc(n * 4);
    for (int f = 0; f < QP_FMT_COUNT; f++) {
        qp_qopts o = {.unscaled = true};
        qp_qstats s1, s2;
        qp_qdq((qp_fmt)f, x, y, rows, cols, NULL, &s1);
        qp_qdq((qp_fmt)f, x, u, rows, cols, &o, &s2);
        int same = 1, bf16_exact = 1;
        for (int64_t i = 0; i < n; i++) {
            same &= qp_same_float(u[i] * s2.scale_inv, y[i]);
            bf16_exact &= qp_bf16_to_f32(qp_f32_to_bf16(u[i])) == u[i];
        }
        CHECK(same && memcmp(&s1, &s2, sizeof s1) == 0, "%s unscaled * scale_inv == scaled", qp_formats[f].name);
        /* the row's unscaled_exact is what the trainer's GEMM choice reads: it must be true exactly when it holds */
        CHECK(bf16_exact == qp_formats[f].unscaled_exact, "%s unscaled values exact in bf16: %d, the table says %d",
              qp_formats[f].name, bf16_exact, qp_formats[f].unscaled_exact);
    }
    free(x), free(y), free(u);
}

static void test_table(void)
{
    for (int f = 0; f < QP_FMT_COUNT; f++) {
        CHECK(qp_formats[f].fmt == (qp_fmt)f, "table row %d in enum order", f);
        CHECK(qp_format_by_name(qp_formats[f].name) == &qp_formats[f], "lookup %s", qp_formats[f].name);
        CHECK(strstr(qp_format_names(), qp_formats[f].name) != NULL, "names lists %s", qp_formats[f].name);
    }
    CHECK(qp_format_by_name("fp7") == NULL, "unknown name");
    qp_qtensor q;
    CHECK(qp_qtensor_alloc(&q, QP_FMT_NVFP4, -1, 4) == -1 && qp_qtensor_alloc(&q, QP_FMT_COUNT, 1, 1) == -1,
          "bad alloc arguments rejected");
    CHECK(qp_row_bytes(QP_FMT_NVFP4, 17) == 16 && qp_row_bytes(QP_FMT_MXFP4, 1) == 16 &&
              qp_row_bytes(QP_FMT_MXFP8, 33) == 64 && qp_row_bytes(QP_FMT_BF16, 3) == 6,
          "row bytes");
}

/* The new rules, at the level of one tensor: the round-up MX scale never
 * saturates a block's amax; FP8 blocks store the FP32 decode scale 1/s (a
 * power of two for -pow2) and decode to qp_qdq's values; Four Over Six's
 * error is at most always-6's under the same tensor scale, per block. */
static void test_new_rules(void)
{
    const int64_t rows = 48, cols = 300, n = rows * cols;
    float *x = randn(n, 321, 1.0f), *y = malloc(n * 4), *y6 = malloc(n * 4), *d = malloc(n * 4);
    for (int64_t i = 0; i < n; i += 97) x[i] *= 40.0f; /* outliers */
    qp_qstats st;
    static const qp_fmt rceil[] = {QP_FMT_MXFP8_RCEIL, QP_FMT_MXFP4_RCEIL};
    for (int k = 0; k < 2; k++) {
        CHECK(qp_qdq(rceil[k], x, y, rows, cols, NULL, &st) == 0, "rceil qdq");
        CHECK(st.n_sat == 0, "%s: %lld elements saturated (the round-up scale never saturates amax)",
              qp_formats[rceil[k]].name, (long long)st.n_sat);
    }
    CHECK(qp_qdq(QP_FMT_MXFP8, x, y, rows, cols, NULL, &st) == 0 && st.n_sat > 0,
          "the OCP floor rule does saturate some blocks of this tensor (so the rceil check can fail)");
    static const qp_fmt blk[] = {QP_FMT_FP8_BLOCK, QP_FMT_FP8_BLOCK_2D, QP_FMT_FP8_BLOCK_POW2, QP_FMT_FP8_BLOCK_2D_POW2};
    for (int k = 0; k < 4; k++) {
        const qp_format_traits *t = &qp_formats[blk[k]];
        qp_qtensor q;
        CHECK(qp_qtensor_alloc(&q, blk[k], rows, cols) == 0, "alloc %s", t->name);
        CHECK(q.scale_rows == (rows + t->block_rows - 1) / t->block_rows && q.scale_cols == 3, "%s scale shape",
              t->name);
        qp_quantize(x, &q, NULL, &st);
        qp_dequantize(&q, y);
        qp_qdq(blk[k], x, d, rows, cols, NULL, NULL);
        CHECK(memcmp(y, d, n * 4) == 0, "%s: dequantize == qdq", t->name);
        int pow2 = 1, exact = 1;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c += 128) {
                const float dec = qp_block_scale_at(&q, r, c);
                pow2 &= (qp_f32_bits(dec) & 0x7FFFFFu) == 0;
                /* the stored scale is 1/s with s = 448 / amax_b (TE's compute_scale_from_amax) */
                float amax = 0.0f;
                for (int64_t rr = r / t->block_rows * t->block_rows; rr < rows && rr < (r / t->block_rows + 1) * t->block_rows; rr++)
                    for (int64_t cc = c; cc < c + 128 && cc < cols; cc++) amax = fmaxf(amax, fabsf(x[rr * cols + cc]));
                float sc = 448.0f / amax;
                if (t->rule == QP_RULE_POW2_BLOCK) sc = qp_bits_f32(qp_f32_bits(sc) & 0xFF800000u);
                exact &= dec == 1.0f / sc;
            }
        CHECK(exact, "%s: stored scales are 1/(448/amax_b)%s", t->name, t->rule == QP_RULE_POW2_BLOCK ? ", truncated" : "");
        CHECK(pow2 == (t->rule == QP_RULE_POW2_BLOCK), "%s: power-of-two scales %d", t->name, pow2);
        qp_qtensor_free(&q);
    }
    /* Four Over Six vs always-6 (NVFP4's rule) under 4/6's tensor scale */
    qp_qstats s4;
    qp_qdq(QP_FMT_NVFP4_4O6, x, y, rows, cols, NULL, &s4);
    qp_qopts same = {.scale = s4.scale};
    qp_qdq(QP_FMT_NVFP4, x, y6, rows, cols, &same, NULL);
    CHECK(s4.scale == 1536.0f / qp_amax(x, n), "4o6 tensor scale 6*256/amax");
    int worse = 0, better = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < cols; b += 16) {
            double e4 = 0, e6 = 0;
            for (int64_t c = b; c < b + 16 && c < cols; c++) {
                const double v = x[r * cols + c];
                e4 += (v - y[r * cols + c]) * (v - y[r * cols + c]);
                e6 += (v - y6[r * cols + c]) * (v - y6[r * cols + c]);
            }
            worse += e4 > e6;
            better += e4 < e6;
        }
    CHECK(worse == 0 && better > 0, "4o6: %d blocks worse than always-6, %d better", worse, better);
    free(x), free(y), free(y6), free(d);
}

/* An unknown format is an error wherever one enters quant/. */
static void test_unknown_format(void)
{
    float x[4] = {1, 2, 3, 4}, y[4];
    qp_qtensor q;
    static const int bad[] = {-1, QP_FMT_COUNT, 1000};
    for (int i = 0; i < 3; i++) {
        const qp_fmt f = (qp_fmt)bad[i];
        CHECK(qp_qdq(f, x, y, 1, 4, NULL, NULL) == -1 && qp_qdq_ref(f, x, y, 1, 4, NULL, NULL) == -1,
              "qp_qdq(%d) refused", bad[i]);
        CHECK(qp_qtensor_alloc(&q, f, 1, 4) == -1, "alloc(%d) refused", bad[i]);
        CHECK(qp_row_bytes(f, 4) == -1 && qp_tensor_scale_range(f) == 0.0f, "sizes of %d", bad[i]);
        int64_t sr = 7, sc = 7;
        qp_scale_shape(f, 4, 4, &sr, &sc);
        CHECK(sr == 0 && sc == 0, "scale shape of %d", bad[i]);
    }
    CHECK(qp_format_by_name("mxfp6") == NULL && qp_format_by_name("") == NULL, "unknown names");
    CHECK(qp_qdq(QP_FMT_MXFP8, x, y, -1, 4, NULL, NULL) == -1, "negative shape refused");
}

/* A producer's own quantization and counts (qp_round_elem_tally, merged
 * over parts as threads do, then qp_round_tally_stats) against qp_qdq's and
 * qp_qdq_bf16's values and statistics: BF16 and the per-tensor FP8 formats
 * at a given scale (delayed scaling's), on data with every kind of value:
 * NaN and Inf of both signs, FP32 subnormals, values that overflow (BF16: to
 * Inf; FP8: past the largest code) and that round to the largest value,
 * ties, zeros of both signs. */
static void test_round_tally(void)
{
    enum { ROWS = 37, COLS = 96, N = ROWS * COLS };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *t = malloc(N * sizeof *t);
    uint16_t *y16 = malloc(N * sizeof *y16);
    unsigned long long seed = 99;
    const uint32_t special[] = {0x7FC00000u, 0xFFC00001u, 0x7F800000u, 0xFF800000u, 0x00000001u, 0x80007FFFu,
                                0x00008000u, 0x00018000u, 0x7F7FFFFFu, 0xFF7F8000u, 0x7F7F7FFFu, 0x3F808000u,
                                0x3F818000u, 0x00000000u, 0x80000000u, 0x00800000u, 0x43E00000u, 0xC3E80000u,
                                0x3B000000u, 0x3A800000u, 0x47600000u};
    const int nspecial = (int)(sizeof special / sizeof special[0]);
    const struct {
        qp_fmt fmt;
        float scale;
    } cases[] = {{QP_FMT_BF16, 1.0f}, {QP_FMT_FP8_E4M3, 1.0f}, {QP_FMT_FP8_E4M3, 37.5f},
                 {QP_FMT_FP8_E5M2, 0.375f}, {QP_FMT_FP8_E5M2, 1024.0f}};
    for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++)
        for (int round = 0; round < 3; round++) {
            const qp_format_traits *f = &qp_formats[cases[k].fmt];
            const float sc = cases[k].scale;
            for (int i = 0; i < N; i++) {
                const unsigned long long r = qp_test_next(&seed);
                uint32_t b = (uint32_t)(r >> 32);
                if (round == 0 && r % 7 == 0) b = special[(r >> 8) % (unsigned)nspecial];
                if (round == 1) /* near 1, near the FP8 subnormals, and FP32 subnormals */
                    b = (b & 0x80FFFFFFu) | (uint32_t)((r >> 3) % 3 == 0 ? 0x3F000000u : (r >> 3) % 3 == 1 ? 0x3B000000u : 0u);
                if (round == 2) b = 0x3E000000u ^ (b & 0x803FFFFFu); /* normal, in range: nothing but nonzero */
                memcpy(&x[i], &b, sizeof b);
            }
            qp_round_tally parts[3] = {{0}};
            for (int i = 0; i < N; i++) t[i] = qp_round_elem_tally(f, sc, x[i], &parts[i * 3 / N]);
            qp_round_tally all = parts[0];
            qp_round_tally_merge(&all, &parts[1]);
            qp_round_tally_merge(&all, &parts[2]);
            qp_qstats mine, theirs, theirs16;
            qp_round_tally_stats(&all, N, sc, &mine);
            const qp_qopts o = {.unscaled = true, .scale = f->tensor_scale ? sc : 0.0f};
            CHECK(qp_qdq(cases[k].fmt, x, y, ROWS, COLS, &o, &theirs) == 0 &&
                      qp_qdq_bf16(cases[k].fmt, x, y16, ROWS, COLS, &o, &theirs16) == 0,
                  "%s qdq", f->name);
            int same = 1, same16 = 1;
            for (int i = 0; i < N; i++) {
                same &= memcmp(&t[i], &y[i], sizeof t[i]) == 0 || (isnan(t[i]) && isnan(y[i]));
                same16 &= (isnan(t[i]) ? (y16[i] & 0x7FFFu) > 0x7F80u : qp_f32_to_bf16(t[i]) == y16[i]) &&
                          (qp_f32_bits(t[i]) & 0xFFFFu) == 0;
            }
            CHECK(same && same16, "%s x%g round %d: the producer's values are qp_qdq's bits", f->name, sc, round);
            CHECK(memcmp(&mine, &theirs, sizeof mine) == 0 && memcmp(&mine, &theirs16, sizeof mine) == 0,
                  "%s x%g round %d: statistics: n %lld/%lld nonfinite %lld/%lld nonzero %lld/%lld sat %lld/%lld "
                  "flushed %lld/%lld amax %g/%g scale %g/%g scale_inv %g/%g",
                  f->name, sc, round, (long long)mine.n, (long long)theirs.n, (long long)mine.n_nonfinite,
                  (long long)theirs.n_nonfinite, (long long)mine.n_nonzero, (long long)theirs.n_nonzero,
                  (long long)mine.n_sat, (long long)theirs.n_sat, (long long)mine.n_flushed,
                  (long long)theirs.n_flushed, mine.amax, theirs.amax, mine.scale, theirs.scale, mine.scale_inv,
                  theirs.scale_inv);
            if (round == 0)
                CHECK(mine.n_nonfinite > 0 && mine.n_sat > 0 && mine.n_flushed > 0,
                      "%s round 0 has every kind of count", f->name);
            if (round == 2)
                CHECK(mine.n_nonzero == N && mine.n_sat + mine.n_flushed + mine.n_nonfinite == 0, "%s round 2",
                      f->name);
        }
    free(x), free(y), free(t), free(y16);
}

/* A 2D tile's scale comes from its finite amax over all its rows and
 * columns, NaN and Inf ignored: a tensor holding NaN/Inf in some tiles, each
 * in the column (and tile) of the tile's largest finite value but another
 * row, gets the same scales as the tensor with zeros in their place. Every
 * 2D format, fast and reference, narrow rows (fewer blocks than a vector
 * path's group), partial tiles at the right and bottom. */
static void test_2d_tiles_nonfinite(void)
{
    static const int64_t shapes[][2] = {{40, 48}, {37, 100}, {200, 300}, {16, 16}};
    for (int f = 0; f < QP_FMT_COUNT; f++) {
        const qp_format_traits *t = &qp_formats[f];
        if (t->block_rows <= 1) continue;
        /* TE's Four Over Six takes NaN and Inf into the tensor amax instead
         * (every scale NaN, or S = 1: test_te_parity's nan and inf vectors) */
        if (qp_rule_is_4o6_te(t->rule)) continue;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int fast = 0; fast < 2; fast++) {
                const int64_t rows = shapes[si][0], cols = shapes[si][1], n = rows * cols;
                float *x = randn(n, 77 + si, 1.0f), *clean = malloc(n * 4);
                const int64_t tr = t->block_rows, tc = t->block_cols;
                int poisoned = 0;
                for (int64_t r0 = 0; r0 < rows; r0 += tr)
                    for (int64_t c0 = 0; c0 < cols; c0 += tc) {
                        if (((r0 / tr) + (c0 / tc)) % 2) continue;
                        const int64_t r1 = r0 + tr < rows ? r0 + tr : rows, c1 = c0 + tc < cols ? c0 + tc : cols;
                        if (r1 - r0 < 2) continue;
                        int64_t best = r0 * cols + c0;
                        for (int64_t r = r0; r < r1; r++)
                            for (int64_t c = c0; c < c1; c++)
                                if (fabsf(x[r * cols + c]) > fabsf(x[best])) best = r * cols + c;
                        const int64_t br = best / cols, bcol = best % cols;
                        x[(br == r0 ? r0 + 1 : r0) * cols + bcol] = poisoned++ % 2 ? NAN : -INFINITY;
                    }
                for (int64_t i = 0; i < n; i++) clean[i] = isfinite(x[i]) ? x[i] : 0.0f;
                qp_qtensor qa, qb;
                if (qp_qtensor_alloc(&qa, (qp_fmt)f, rows, cols) || qp_qtensor_alloc(&qb, (qp_fmt)f, rows, cols)) abort();
                qp_qstats sa, sb;
                (fast ? qp_quantize : qp_quantize_ref)(x, &qa, NULL, &sa);
                (fast ? qp_quantize : qp_quantize_ref)(clean, &qb, NULL, &sb);
                const size_t sbytes = (size_t)(qa.scale_rows * qa.scale_cols * t->scale_bytes);
                CHECK(poisoned > 0 && sa.scale == sb.scale && memcmp(qa.scales, qb.scales, sbytes) == 0,
                      "%s %s %lldx%lld: tiles holding NaN/Inf take their finite amax (%d poisoned)", t->name,
                      fast ? "fast" : "ref", (long long)rows, (long long)cols, poisoned);
                qp_qtensor_free(&qa);
                qp_qtensor_free(&qb);
                free(x), free(clean);
            }
    }
}

int main(void)
{
    test_round_tally();
    test_new_rules();
    test_unknown_format();
    test_packed_equals_fused();
    test_fp8_tensor_scale();
    test_mx_scale_rule();
    test_nvfp4_scale_rule();
    test_padding();
    test_zero_and_nonfinite();
    test_stochastic();
    test_sr_slices();
    test_rows_joined(256);
    test_rows_joined(96);
    test_no_counts();
    test_2d_tiles_nonfinite();
    test_threads();
    test_unscaled();
    test_table();
    return qp_test_finish("test_quant");
}
