/* test_qcore.c — the CUDA kernels' work split (kernels/qp_cuda_qcore.h: which
 * thread owns which elements, codes and scale, and the per-thread block and
 * tile assembly built on quant/qp_core.h) against quant/, bit for bit, on the
 * CPU: no GPU or nvcc needed.
 *
 * 1. (nvcc build, test_qcore_nvcc, only) qp_core.h as nvcc compiles it — the
 *    translation the kernels' host side sees — against the same rules as gcc
 *    compiled them into libqpquant: every codec on a dense sweep of float bit
 *    patterns (RN, and SR with random words), every decoder on every code,
 *    Philox and the SR word. In the gcc build both sides would be the same
 *    compilation of the same code, so the section is left out there.
 * 2. The format table: qp_format(f), the switch the device evaluates, agrees
 *    with qp_formats[f] for every f; an unknown value gives the "unknown" row.
 * 3. Whole tensors: a driver that walks a tensor exactly as the kernels do
 *    (per-tensor formats in chunks of 16 elements of a row, 1D formats one block
 *    at a time — 128-element blocks in register chunks of 32 — 2D formats one
 *    tile at a time, the tile amax reduced over its rows, global index
 *    sr_offset + r*sr_row_stride + c for SR) is compared with qp_quantize
 *    (codes, scales, scale_inv, statistics) and qp_qdq (values, scaled and
 *    unscaled, and their BF16 bits) for every format in qp_formats[], RN and
 *    SR, current and given scales, on random and adversarial data and ragged
 *    shapes; SR with row offsets and strides (qp_qopts.sr_offset/sr_row_stride,
 *    the data-parallel slices) too, and a driver given a wrong stride must
 *    differ.
 * 4. RHT: qp_rht_vec (what rht_kernel runs) over every n-vector against
 *    qp_rht (quant/'s AVX-512 or scalar loop), n = 16, 32, 64, 128; and
 *    qp_rht_te_vec (what rht_kernel<16, true> runs) against quant/'s
 *    qp_rht16_te, Transformer Engine's fixed-sign transform, on every input
 *    kind (under nvcc: as CUDA C++ sees it). */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>

#include "qp_cuda_qcore.h"
#include "qp_format.h"
#include "qp_hadamard.h"
#include "qp_quant.h"
#include "qp_rng.h"
#include "qp_test.h"
#include "qc_testdata.h"

/* ---- 1. codecs (nvcc build) ----------------------------------------------- */

#ifdef __CUDACC__
static void test_codecs(void)
{
    unsigned long long s = 99;
    int64_t bad[QP_ELEM_COUNT][2] = {{0}}, sbad = 0;
    /* every pattern of the top 20 bits with assorted low 12 bits: all
     * exponents, signs, NaN/Inf, subnormals, and the rounding-relevant bits */
    static const uint32_t lows[] = {0x000, 0x001, 0x7FF, 0x800, 0x801, 0xFFF, 0x400, 0x3FF};
    for (uint32_t hi = 0; hi < (1u << 20); hi++) {
        for (unsigned k = 0; k < sizeof lows / sizeof lows[0] + 1; k++) {
            const uint32_t low = k < sizeof lows / sizeof lows[0] ? lows[k] : (uint32_t)qp_test_next(&s) & 0xFFF;
            const float x = qp_bits_f32(hi << 12 | low);
            const uint32_t r = (uint32_t)qp_test_next(&s);
            for (int e = 0; e < QP_ELEM_COUNT; e++)
                for (int sr = 0; sr < 2; sr++)
                    bad[e][sr] += qp_encode_elem((qp_elem)e, x, sr, r) != qp_lib_encode_elem((qp_elem)e, x, sr, r);
            sbad += qp_f32_to_ue4m3(x) != qp_lib_scale_code(QP_SCALE_UE4M3, x, 0);
            sbad += qp_f32_to_e8m0(x) != qp_lib_scale_code(QP_SCALE_E8M0, x, 0);
            sbad += qp_f32_to_e8m0_ceil(x) != qp_lib_scale_code(QP_SCALE_E8M0, x, 1);
            if (qp_isfinitef(x) && x != 0.0f) sbad += qp_floor_log2(x) != qp_lib_floor_log2(x);
        }
    }
    for (int e = 0; e < QP_ELEM_COUNT; e++)
        CHECK(bad[e][0] == 0 && bad[e][1] == 0, "encoder %d: %lld RN / %lld SR mismatches", e, (long long)bad[e][0],
              (long long)bad[e][1]);
    CHECK(sbad == 0, "scale encoders / floor_log2: %lld mismatches", (long long)sbad);

    int dbad = 0;
    for (uint32_t c = 0; c < 65536; c++)
        for (int e = 0; e < QP_ELEM_COUNT; e++) {
            if (e == QP_ELEM_F32) continue;
            if (e != QP_ELEM_BF16 && c > 255) continue;
            dbad += !qp_same_float(qp_decode_elem((qp_elem)e, c), qp_lib_decode_elem((qp_elem)e, c));
        }
    for (int c = 0; c < 256; c++) {
        dbad += !qp_same_float(qp_ue4m3_to_f32((uint8_t)c), qp_lib_scale_value(QP_SCALE_UE4M3, (uint8_t)c));
        dbad += !qp_same_float(qp_e8m0_to_f32((uint8_t)c), qp_lib_scale_value(QP_SCALE_E8M0, (uint8_t)c));
    }
    CHECK(dbad == 0, "decoders: %d mismatches", dbad);

    int rbad = 0;
    for (int i = 0; i < 2000; i++) {
        const uint64_t seed = qp_test_next(&s), stream = i % 7 == 0 ? 0 : qp_test_next(&s);
        const uint64_t i0 = i % 2 ? (uint64_t)i : qp_test_next(&s) >> 2;
        qp_rng_run g;
        qp_rng_run_init(&g, seed, stream);
        for (uint64_t k = i0; k < i0 + 9; k++) rbad += qp_rng_run_word(&g, k) != qp_lib_rng_u32(seed, stream, k);
    }
    CHECK(rbad == 0, "philox / SR words: %d mismatches", rbad);
}
#endif

/* ---- 2. format table -------------------------------------------------------- */

static void test_format_table(void)
{
    for (int f = 0; f < QP_FMT_COUNT; f++) {
        const qp_format_traits *t = &qp_formats[f];
        const qp_format_traits q = qp_format(f);
        CHECK(q.fmt == t->fmt && !strcmp(q.name, t->name) && q.elem == t->elem && q.elem_bits == t->elem_bits &&
                  q.elem_max == t->elem_max && q.elem_emax == t->elem_emax && q.block_rows == t->block_rows &&
                  q.block_cols == t->block_cols && q.block_scale == t->block_scale && q.rule == t->rule &&
                  q.scale_bytes == t->scale_bytes && q.tensor_scale == t->tensor_scale &&
                  q.tensor_range == t->tensor_range && q.unscaled_exact == t->unscaled_exact,
              "qp_format(%s) differs from qp_formats[]", t->name);
        CHECK(q.tensor_range == qp_tensor_scale_range((qp_fmt)f), "%s: tensor scale range", t->name);
    }
    static const int unknown[] = {-1, QP_FMT_COUNT, QP_FMT_COUNT + 7, 1 << 30};
    for (int i = 0; i < 4; i++) {
        const qp_format_traits q = qp_format(unknown[i]);
        CHECK(q.fmt == QP_FMT_COUNT && q.block_cols == 0 && !qp_fmt_valid(unknown[i]), "qp_format(%d): unknown row",
              unknown[i]);
    }
}

/* ---- 3. whole tensors ----------------------------------------------------- */

typedef struct {
    float amax, scale, scale_inv;
    qp_ecounts cnt;
} drv_stats;

/* A 128-element block row as the kernels encode it (encode_chunks): in
 * register chunks of 32 under the block's scale. */
static void encode_chunked(const qp_format_traits *f, const qp_tplan *p, const float *x, int m, int bc,
                           const qp_bscale *bs, uint64_t g0, uint8_t *codes, float *y, qp_ecounts *cnt)
{
    for (int k0 = 0; k0 < bc; k0 += 32) {
        const int mk = m - k0 >= 32 ? 32 : m - k0 > 0 ? m - k0 : 0; /* chunks past m: padding codes 0 */
        uint8_t c[32];
        float yy[32];
        qc_encode_block(f, p, x + k0, mk, 32, bs, g0 + (uint64_t)k0, c, yy, cnt);
        if (codes) memcpy(codes + k0, c, 32); /* one byte per element: FP8 blocks */
        if (y) memcpy(y + k0, yy, (size_t)mk * sizeof(float));
    }
}

/* Quantize as the kernels split the work (qc_*_job: which thread owns which
 * elements, codes and scale), sequentially. given > 0: that tensor scale. */
static void qcore_quantize(qp_fmt fmt, const float *x, int64_t rows, int64_t cols, float given, int sr,
                           uint64_t seed, uint64_t stream, int64_t sr_off, int64_t sr_stride, int unscaled,
                           uint8_t *codes, uint8_t *scales, float *y, drv_stats *st)
{
    const qp_format_traits f = qp_format(fmt);
    const int64_t n = rows * cols;
    /* the amax pass (max over finite |x|; any grouping gives the same max) */
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i += 37) {
        float a;
        int nf;
        qc_block_amax(x + i, (int)(n - i < 37 ? n - i : 37), &a, &nf);
        if (a > amax) amax = a;
    }
    qp_tplan p = qc_make_plan(&f, given, amax, unscaled, sr, seed, stream);
    qc_plan_sr_map(&p, sr_off, sr_stride);
    st->amax = amax;
    st->scale = p.scale;
    st->scale_inv = p.scale_inv;
    qc_counts_zero(&st->cnt);
    const int64_t row_bytes = qp_row_bytes(fmt, cols);
    int64_t srows, scols;
    qp_scale_shape(fmt, rows, cols, &srows, &scols);
    qc_job j;
    if (f.block_cols == 1) {
        /* tensor_kernel: one thread per 16 elements of a row */
        int64_t t = 0;
        for (; qc_tensor_job(&f, rows, cols, t, &j); t++)
            qc_encode_block(&f, &p, x + j.x_off, j.m, j.m, NULL, qc_sr_gidx(&p, cols, j.row, j.col),
                            codes ? codes + j.code_off : NULL, y ? y + j.x_off : NULL, &st->cnt);
        CHECK(t == qc_tensor_jobs(rows, cols), "qc_tensor_jobs");
    } else if (f.block_rows == 1) {
        /* block_kernel: one thread per block */
        for (int64_t t = 0; qc_block_job(&f, rows, cols, row_bytes, scols, t, &j); t++) {
            qp_bscale bs;
            const uint64_t g0 = qc_sr_gidx(&p, cols, j.row, j.col);
            if (f.block_cols > 32) {
                float a;
                int nf;
                qc_block_amax_pad(x + j.x_off, j.m, f.block_cols, &a, &nf);
                bs = qc_block_scale(&f, &p, a, nf, x + j.x_off, j.m);
                encode_chunked(&f, &p, x + j.x_off, j.m, f.block_cols, &bs, g0, codes ? codes + j.code_off : NULL,
                               y ? y + j.x_off : NULL, &st->cnt);
            } else {
                qc_quantize_block(&f, &p, x + j.x_off, j.m, g0, codes ? codes + j.code_off : NULL, &bs,
                                  y ? y + j.x_off : NULL, &st->cnt);
            }
            if (scales) qc_store_scale(&f, scales, j.scale_idx, &bs);
        }
    } else {
        /* tile16_kernel / tile128_kernel: one thread per tile row, the tile
         * amax reduced over them */
        const int side = f.block_rows;
        for (int64_t t0 = 0; t0 < srows * scols * side; t0 += side) {
            qc_job jl[128];
            int live[128];
            float ta = 0.0f;
            for (int l = 0; l < side; l++) {
                live[l] = qc_tile_job(&f, rows, cols, row_bytes, srows, scols, t0 + l, &jl[l]);
                if (!live[l]) continue;
                float a;
                int nf;
                qc_block_amax_pad(x + jl[l].x_off, jl[l].m, f.block_cols, &a, &nf);
                if (a > ta) ta = a;
            }
            const qp_bscale bs = qc_block_scale(&f, &p, ta, 0, NULL, 0);
            for (int l = 0; l < side; l++) {
                if (!live[l]) continue;
                const uint64_t g0 = qc_sr_gidx(&p, cols, jl[l].row, jl[l].col);
                uint8_t *cp = codes ? codes + jl[l].code_off : NULL;
                float *yp = y ? y + jl[l].x_off : NULL;
                if (side == 16) qc_encode_block(&f, &p, x + jl[l].x_off, jl[l].m, 16, &bs, g0, cp, yp, &st->cnt);
                else encode_chunked(&f, &p, x + jl[l].x_off, jl[l].m, f.block_cols, &bs, g0, cp, yp, &st->cnt);
                if (scales && jl[l].lane == 0) qc_store_scale(&f, scales, jl[l].scale_idx, &bs);
            }
        }
        /* the reference for the same split: qc_quantize_tile per tile */
        if (codes && scales) {
            const int64_t nb = rows * row_bytes, ns = srows * scols * f.scale_bytes;
            uint8_t *c2 = (uint8_t *)calloc((size_t)nb + 1, 1), *s2 = (uint8_t *)calloc((size_t)ns + 1, 1);
            qp_ecounts cnt2;
            qc_counts_zero(&cnt2);
            for (int64_t tr = 0; tr < srows; tr++)
                for (int64_t tc = 0; tc < scols; tc++) {
                    const int64_t r0 = tr * side, c0 = tc * f.block_cols;
                    const int nr = (int)(rows - r0 < side ? rows - r0 : side),
                              nc = (int)(cols - c0 < f.block_cols ? cols - c0 : f.block_cols);
                    qp_bscale bs;
                    qc_quantize_tile(&f, &p, x + r0 * cols + c0, cols, nr, nc, qc_sr_gidx(&p, cols, r0, c0),
                                     sr_stride > 0 ? (uint64_t)sr_stride : (uint64_t)cols,
                                     c2 + r0 * row_bytes + c0 * f.elem_bits / 8, row_bytes, &bs, NULL, &cnt2);
                    qc_store_scale(&f, s2, tr * scols + tc, &bs);
                }
            CHECK(memcmp(c2, codes, (size_t)nb) == 0 && memcmp(s2, scales, (size_t)ns) == 0,
                  "%s: qc_quantize_tile differs from the tile-kernel split", f.name);
            free(c2);
            free(s2);
        }
    }
}

static int same_bits(const void *a, const void *b, size_t n) { return n == 0 || memcmp(a, b, n) == 0; }

static int64_t first_diff_f(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!same_bits(&a[i], &b[i], 4)) return i;
    return -1;
}

static void one_case(qp_fmt fmt, const float *x, int64_t rows, int64_t cols, const qp_qopts *o, const char *what)
{
    const char *name = qp_formats[fmt].name;
    /* TE's Four Over Six on 16x16 tiles: quant/ only (the device's tile
     * threads see one row each; qp_cuda_quantize refuses these formats) */
    if (qp_rule_is_4o6_te(qp_formats[fmt].rule) && qp_formats[fmt].block_rows > 1) return;
    /* a scale per row (nvfp4-row): quant/ only, qp_cuda_quantize refuses it */
    if (qp_formats[fmt].row_scaled) return;
    /* and TE's NaN/Inf tensor amax (a NaN makes every scale NaN): quant/'s only */
    if (qp_rule_is_4o6_te(qp_formats[fmt].rule))
        for (int64_t i = 0; i < rows * cols; i++)
            if (!qp_isfinitef(x[i])) return;
    const int64_t n = rows * cols;
    qp_qtensor q;
    if (qp_qtensor_alloc(&q, fmt, rows, cols)) abort();
    qp_qstats ref;
    qp_quantize(x, &q, o, &ref);
    const size_t cbytes = (size_t)(rows * q.row_bytes),
                 sbytes = (size_t)(q.scale_rows * q.scale_cols * qp_formats[fmt].scale_bytes);
    uint8_t *codes = (uint8_t *)calloc(cbytes + 1, 1), *scales = (uint8_t *)calloc(sbytes + 1, 1);
    memset(codes, 0xA5, cbytes); /* every byte must be written, padding included */
    memset(scales, 0xA5, sbytes);
    drv_stats st;
    qcore_quantize(fmt, x, rows, cols, o->scale, o->stochastic, o->seed, o->stream, o->sr_offset, o->sr_row_stride,
                   0, codes, scales, NULL, &st);
    CHECK(same_bits(codes, q.codes, cbytes), "%s %s %lldx%lld: codes differ", name, what, (long long)rows,
          (long long)cols);
    CHECK(same_bits(scales, q.scales, sbytes), "%s %s %lldx%lld: block scales differ", name, what, (long long)rows,
          (long long)cols);
    CHECK(same_bits(&st.scale_inv, &q.scale_inv, 4) && same_bits(&st.scale, &ref.scale, 4) &&
              same_bits(&st.amax, &ref.amax, 4),
          "%s %s: amax/scale %g/%g/%g vs %g/%g/%g", name, what, st.amax, st.scale, st.scale_inv, ref.amax, ref.scale,
          q.scale_inv);
    CHECK(st.cnt.n_nonfinite == ref.n_nonfinite && st.cnt.n_nonzero == ref.n_nonzero && st.cnt.n_sat == ref.n_sat &&
              st.cnt.n_flushed == ref.n_flushed,
          "%s %s: counts nonfinite %u/%lld nonzero %u/%lld sat %u/%lld flushed %u/%lld", name, what,
          st.cnt.n_nonfinite, (long long)ref.n_nonfinite, st.cnt.n_nonzero, (long long)ref.n_nonzero, st.cnt.n_sat,
          (long long)ref.n_sat, st.cnt.n_flushed, (long long)ref.n_flushed);

    /* qdq, scaled and unscaled, and the BF16 bits of the values */
    float *y = (float *)malloc((size_t)n * sizeof *y + 4), *yr = (float *)malloc((size_t)n * sizeof *yr + 4);
    for (int unscaled = 0; unscaled < 2; unscaled++) {
        qp_qopts oo = *o;
        oo.unscaled = unscaled;
        qp_qdq(fmt, x, yr, rows, cols, &oo, NULL);
        drv_stats st2;
        qcore_quantize(fmt, x, rows, cols, o->scale, o->stochastic, o->seed, o->stream, o->sr_offset,
                       o->sr_row_stride, unscaled, NULL, NULL, y, &st2);
        const int64_t d = first_diff_f(y, yr, n);
        CHECK(d < 0, "%s %s unscaled=%d: qdq differs at %lld: %a vs %a (x=%a)", name, what, unscaled, (long long)d,
              d >= 0 ? y[d] : 0.0, d >= 0 ? yr[d] : 0.0, d >= 0 ? x[d] : 0.0);
        int64_t bb = 0;
        for (int64_t i = 0; i < n; i++) bb += qp_f32_to_bf16(y[i]) != qp_f32_to_bf16(yr[i]);
        CHECK(bb == 0, "%s %s: bf16 of qdq differs", name, what);
    }
    free(y);
    free(yr);
    free(codes);
    free(scales);
    qp_qtensor_free(&q);
}

static void test_tensors(void)
{
    static const int64_t shapes[][2] = {{1, 1},  {1, 7},   {3, 17},  {16, 16}, {17, 33},
                                        {33, 50}, {20, 64}, {5, 200}, {48, 96}, {31, 47}};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    unsigned long long s = 7;
    for (int kind = 0; kind < NKINDS; kind++)
        for (int si = 0; si < nshapes; si++) {
            const int64_t rows = shapes[si][0], cols = shapes[si][1], n = rows * cols;
            float *x = (float *)malloc((size_t)n * sizeof *x);
            fill(x, n, cols, kind, 1000 + 17 * (unsigned long long)kind + (unsigned long long)si);
            for (int fmt = 0; fmt < QP_FMT_COUNT; fmt++)
                for (int sr = 0; sr < 2; sr++)
                    for (int gi = 0; gi < 3; gi++) {
                        static const float given[] = {0.0f, 1.0f, 0.3f};
                        qp_qopts o;
                        memset(&o, 0, sizeof o);
                        o.stochastic = sr;
                        o.seed = qp_test_next(&s);
                        o.stream = gi == 2 ? qp_test_next(&s) : (uint64_t)si;
                        o.scale = given[gi];
                        if (gi == 2 && qp_formats[fmt].block_scale == QP_SCALE_UE4M3)
                            o.scale = 37.5f; /* a given NVFP4 global scale */
                        char what[96];
                        snprintf(what, sizeof what, "%s %s scale=%g", kind_names[kind], sr ? "SR" : "RN", o.scale);
                        one_case((qp_fmt)fmt, x, rows, cols, &o, what);
                    }
            free(x);
        }
}

/* A bigger tensor (several 16-row chunks of quant/'s driver, its threads;
 * whole and partial 128x128 blocks). */
static void test_large(void)
{
    const int64_t rows = 260, cols = 1000, n = rows * cols;
    float *x = (float *)malloc((size_t)n * sizeof *x);
    fill(x, n, cols, RANDOM, 4242);
    x[5] = NAN, x[1234] = INFINITY, x[77777] = -0.0f, x[99999] = 1e-42f, x[200001] = -INFINITY;
    for (int fmt = 0; fmt < QP_FMT_COUNT; fmt++)
        for (int sr = 0; sr < 2; sr++) {
            qp_qopts o;
            memset(&o, 0, sizeof o);
            o.stochastic = sr;
            o.seed = 0x1234567890ABCDEFull;
            o.stream = 0xFEDCBA0987654321ull;
            one_case((qp_fmt)fmt, x, rows, cols, &o, sr ? "large SR" : "large RN");
        }
    free(x);
}

/* NVFP4 block amaxes where amax*S/6 and amax*(S*(1/6)) (TE's order, quant/'s)
 * round to different UE4M3 scales: the block rule's float order must match. */
static void test_nvfp4_order(void)
{
    unsigned long long s = 31;
    const int64_t rows = 4, cols = 16 * 64, n = rows * cols;
    float *x = (float *)malloc((size_t)n * sizeof *x);
    int found = 0;
    for (int trial = 0; trial < 8; trial++) {
        const float S = (float)(1.0 + qp_test_uniform(&s) * 1000.0);
        for (int64_t b = 0; b < n / 16; b++) {
            float a = 0.0f;
            for (int tries = 0; tries < 100000; tries++) {
                /* an E4M3 midpoint (normal binades) divided back by S/6, nudged by a few ulps */
                const uint32_t m = (uint32_t)(qp_test_next(&s) % 8), e = (uint32_t)(qp_test_next(&s) % 14);
                const float tie = ldexpf(1.0f + (2.0f * (float)m + 1.0f) / 16.0f, (int)e - 6);
                float c = tie / (S / 6.0f);
                c = qp_bits_f32(qp_f32_bits(c) + (uint32_t)(qp_test_next(&s) % 5) - 2u);
                if (qp_f32_to_ue4m3(c * S / 6.0f) != qp_f32_to_ue4m3(c * (S * (1.0f / 6.0f)))) {
                    a = c;
                    break;
                }
            }
            found += a > 0.0f;
            for (int j = 0; j < 16; j++) x[b * 16 + j] = a * (j == (int)(b % 16) ? 1.0f : (float)j / 17.0f);
        }
        static const qp_fmt nv[] = {QP_FMT_NVFP4, QP_FMT_NVFP4_2D, QP_FMT_NVFP4_4O6};
        for (int k = 0; k < 3; k++) {
            const qp_fmt fmt = nv[k];
            qp_qopts o;
            memset(&o, 0, sizeof o);
            o.scale = S;
            one_case((qp_fmt)fmt, x, rows, cols, &o, "TE-order blocks");
        }
    }
    CHECK(found > 1000, "found only %d blocks where the two orders differ", found);
    free(x);
}

/* SR index maps: a row slice (offset = first row * cols), a column slice
 * (offset = first column, stride = the whole tensor's cols, as the wgrad
 * operands of a data-parallel rank), and arbitrary offset/stride pairs, for
 * every format; then the driver with the stride off by one must not give
 * quant/'s codes. */
static void test_sr_map(void)
{
    static const int64_t shapes[][2] = {{3, 17}, {17, 33}, {33, 50}, {20, 64}, {48, 96}};
    static const int64_t maps[][2] = {{0, 0}, {16 * 96, 0}, {48, 192}, {7, 101}, {123457, 4096}, {5, 17}};
    unsigned long long s = 77;
    for (int si = 0; si < 5; si++) {
        const int64_t rows = shapes[si][0], cols = shapes[si][1], n = rows * cols;
        float *x = (float *)malloc((size_t)n * sizeof *x);
        fill(x, n, cols, RANDOM, 5000 + (unsigned long long)si);
        for (int mi = 0; mi < 6; mi++)
            for (int fmt = 0; fmt < QP_FMT_COUNT; fmt++) {
                qp_qopts o;
                memset(&o, 0, sizeof o);
                o.stochastic = 1;
                o.seed = qp_test_next(&s);
                o.stream = qp_test_next(&s);
                o.sr_offset = maps[mi][0];
                o.sr_row_stride = maps[mi][1] && maps[mi][1] < cols ? cols + maps[mi][1] : maps[mi][1];
                char what[96];
                snprintf(what, sizeof what, "SR offset %lld stride %lld", (long long)o.sr_offset,
                         (long long)o.sr_row_stride);
                one_case((qp_fmt)fmt, x, rows, cols, &o, what);
            }
        /* a wrong stride (one more than the right one) must change the codes */
        for (int fmt = 0; fmt < QP_FMT_COUNT; fmt++) {
            if (fmt == QP_FMT_FP32 || rows < 2) continue;
            if ((qp_rule_is_4o6_te(qp_formats[fmt].rule) && qp_formats[fmt].block_rows > 1) || qp_formats[fmt].row_scaled)
                continue; /* one_case's */
            qp_qopts o;
            memset(&o, 0, sizeof o);
            o.stochastic = 1;
            o.seed = 11;
            o.stream = 12;
            o.sr_offset = 3 * cols;
            o.sr_row_stride = 2 * cols;
            qp_qtensor q;
            if (qp_qtensor_alloc(&q, (qp_fmt)fmt, rows, cols)) abort();
            qp_quantize(x, &q, &o, NULL);
            const size_t cbytes = (size_t)(rows * q.row_bytes);
            uint8_t *codes = (uint8_t *)calloc(cbytes + 1, 1),
                    *scales = (uint8_t *)calloc((size_t)(q.scale_rows * q.scale_cols * qp_formats[fmt].scale_bytes) + 1, 1);
            drv_stats st;
            qcore_quantize((qp_fmt)fmt, x, rows, cols, 0.0f, 1, 11, 12, 3 * cols, 2 * cols + 1, 0, codes, scales, NULL,
                           &st);
            CHECK(!same_bits(codes, q.codes, cbytes), "%s: a wrong SR stride gave quant/'s codes", qp_formats[fmt].name);
            qcore_quantize((qp_fmt)fmt, x, rows, cols, 0.0f, 1, 11, 12, 3 * cols, 2 * cols, 0, codes, scales, NULL, &st);
            CHECK(same_bits(codes, q.codes, cbytes), "%s: the right SR stride differs", qp_formats[fmt].name);
            free(codes);
            free(scales);
            qp_qtensor_free(&q);
        }
        free(x);
    }
}

/* ---- 4. RHT ------------------------------------------------------------------ */

static void test_rht(void)
{
    const int64_t rows = 37, cols = 256, n = rows * cols;
    float *x = (float *)malloc((size_t)n * sizeof *x), *ref = (float *)malloc((size_t)n * sizeof *ref);
    unsigned long long s = 5;
    for (int size = 16; size <= QP_RHT_MAX; size *= 2)
        for (int trial = 0; trial < 4; trial++)
            for (int inverse = 0; inverse < 2; inverse++) {
                const uint64_t seed = trial == 0 ? 0 : qp_test_next(&s);
                fill(x, n, cols, trial == 3 ? SPECIAL : trial == 2 ? SUBNORMAL : RANDOM,
                     300 + (unsigned long long)trial);
                memcpy(ref, x, (size_t)n * sizeof *x);
                CHECK((inverse ? qp_rht_inverse : qp_rht)(ref, rows, cols, size, seed) == 0, "qp_rht %d", size);
                uint32_t w[4];
                qp_rht_sign_words(seed, w);
                for (int64_t i = 0; i < n; i += size) qp_rht_vec(x + i, size, w, inverse);
                int64_t bad = 0;
                for (int64_t i = 0; i < n; i++) bad += !qp_same_float(x[i], ref[i]);
                CHECK(bad == 0, "RHT %d%s trial %d: %lld values differ", size, inverse ? " inverse" : "", trial,
                      (long long)bad);
            }
    for (int kind = 0; kind < NKINDS; kind++) {
        fill(x, n, cols, kind, 400 + (unsigned long long)kind);
        memcpy(ref, x, (size_t)n * sizeof *x);
        CHECK(qp_rht16_te(ref, rows, cols) == 0, "qp_rht16_te");
        for (int64_t i = 0; i < n; i += 16) qp_rht_te_vec(x + i);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) bad += !qp_same_float(x[i], ref[i]);
        CHECK(bad == 0, "TE RHT %s: %lld values differ", kind_names[kind], (long long)bad);
    }
    free(x);
    free(ref);
}

int main(void)
{
    test_format_table();
#ifdef __CUDACC__
    test_codecs();
#endif
    test_rht();
    test_tensors();
    test_large();
    test_nvfp4_order();
    test_sr_map();
    return qp_test_finish("test_qcore");
}
