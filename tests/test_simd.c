/* test_simd.c — the vector path (qp_quantize / qp_qdq / qp_amax) against the
 * scalar reference, bit for bit, for every format of the table: codes,
 * scales, tensor scale, statistics and decoded values, on random data and on
 * adversarial inputs — rounding ties, float and target subnormals, block
 * maxima at the scale boundaries, NaN/Inf (dense, and sparse so that finite
 * and non-finite blocks sit side by side), zeros, values near FLT_MAX, small
 * grids where Four Over Six's two errors tie, ragged shapes, and tensors
 * large enough for streaming stores (aligned and not). ctest runs it twice:
 * as the CPU allows, and with QP_SIMD=avx512-nobf16 (BF16 without
 * vcvtne2ps2bf16). On a CPU without a vector path it says so and checks the
 * reference against itself only. */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>

#include "qp_format.h"
#include "qp_quant.h"
#include "qp_test.h"

enum { RANDOM, TIES, SUBNORMAL, BOUNDARY, SPECIAL, SPARSE, HUGE, GRID, TINY, NKINDS };
static const char *kind_names[NKINDS] = {"random", "ties", "subnormal", "boundary", "special", "sparse", "huge", "grid",
                                         "tiny"};

/* Values that sit exactly on rounding midpoints of every element grid after
 * any power-of-two scale: (2k+1)/2 ulps at assorted binades. */
static float tie_value(unsigned long long *s)
{
    const int mbits = 1 + (int)(qp_test_next(s) % 7);           /* 1..7 mantissa bits */
    const int e = (int)(qp_test_next(s) % 40) - 20;
    const uint32_t m = (uint32_t)(qp_test_next(s) % (1u << mbits));
    const float v = ldexpf((float)((1u << mbits) + m) + 0.5f, e - mbits);
    return qp_test_next(s) & 1 ? -v : v;
}

static void fill(float *x, int64_t n, int kind, unsigned long long seed)
{
    unsigned long long s = seed;
    for (int64_t i = 0; i < n; i++) {
        const float g = qp_test_normal(&s);
        switch (kind) {
        case RANDOM: x[i] = g * (i % 13 == 0 ? 30.0f : 1.0f); break;
        case TIES: x[i] = tie_value(&s); break;
        case SUBNORMAL: {
            const uint32_t r = (uint32_t)qp_test_next(&s);
            /* float32 subnormals, and values around the targets' subnormal ranges */
            x[i] = (r & 3) == 0 ? qp_bits_f32(r & 0x807FFFFFu) : g * ldexpf(1.0f, -(int)(r % 30) - 5);
            /* whole blocks of float32 subnormals: their amax is subnormal too */
            if ((i / 32) % 3 == 1) x[i] = qp_bits_f32(r & (0x800FFFFFu >> (r % 8)));
            break;
        }
        case BOUNDARY: {
            /* Block maxima at powers of two and just below them, and at the
             * element maxima times a power of two (the MX saturation edge). */
            static const float edges[] = {1.0f, 0.99999994f, 448.0f, 447.99997f, 6.0f, 5.9999995f, 3.5f,
                                          1.75f, 57344.0f, 0.75f, 2688.0f, 464.0f};
            const float e = edges[qp_test_next(&s) % (sizeof edges / sizeof edges[0])];
            x[i] = ldexpf(e, (int)(qp_test_next(&s) % 21) - 10) * (g < 0 ? -1.0f : 1.0f);
            if (i % 3) x[i] *= 0.25f * g;
            break;
        }
        case SPECIAL: {
            static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, FLT_MIN,
                                             1e-45f, 1.0f};
            x[i] = (qp_test_next(&s) % 8 == 0) ? specials[qp_test_next(&s) % 10] : g;
            if (i % 97 == 0) x[i] = 0.0f;
            break;
        }
        case SPARSE: {
            /* mostly finite blocks, a few holding one NaN or Inf, runs of zeros */
            const unsigned long long r = qp_test_next(&s) % 700;
            x[i] = r == 0 ? NAN : r == 1 ? -INFINITY : r == 2 ? INFINITY : (i / 40) % 9 == 4 ? 0.0f : g;
            break;
        }
        case HUGE:
            /* magnitudes near FLT_MAX (BF16 rounding to Inf, scaled values overflowing) and tiny ones */
            x[i] = (qp_test_next(&s) % 3 ? FLT_MAX / ldexpf(1.0f, (int)(qp_test_next(&s) % 12)) : 1e-30f) *
                   (g < 0 ? -1.0f : 1.0f) * (1.0f - 1e-3f * (float)(qp_test_next(&s) % 256));
            break;
        case TINY:
            /* a tensor of float32 subnormals only: its scale saturates, and NVFP4's block
             * encode scales 1 / (d_b * S_inv) overflow to their FLT_MAX clamp */
        {
            const uint32_t r = (uint32_t)qp_test_next(&s);
            x[i] = qp_bits_f32((r & 0x80000000u) | ((r & 0x007FFFFFu) >> (i % 9)));
        }
            break;
        default:
            /* small multiples of powers of two, whole blocks constant now and then: the two
             * candidates of Four Over Six often give exactly equal errors */
            x[i] = (float)((int)(qp_test_next(&s) % 13) - 6) * ldexpf(1.0f, (int)(qp_test_next(&s) % 3) - 1);
            if ((i / 16) % 5 == 2) x[i] = x[i - i % 16];
            break;
        }
    }
    if (kind == SPECIAL && n >= 64)
        for (int64_t i = 0; i < 32; i++) x[i] = 0.0f; /* a whole zero block */
}

static int same_floats(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!qp_same_float(a[i], b[i])) return 0;
    return 1;
}

static void compare(qp_fmt f, const float *x, int64_t rows, int64_t cols, const qp_qopts *o, const char *what)
{
    const int64_t n = rows * cols;
    qp_qtensor a, b;
    qp_qtensor_alloc(&a, f, rows, cols);
    qp_qtensor_alloc(&b, f, rows, cols);
    qp_qstats sa, sb;
    qp_quantize(x, &a, o, &sa);
    qp_quantize_ref(x, &b, o, &sb);
    const char *name = qp_formats[f].name;
    CHECK(memcmp(a.codes, b.codes, (size_t)(rows * a.row_bytes)) == 0, "%s %s %lldx%lld: codes differ", name, what,
          (long long)rows, (long long)cols);
    CHECK(!a.scales || memcmp(a.scales, b.scales, (size_t)(a.scale_rows * a.scale_cols)) == 0,
          "%s %s: scales differ", name, what);
    CHECK(qp_same_float(a.scale_inv, b.scale_inv), "%s %s: tensor scale differs", name, what);
    CHECK(memcmp(&sa, &sb, sizeof sa) == 0, "%s %s: stats differ (sat %lld/%lld flushed %lld/%lld)", name, what,
          (long long)sa.n_sat, (long long)sb.n_sat, (long long)sa.n_flushed, (long long)sb.n_flushed);
    float *ya = malloc((size_t)n * 4 + 4), *yb = malloc((size_t)n * 4 + 4);
    qp_qdq(f, x, ya, rows, cols, o, &sa);
    qp_qdq_ref(f, x, yb, rows, cols, o, &sb);
    CHECK(same_floats(ya, yb, n), "%s %s: qdq values differ", name, what);
    CHECK(memcmp(&sa, &sb, sizeof sa) == 0, "%s %s: qdq stats differ", name, what);
    /* BF16 output: the high halves of the unscaled values, vector and scalar */
    qp_qopts u = o ? *o : (qp_qopts){0};
    u.unscaled = true;
    uint16_t *ha = malloc((size_t)n * 2 + 2), *hb = malloc((size_t)n * 2 + 2);
    qp_qstats sc;
    const int rca = qp_qdq_bf16(f, x, ha, rows, cols, &u, &sa), rcb = qp_qdq_bf16_ref(f, x, hb, rows, cols, &u, &sb);
    if (!qp_formats[f].unscaled_exact) {
        CHECK(rca == -1 && rcb == -1, "%s %s: BF16 output of a format whose values are not BF16", name, what);
    } else {
        qp_qdq(f, x, ya, rows, cols, &u, &sc);
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (ha[i] != (uint16_t)(qp_f32_bits(ya[i]) >> 16) || hb[i] != ha[i]) bad = i;
        CHECK(rca == 0 && rcb == 0 && bad < 0, "%s %s: BF16 output differs at %lld", name, what, (long long)bad);
        CHECK(memcmp(&sa, &sc, sizeof sa) == 0 && memcmp(&sb, &sc, sizeof sb) == 0, "%s %s: BF16 output stats differ",
              name, what);
    }
    u.unscaled = false;
    CHECK(qp_qdq_bf16(f, x, ha, rows, cols, &u, &sa) == -1, "%s %s: BF16 output of scaled values", name, what);
    free(ha), free(hb);
    free(ya), free(yb);
    qp_qtensor_free(&a), qp_qtensor_free(&b);
}

/* the largest finite |x|, as the docs define qp_amax */
static float finite_amax(const float *x, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabsf(x[i]) > m) m = fabsf(x[i]);
    return m;
}

/* qp_amax of a tensor long enough to be split among threads (chunks of 64k):
 * NaN and Inf in one chunk, the largest finite value in the partial last
 * one, then in the first; split from 1 element and from none. */
static void amax_split(void)
{
    const int64_t n = (1 << 20) + 37;
    float *x = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = (float)((i * 2654435761u) % 1000) * 0.001f - 0.5f;
    x[300000] = NAN, x[300001] = INFINITY, x[400000] = -INFINITY;
    const int64_t saved = qp_parallel_min();
    for (int place = 0; place < 2; place++) {
        x[place ? 5 : n - 3] = -7.25f;
        for (int split = 0; split < 2; split++) {
            qp_set_parallel_min(split ? 1 : INT64_MAX);
            CHECK(qp_same_float(qp_amax(x, n), 7.25f), "amax of %lld values, %s, the largest %s", (long long)n,
                  split ? "split among threads" : "one thread", place ? "first" : "in the last chunk");
        }
        x[place ? 5 : n - 3] = 0.0f;
    }
    qp_set_parallel_min(saved);
    free(x);
}

int main(void)
{
    amax_split();
    printf("vector path: %s\n", qp_simd_name());
    if (strcmp(qp_simd_name(), "scalar") == 0) printf("note: no vector path on this CPU; reference vs itself\n");
    const int64_t shapes[][2] = {{1, 1}, {1, 15}, {1, 17}, {3, 31}, {2, 33}, {5, 48}, {17, 100}, {33, 64},
                                 {16, 257}, {64, 1024}, {130, 300}, {2, 4160}};
    for (int kind = 0; kind < NKINDS; kind++)
        for (unsigned s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
            float *x = malloc((size_t)n * 4);
            fill(x, n, kind, 1000 + 17 * s + kind);
            CHECK(qp_same_float(qp_amax(x, n), finite_amax(x, n)), "amax of %lld values (%s)", (long long)n,
                  kind_names[kind]);
            for (int f = 0; f < QP_FMT_COUNT; f++) {
                compare((qp_fmt)f, x, rows, cols, NULL, kind_names[kind]);
                if (qp_formats[f].tensor_scale) {
                    /* Delayed scaling: a caller's scale, both too small and too large. */
                    qp_qopts lo = {.scale = 0.37f}, hi = {.scale = 3.0e4f};
                    compare((qp_fmt)f, x, rows, cols, &lo, "given-scale-small");
                    compare((qp_fmt)f, x, rows, cols, &hi, "given-scale-large");
                }
                qp_qopts sr = {.stochastic = true, .seed = 9, .stream = 4};
                compare((qp_fmt)f, x, rows, cols, &sr, "stochastic");
                /* A slice of a bigger tensor: rows start at unaligned word indices. */
                qp_qopts slice = {.stochastic = true, .seed = 9, .stream = 4, .sr_offset = 5 + 16 * s,
                                  .sr_row_stride = cols + 3};
                compare((qp_fmt)f, x, rows, cols, &slice, "stochastic-slice");
            }
            free(x);
        }
    /* Tensors of 32 MiB and more are written with streaming stores: aligned
     * rows, and output rows that are not 64-byte aligned (y one float in). */
    {
        const int64_t rows = 2048, cols = 4096, n = rows * cols;
        float *x = malloc((size_t)n * 4);
        fill(x, n, SPARSE, 77);
        static const qp_fmt big[] = {QP_FMT_BF16, QP_FMT_FP8_E4M3, QP_FMT_MXFP4, QP_FMT_NVFP4, QP_FMT_FP8_BLOCK_2D};
        for (unsigned f = 0; f < sizeof big / sizeof big[0]; f++) compare(big[f], x, rows, cols, NULL, "large");
        qp_qopts sr = {.stochastic = true, .seed = 3, .stream = 1};
        compare(QP_FMT_MXFP8_E5M2, x, rows, cols, &sr, "large-stochastic");
        float *ya = malloc((size_t)n * 4 + 64), *yb = malloc((size_t)n * 4 + 64);
        qp_qstats sa, sb;
        qp_qdq(QP_FMT_MXFP8, x, ya + 1, rows, cols, NULL, &sa);
        qp_qdq_ref(QP_FMT_MXFP8, x, yb, rows, cols, NULL, &sb);
        CHECK(same_floats(ya + 1, yb, n) && memcmp(&sa, &sb, sizeof sa) == 0, "mxfp8 large, unaligned output");
        free(ya), free(yb), free(x);
    }

    /* Per-tensor ties with scale 1: the exact midpoints of the FP8 grids. */
    float ties[512];
    for (int i = 0; i < 256; i++) {
        const float a = qp_e4m3_to_f32((uint8_t)i), b = qp_e4m3_to_f32((uint8_t)(i + 1));
        ties[i] = (isfinite(a) && isfinite(b) && (i & 0x7F) < 0x7E) ? 0.5f * (a + b) : 1.0f;
        const float c = qp_e5m2_to_f32((uint8_t)i), d = qp_e5m2_to_f32((uint8_t)(i + 1));
        ties[256 + i] = (isfinite(c) && isfinite(d) && (i & 0x7F) < 0x7B) ? 0.5f * (c + d) : 1.0f;
    }
    qp_qopts one = {.scale = 1.0f};
    compare(QP_FMT_FP8_E4M3, ties, 1, 256, &one, "grid-midpoints");
    compare(QP_FMT_FP8_E5M2, ties + 256, 1, 256, &one, "grid-midpoints");
    compare(QP_FMT_FP8_E4M3, ties, 2, 256, &one, "grid-midpoints-both");
    return qp_test_finish("test_simd");
}
