/* test_quant_cols.c — qp_qdq_bf16_cols (and qp_qdq_cols, its values as
 * floats) against the transposed copy it replaces: for every shape, rounding, rotation and kind of data, the
 * values (bit for bit, in the stored layout) and every statistic must be
 * qp_qdq_bf16's of the tensor transposed (and rotated by qp_transpose_rht)
 * here, on one thread and on several. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

#include "qp_hadamard.h"
#include "qp_quant.h"
#include "qp_test.h"

enum { DATA_NORMAL, DATA_WIDE, DATA_TINY_COLUMNS, DATA_ZERO_COLUMNS, DATA_NONFINITE, DATA_INF_LAST, DATA_COUNT };
static const char *data_names[DATA_COUNT] = {"normal", "wide", "tiny columns", "zero columns", "nan/inf",
                                             "-inf in the last band only"};

static void fill(float *x, int64_t rows, int64_t cols, int kind, unsigned long long seed)
{
    unsigned long long s = seed;
    for (int64_t i = 0; i < rows * cols; i++) {
        const int64_t c = i % cols;
        float v = qp_test_normal(&s);
        switch (kind) {
        case DATA_NORMAL: break;
        case DATA_WIDE: v *= powf(2.0f, (float)(int)(qp_test_next(&s) % 40) - 20.0f); break;
        /* columns far below the tensor amax: their block scales decode to 0 */
        case DATA_TINY_COLUMNS: v *= c % 3 == 1 ? 1e-12f : c == 0 && i < cols ? 1e4f : 1.0f; break;
        case DATA_ZERO_COLUMNS: v = c % 5 == 2 ? 0.0f : v; break;
        case DATA_NONFINITE: v = i == 3 * cols + 1 ? NAN : i == 5 * cols + 2 ? INFINITY : v; break;
        case DATA_INF_LAST: v = i == rows * cols - 2 ? -INFINITY : v; break;
        }
        x[i] = v;
    }
}

static int same_stats(const qp_qstats *a, const qp_qstats *b)
{
    return a->n == b->n && a->n_nonfinite == b->n_nonfinite && a->n_nonzero == b->n_nonzero &&
           a->n_sat == b->n_sat && a->n_flushed == b->n_flushed && qp_same_float(a->amax, b->amax) &&
           qp_same_float(a->scale, b->scale) && qp_same_float(a->scale_inv, b->scale_inv) &&
           a->n_blocks == b->n_blocks && a->n_blocks_zero_scale == b->n_blocks_zero_scale &&
           a->n_blocks_sat_scale == b->n_blocks_sat_scale && qp_same_float(a->block_scale_min, b->block_scale_min) &&
           qp_same_float(a->block_scale_max, b->block_scale_max) &&
           a->block_scale_log2_mean == b->block_scale_log2_mean;
}

/* What qp_qdq_bf16_cols must give: the transposed (rotated) copy quantized. */
static int expected(qp_fmt fmt, const float *x, int64_t rows, int64_t cols, int rht, uint64_t seed,
                    const qp_qopts *o, uint16_t *y, qp_qstats *st)
{
    float *t = calloc((size_t)(rows * cols) + 1, sizeof *t);
    uint16_t *u = malloc((size_t)(rows * cols) * sizeof *u + 2);
    int rc = 0;
    if (rht) {
        rc = qp_transpose_rht(x, t, rows, cols, rht, seed);
    } else {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) t[c * rows + r] = x[r * cols + c];
    }
    if (!rc) rc = qp_qdq_bf16(fmt, t, u, cols, rows, o, st);
    for (int64_t r = 0; !rc && r < rows; r++)
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = u[c * rows + r];
    free(t);
    free(u);
    return rc;
}

static int64_t zero_scale_blocks; /* over the tiny-columns cases: the lane mask of scale-0 blocks ran */

/* sr_stride: the SR word stride of the quantized tensor's rows (0: its row count) */
static void check_case_strided(qp_fmt fmt, int64_t rows, int64_t cols, int rht, int sr, int kind, float scale,
                               int64_t sr_offset, int64_t sr_stride, int threads)
{
    const int64_t n = rows * cols;
    float *x = malloc((size_t)n * sizeof *x);
    uint16_t *want = malloc((size_t)n * sizeof *want + 2), *got = malloc((size_t)n * sizeof *got + 2);
    fill(x, rows, cols, kind, 0x5EED0000ull + (unsigned long long)(rows * 131 + cols * 7 + kind));
    qp_qopts o = {.stochastic = sr != 0, .seed = 99, .stream = 0xABCDull + (uint64_t)rows, .sr_offset = sr_offset,
                  .sr_row_stride = sr_stride, .scale = scale, .unscaled = true};
    qp_qstats ws, gs;
    memset(&ws, 0, sizeof ws);
    memset(&gs, 0xA5, sizeof gs);
    const int erc = expected(fmt, x, rows, cols, rht, 77, &o, want, &ws);
    omp_set_num_threads(threads);
    memset(got, 0xEE, (size_t)n * sizeof *got);
    const int grc = qp_qdq_bf16_cols(fmt, x, got, rows, cols, rht, 77, &o, &gs);
    omp_set_num_threads(2);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i] && bad++ == 0) first = i;
    CHECK(erc == 0 && grc == 0, "%s %lldx%lld rht %d sr %d %s: rc %d / %d", qp_formats[fmt].name, (long long)rows,
          (long long)cols, rht, sr, data_names[kind], erc, grc);
    CHECK(bad == 0, "%s %lldx%lld rht %d sr %d %s scale %g offset %lld, %d threads: %lld values differ, first at %lld "
          "(%04x, want %04x)", qp_formats[fmt].name, (long long)rows, (long long)cols, rht, sr, data_names[kind],
          scale, (long long)sr_offset, threads, (long long)bad, (long long)first, first >= 0 ? got[first] : 0,
          first >= 0 ? want[first] : 0);
    CHECK(same_stats(&gs, &ws), "%s %lldx%lld rht %d sr %d %s: statistics differ (n_nonzero %lld/%lld, sat %lld/%lld, "
          "flushed %lld/%lld, amax %g/%g, zero-scale blocks %lld/%lld, log2 mean %.17g/%.17g)",
          qp_formats[fmt].name, (long long)rows, (long long)cols, rht, sr, data_names[kind], (long long)gs.n_nonzero,
          (long long)ws.n_nonzero, (long long)gs.n_sat, (long long)ws.n_sat, (long long)gs.n_flushed,
          (long long)ws.n_flushed, gs.amax, ws.amax, (long long)gs.n_blocks_zero_scale,
          (long long)ws.n_blocks_zero_scale, gs.block_scale_log2_mean, ws.block_scale_log2_mean);
    if (kind == DATA_TINY_COLUMNS) zero_scale_blocks += ws.n_blocks_zero_scale;
    /* the float form (an FP32 GEMM's operand): the same values, widened, and the same statistics */
    float *gotf = malloc((size_t)n * sizeof *gotf + 4);
    qp_qstats fs;
    memset(&fs, 0x5A, sizeof fs);
    memset(gotf, 0xEE, (size_t)n * sizeof *gotf);
    omp_set_num_threads(threads);
    const int frc = qp_qdq_cols(fmt, x, gotf, rows, cols, rht, 77, &o, &fs);
    omp_set_num_threads(2);
    int64_t fbad = 0, ffirst = -1;
    for (int64_t i = 0; i < n; i++)
        if (qp_f32_bits(gotf[i]) != (uint32_t)want[i] << 16 && fbad++ == 0) ffirst = i;
    CHECK(frc == 0 && fbad == 0 && same_stats(&fs, &ws),
          "%s %lldx%lld rht %d sr %d %s, %d threads, floats: rc %d, %lld values differ from the BF16 bits widened "
          "(first at %lld: %08x, want %04x0000)%s", qp_formats[fmt].name, (long long)rows, (long long)cols, rht, sr,
          data_names[kind], threads, frc, (long long)fbad, (long long)ffirst,
          ffirst >= 0 ? qp_f32_bits(gotf[ffirst]) : 0, ffirst >= 0 ? want[ffirst] : 0,
          same_stats(&fs, &ws) ? "" : ", statistics differ");
    free(gotf);
    free(x);
    free(want);
    free(got);
}

static void check_case(qp_fmt fmt, int64_t rows, int64_t cols, int rht, int sr, int kind, float scale,
                       int64_t sr_offset, int threads)
{
    check_case_strided(fmt, rows, cols, rht, sr, kind, scale, sr_offset, 0, threads);
}

int main(void)
{
    const int avx512 = strcmp(qp_simd_name(), "avx512") == 0;
    const qp_qopts rn = {.unscaled = true}, sr4 = {.stochastic = true, .unscaled = true};
    const qp_qopts odd = {.stochastic = true, .sr_offset = 2, .unscaled = true};
    /* where the direct path applies (it must, or this test checks only the fallback) */
    CHECK(qp_qdq_cols_direct(QP_FMT_NVFP4, 1024, 256, 16, &sr4) == avx512, "1024x256 nvfp4 sr rht16");
    CHECK(qp_qdq_cols_direct(QP_FMT_NVFP4, 64, 48, 0, &rn) == avx512, "64x48 nvfp4 rn");
    CHECK(!qp_qdq_cols_direct(QP_FMT_NVFP4, 64, 40, 0, &rn), "cols not a multiple of 16");
    CHECK(!qp_qdq_cols_direct(QP_FMT_NVFP4, 40, 64, 0, &rn), "rows not a multiple of 16");
    CHECK(!qp_qdq_cols_direct(QP_FMT_NVFP4, 64, 64, 32, &rn), "a 32-point rotation");
    CHECK(!qp_qdq_cols_direct(QP_FMT_NVFP4, 64, 64, 16, &odd), "SR words off a multiple of 4");
    CHECK(qp_qdq_cols_direct(QP_FMT_MXFP8, 64, 48, 0, &rn) == avx512, "64x48 mxfp8 rn");
    CHECK(qp_qdq_cols_direct(QP_FMT_MXFP4_RCEIL, 1024, 256, 0, &rn) == avx512, "1024x256 mxfp4-rceil rn");
    CHECK(!qp_qdq_cols_direct(QP_FMT_MXFP8, 48, 64, 0, &rn), "mxfp8: rows not a multiple of 32");
    CHECK(!qp_qdq_cols_direct(QP_FMT_MXFP8, 64, 64, 16, &rn), "mxfp8: a rotation");
    CHECK(!qp_qdq_cols_direct(QP_FMT_MXFP4, 64, 64, 0, &sr4), "mxfp4: stochastic rounding");
    CHECK(!qp_qdq_cols_direct(QP_FMT_NVFP4_2D, 64, 64, 0, &rn), "2D tiles");
    CHECK(!qp_qdq_cols_direct(QP_FMT_NVFP4_4O6, 64, 64, 0, &rn), "Four Over Six");
    const qp_qopts scaled = {.unscaled = false};
    CHECK(!qp_qdq_cols_direct(QP_FMT_NVFP4, 64, 64, 0, &scaled), "scaled values");

    /* shapes of the direct path (llm.c small's weight-gradient operands
     * among them) and of the fallback */
    static const int64_t shapes[][2] = {{16, 16}, {64, 48}, {128, 256}, {1024, 256}, {512, 1024}, {48, 80}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int rht = 0; rht <= 16; rht += 16)
            for (int sr = 0; sr < 2; sr++)
                for (int kind = 0; kind < DATA_COUNT; kind++)
                    check_case(QP_FMT_NVFP4, shapes[s][0], shapes[s][1], rht, sr, kind, 0.0f, 0, 1 + (kind & 1));
    /* MX: every element codec and both scale rules, bands of 32 rows (the
     * same shapes but 48 x 80, which is not one, and 32 x 16, one tile) */
    static const qp_fmt mx[] = {QP_FMT_MXFP8,       QP_FMT_MXFP8_E5M2,  QP_FMT_MXFP4,      QP_FMT_MXFP8_RCEIL,
                                QP_FMT_MXFP4_RCEIL, QP_FMT_MXFP6_E2M3, QP_FMT_MXFP6_E3M2};
    static const int64_t mx_shapes[][2] = {{32, 16}, {64, 48}, {128, 256}, {1024, 256}, {96, 80}};
    for (size_t f = 0; f < sizeof mx / sizeof *mx; f++)
        for (size_t s = 0; s < sizeof mx_shapes / sizeof *mx_shapes; s++)
            for (int kind = 0; kind < DATA_COUNT; kind++)
                check_case(mx[f], mx_shapes[s][0], mx_shapes[s][1], 0, 0, kind, 0.0f, 0, 1 + (kind & 1));
    check_case(QP_FMT_MXFP8, 512, 1024, 0, 0, DATA_WIDE, 0.0f, 0, 3);
    /* a caller's tensor scale (delayed scaling), SR offsets and strides of a slice, many threads */
    check_case(QP_FMT_NVFP4, 256, 128, 16, 1, DATA_NORMAL, 37.5f, 4096, 2);
    check_case(QP_FMT_NVFP4, 256, 128, 16, 1, DATA_NORMAL, 0.0f, 8, 3);
    check_case(QP_FMT_NVFP4, 256, 128, 16, 1, DATA_WIDE, 0.0f, 2, 2); /* off a multiple of 4: the fallback */
    /* SR words off a multiple of 16: a lane's sixteen elements straddle two
     * Philox counters, at every offset within one (stride / 4 odd) */
    check_case_strided(QP_FMT_NVFP4, 256, 128, 16, 1, DATA_NORMAL, 0.0f, 4, 260, 2);
    check_case_strided(QP_FMT_NVFP4, 64, 48, 0, 1, DATA_WIDE, 0.0f, 12, 68, 1);
    check_case_strided(QP_FMT_NVFP4, 64, 48, 0, 1, DATA_NORMAL, 0.0f, 32, 64, 1);
    check_case(QP_FMT_NVFP4, 1024, 256, 16, 1, DATA_NORMAL, 0.0f, 0, 4);
    /* what the direct path does not take, through the fallback */
    check_case(QP_FMT_NVFP4, 96, 40, 32, 0, DATA_NORMAL, 0.0f, 0, 2);
    check_case(QP_FMT_NVFP4, 40, 24, 0, 1, DATA_WIDE, 0.0f, 0, 2);
    check_case(QP_FMT_MXFP4, 64, 64, 16, 1, DATA_NORMAL, 0.0f, 0, 2);
    check_case(QP_FMT_MXFP8, 64, 64, 0, 1, DATA_NORMAL, 0.0f, 0, 2);
    check_case(QP_FMT_MXFP8, 48, 64, 0, 0, DATA_WIDE, 0.0f, 0, 2);
    check_case(QP_FMT_NVFP4_4O6, 64, 64, 16, 0, DATA_NORMAL, 0.0f, 0, 2);
    CHECK(zero_scale_blocks > 0, "the tiny-columns data made no block whose scale decodes to 0");

    /* bad arguments: -1 and nothing written */
    float x[256] = {0};
    uint16_t y[256];
    memset(y, 0x5A, sizeof y);
    qp_qstats st;
    CHECK(qp_qdq_bf16_cols((qp_fmt)-1, x, y, 16, 16, 0, 0, &rn, &st) == -1, "unknown format");
    CHECK(qp_qdq_bf16_cols(QP_FMT_FP32, x, y, 16, 16, 0, 0, &rn, &st) == -1, "fp32 is not exact in BF16");
    CHECK(qp_qdq_bf16_cols(QP_FMT_NVFP4, x, y, 16, 16, 0, 0, &scaled, &st) == -1, "without unscaled");
    CHECK(qp_qdq_bf16_cols(QP_FMT_NVFP4, x, y, 16, 16, 0, 0, NULL, &st) == -1, "no options");
    CHECK(qp_qdq_bf16_cols(QP_FMT_NVFP4, x, y, 16, 16, 8, 0, &rn, &st) == -1, "an 8-point rotation");
    CHECK(qp_qdq_bf16_cols(QP_FMT_NVFP4, x, y, 8, 32, 16, 0, &rn, &st) == -1, "rows not a multiple of the rotation");
    CHECK(qp_qdq_bf16_cols(QP_FMT_NVFP4, x, y, -16, 16, 0, 0, &rn, &st) == -1, "a negative shape");
    float yf[256];
    CHECK(qp_qdq_cols(QP_FMT_FP32, x, yf, 16, 16, 0, 0, &rn, &st) == -1, "floats: fp32 is not exact in BF16");
    CHECK(qp_qdq_cols(QP_FMT_NVFP4, x, yf, 16, 16, 0, 0, &scaled, &st) == -1, "floats: without unscaled");
    CHECK(qp_qdq_cols(QP_FMT_NVFP4, x, yf, 8, 32, 16, 0, &rn, &st) == -1, "floats: rows not a multiple of the rotation");
    int untouched = 1;
    for (int i = 0; i < 256; i++) untouched &= y[i] == 0x5A5A;
    CHECK(untouched, "a refused call wrote y");
    if (!avx512) printf("test_quant_cols: no AVX-512 here: only the transposed path was checked\n");
    return qp_test_finish("test_quant_cols");
}
