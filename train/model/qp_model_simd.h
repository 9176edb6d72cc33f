/* qp_model_simd.h — what the two model kernel files share (qp_model_kernels.c,
 * the GPT; qp_llama_kernels.c, the Llama): GCC vectors of 16 floats, exp for
 * x <= 0, fixed-order row and column sums, blocked attention over any q/k/v
 * layout (grouped-query included) that keeps no T x T matrix, softmax
 * cross-entropy and the precision dispatch's calls with their phase.
 * Internal to train/: static functions, compiled into each copy (baseline,
 * x86-64-v3 and x86-64-v4) of each kernel file, the same operations in the
 * same order in every copy, so the builds give identical bits: a multiply-add
 * is fused only where written (sfma, hfma, vfma), and then in every copy. */
#ifndef QP_MODEL_SIMD_H
#define QP_MODEL_SIMD_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "qp_linear.h"
#include "qp_model_kernels.h"
#include "qp_model_math.h"
#include "qp_prof.h"

/* ---- vectors ------------------------------------------------------------- */

/* Static functions pass 64-byte vectors by value; the baseline copy's ABI for
 * that differs from an AVX-512 build's, which is nothing to warn about here. */
#pragma GCC diagnostic ignored "-Wpsabi"

#define VL 16
typedef float vf __attribute__((vector_size(VL * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(VL * sizeof(int32_t))));

static inline vf vload(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(float *p, vf v) { memcpy(p, &v, sizeof v); }

static inline vf vsplat(float x)
{
    vf v;
    for (int i = 0; i < VL; i++) v[i] = x;
    return v;
}

/* Comparisons, lanes -1 where true: in pieces as wide as the CPU's vectors,
 * because GCC compares a vector wider than those one lane at a time (16
 * vcomiss and setcc: the x86-64-v3 and baseline copies' attention and GELU
 * spent most of their time there). The same masks either way. */
#if defined(__AVX512F__)
#define HW_LANES 16
#elif defined(__AVX__)
#define HW_LANES 8
#else
#define HW_LANES 4
#endif
typedef float hw_vf __attribute__((vector_size(HW_LANES * sizeof(float))));
typedef int32_t hw_vi __attribute__((vector_size(HW_LANES * sizeof(int32_t))));
#define VCOMPARE(name, T, HT, op)                                                                                    \
    static inline __attribute__((always_inline)) vi name(T a, T b)                                                   \
    {                                                                                                                \
        vi r;                                                                                                        \
        for (int i = 0; i < VL; i += HW_LANES) {                                                                     \
            HT x, y;                                                                                                 \
            memcpy(&x, (const char *)&a + i * 4, sizeof x);                                                          \
            memcpy(&y, (const char *)&b + i * 4, sizeof y);                                                          \
            const hw_vi m = x op y;                                                                                  \
            memcpy((char *)&r + i * 4, &m, sizeof m);                                                                \
        }                                                                                                            \
        return r;                                                                                                    \
    }
VCOMPARE(vgt, vf, hw_vf, >)
VCOMPARE(vlt, vf, hw_vf, <)
VCOMPARE(vge, vf, hw_vf, >=)
VCOMPARE(vige, vi, hw_vi, >=)
VCOMPARE(vilt, vi, hw_vi, <)

/* lanes of a where mask is set (-1), else b */
static inline __attribute__((always_inline)) vf vsel(vi mask, vf a, vf b)
{
    return (vf)(((vi)a & mask) | ((vi)b & ~mask));
}
static inline __attribute__((always_inline)) vf vmax(vf a, vf b) { return vsel(vgt(a, b), a, b); }

/* The register kernels below keep their sums in vectors as wide as the CPU's
 * (hw_vf) and run once per such piece of the 16 lanes: an array of 16-lane
 * vectors wider than the registers is moved through memory and general
 * registers by GCC. The lanes are independent, so each lane does the same
 * operations in the same order in every copy. */
static inline __attribute__((always_inline)) hw_vf hload(const float *p)
{
    hw_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline __attribute__((always_inline)) void hstore(float *p, hw_vf v) { memcpy(p, &v, sizeof v); }
/* x in every lane (a broadcast: "(hw_vf){0} + x" would be an addition, kept
 * under -ffp-contract=off and strict IEEE, in every multiply-add) */
static inline __attribute__((always_inline)) hw_vf hsplat(float x)
{
#if defined(__AVX512F__)
    return (hw_vf)_mm512_set1_ps(x);
#elif HW_LANES == 8
    return (hw_vf)_mm256_set1_ps(x);
#elif defined(__SSE__)
    return (hw_vf)_mm_set1_ps(x);
#else
    hw_vf v;
    for (int i = 0; i < HW_LANES; i++) v[i] = x;
    return v;
#endif
}

/* a * b + c rounded once (IEEE fusedMultiplyAdd): the FMA instruction in the
 * copies that have one, libm's fmaf in the baseline copy (exact on every
 * CPU: an FMA instruction where the CPU has one, else software). One
 * rounding is one rounding on every CPU, so the copies stay bit-identical
 * while the x86-64-v3 and v4 copies do a multiply-add in one instruction
 * (the files are built with -ffp-contract=off: only these are fused). */
static inline __attribute__((always_inline)) float sfma(float a, float b, float c) { return fmaf(a, b, c); }

static inline __attribute__((always_inline)) hw_vf hfma(hw_vf a, hw_vf b, hw_vf c)
{
#if defined(__AVX512F__)
    return (hw_vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__) && HW_LANES == 8
    return (hw_vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    hw_vf r;
    for (int i = 0; i < HW_LANES; i++) r[i] = fmaf(a[i], b[i], c[i]);
    return r;
#endif
}

/* hfma on the 16 lanes, a piece as wide as the CPU's vectors at a time */
static inline __attribute__((always_inline)) vf vfma(vf a, vf b, vf c)
{
    vf r;
    for (int i = 0; i < VL; i += HW_LANES) {
        hw_vf x, y, z;
        memcpy(&x, (const char *)&a + i * 4, sizeof x);
        memcpy(&y, (const char *)&b + i * 4, sizeof y);
        memcpy(&z, (const char *)&c + i * 4, sizeof z);
        const hw_vf t = hfma(x, y, z);
        memcpy((char *)&r + i * 4, &t, sizeof t);
    }
    return r;
}

/* Sum of the 16 lanes by a fixed tree. */
static inline float vsum(vf v)
{
    for (int w = VL / 2; w >= 1; w /= 2)
        for (int i = 0; i < w; i++) v[i] = v[i] + v[i + w];
    return v[0];
}

/* Sum of x[0..n): 16 running sums, then their tree, then the tail in order. */
static inline float row_sum(const float *x, int n)
{
    vf acc = vsplat(0.0f);
    int i = 0;
    for (; i + VL <= n; i += VL) acc += vload(x + i);
    float s = vsum(acc);
    for (; i < n; i++) s += x[i];
    return s;
}

/* Dot product of x[0..n) and y[0..n), summed like row_sum. */
static inline float row_dot(const float *x, const float *y, int n)
{
    vf acc = vsplat(0.0f);
    int i = 0;
    for (; i + VL <= n; i += VL) acc = vfma(vload(x + i), vload(y + i), acc);
    float s = vsum(acc);
    for (; i < n; i++) s = sfma(x[i], y[i], s);
    return s;
}



/* qp_model_math.h's qpm_exp_nonpos (exp for x <= 0: Cody-Waite reduction,
 * Cephes' polynomial, ~1 ulp; plain arithmetic, so it vectorizes where
 * libm's expf does not) on every lane: the same operations in the same order. */
static inline vf vexp_nonpos(vf x)
{
    x = vmax(x, vsplat(-87.0f));
    const vf k = vfma(x, vsplat(1.44269504088896341f), vsplat(12582912.0f)) - 12582912.0f;
    const vf r = vfma(k, vsplat(2.12194440e-4f), vfma(k, vsplat(-0.693359375f), x));
    vf p = vsplat(1.9875691500e-4f);
    p = vfma(p, r, vsplat(1.3981999507e-3f));
    p = vfma(p, r, vsplat(8.3334519073e-3f));
    p = vfma(p, r, vsplat(4.1665795894e-2f));
    p = vfma(p, r, vsplat(1.6666665459e-1f));
    p = vfma(p, r, vsplat(5.0000001201e-1f));
    p = vfma(p, r * r, r) + 1.0f;
    const vi two_k = (__builtin_convertvector(k, vi) + 127) << 23;
    return p * (vf)two_k;
}

/* acc += x over n columns */
static inline void add_row(float *restrict acc, const float *restrict x, int n)
{
    int c = 0;
    for (; c + VL <= n; c += VL) vstore(acc + c, vload(acc + c) + vload(x + c));
    for (; c < n; c++) acc[c] += x[c];
}

/* Column sums of row-block partials: dst[c] += sum over blocks, in block
 * order, of part[blk * stride + c]. Called inside a parallel region. */
static void reduce_blocks(float *restrict dst, const float *restrict part, int nblk, int64_t stride, int n)
{
#pragma omp for schedule(static)
    for (int c0 = 0; c0 < n; c0 += VL) {
        const int c1 = c0 + VL < n ? c0 + VL : n;
        for (int c = c0; c < c1; c++) {
            float s = 0.0f;
            for (int k = 0; k < nblk; k++) s += part[k * stride + c];
            dst[c] += s;
        }
    }
}

static void zero_rows(float *p, int64_t n) { memset(p, 0, (size_t)n * sizeof(float)); }

/* ---- quantization by a GEMM input's producer -------------------------------- */

/* Where the dispatch takes an operand quantized (qp_linear_takes_rounded:
 * BF16, or per-tensor FP8 at a delayed scale), its producer quantizes each
 * row as it writes it and counts what the quantization would count
 * (qp_round_tally). A vector whose magnitudes all lie where nothing is
 * counted but "nonzero" — normal FP32 values that round to a finite BF16;
 * scaled values between half the smallest FP8 subnormal and the largest
 * FP8 value — takes the vector rounding and its amax (nearly all of them);
 * any other goes element by element through quant/'s qp_round_elem_tally.
 * The vector roundings are integer operations and one float addition, so
 * every copy gives the same bits (BF16: qp_f32_to_bf16's; FP8: the
 * addition whose FPU rounding is the grid's, quant/'s rn_code). The counter
 * lives in registers in the row loops (copied in and out: its address
 * reaches the merge). */
typedef uint32_t vu __attribute__((vector_size(VL * sizeof(uint32_t))));

typedef struct {
    vi amax;       /* of the whole vectors' magnitudes */
    int64_t plain; /* their elements: each finite and nonzero, nothing else to count */
    qp_round_tally t;
} round_counter;

static inline void round_counter_init(round_counter *c) { memset(c, 0, sizeof *c); }

static inline vi visplat(int32_t x)
{
    vi v;
    for (int i = 0; i < VL; i++) v[i] = x;
    return v;
}

/* The larger of each lane (signed). */
static inline __attribute__((always_inline)) vi vimax(vi a, vi b)
{
#if defined(__AVX512F__)
    return (vi)_mm512_max_epi32((__m512i)a, (__m512i)b);
#else
    const vi gt = vgt((vf)a, (vf)b); /* magnitudes of finite floats order as the floats do */
    return (gt & a) | (~gt & b);
#endif
}

/* 1 when every magnitude a (0 <= a < 2^31) lies in [lo, lo + span). */
static inline __attribute__((always_inline)) int vall_in(vi a, uint32_t lo, uint32_t span)
{
#if defined(__AVX512F__)
    return _mm512_cmplt_epu32_mask(_mm512_sub_epi32((__m512i)a, _mm512_set1_epi32((int)lo)),
                                   _mm512_set1_epi32((int)span)) == 0xFFFF;
#else
    const vu d = (vu)a - lo;
    int all = 1;
    for (int i = 0; i < VL; i++) all &= d[i] < span;
    return all;
#endif
}

/* How a producer quantizes: the dispatch's format and scale, its element
 * codec, and the magnitudes its vector path takes. */
typedef struct {
    qp_linear_rounded *out; /* the dispatch's request; its tally gets the counts */
    const qp_format_traits *f;
    float scale; /* the request's (1 for BF16) */
    int bf16;
    int mbits;
    uint32_t emin, lo, span; /* FP8: min normal's exponent bits; the plain magnitudes */
} rounder;

static inline rounder rounder_of(qp_linear_rounded *r)
{
    rounder q = {r, &qp_formats[r->fmt], r->scale, r->fmt == QP_FMT_BF16, 0, 0, 0x00800000u, 0x7F7F0000u - 0x00800000u};
    int minifloat;
    const qp_minifloat mf = qp_elem_minifloat(q.f->elem, &minifloat);
    if (minifloat) {
        q.mbits = mf.mbits;
        q.emin = (uint32_t)(128 - mf.bias) << 23;
        /* above half the smallest subnormal (which rounds to zero, a tie to even), up to max */
        const uint32_t half = (uint32_t)(127 - mf.bias - mf.mbits) << 23;
        uint32_t maxb;
        memcpy(&maxb, &mf.max, sizeof maxb);
        q.lo = half + 1;
        q.span = maxb - half;
    }
    return q;
}

/* Magnitudes a (0 <= a <= the format's largest) on q's minifloat grid:
 * M = 2^(e + 23 - mbits), e = max(exponent of a, emin), and a + M keeps
 * a's bits down to the grid's spacing there, the FPU rounding the rest to
 * nearest even; minus M, the grid value (quant/'s rn_code). */
static inline __attribute__((always_inline)) vf vgrid_round(vi a, const rounder *q)
{
    const vi e = vimax(a & 0x7F800000, visplat((int32_t)q->emin));
    const vf m = (vf)(e + (int32_t)((uint32_t)(23 - q->mbits) << 23));
    return ((vf)a + m) - m;
}

/* x quantized (unscaled: x * scale rounded), counted. q by value: its
 * fields stay in registers through loops that store floats. */
static inline __attribute__((always_inline)) vf vround(vf x, const rounder q_, round_counter *c)
{
    const rounder *q = &q_;
    const float scale = q->scale;
    const vf v = q->bf16 ? x : x * scale;
    const vu b = (vu)v;
    const vi a = (vi)(b & 0x7FFFFFFFu);
    if (__builtin_expect(vall_in(a, q->lo, q->span), 1)) {
        c->plain += VL;
        c->amax = vimax(c->amax, (vi)((vu)x & 0x7FFFFFFFu));
        if (q->bf16) return (vf)((b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u);
        return (vf)((vu)vgrid_round(a, q) | (b & 0x80000000u));
    }
    if (!q->bf16 && vall_in(a, 0, q->lo + q->span)) {
        /* finite, none past the largest value, some zero or flushed (small
         * gradients in E5M2 at a scale set by the large ones): the same
         * rounding, those two counted lane by lane */
        const vf r = vgrid_round(a, q);
        const vi xa = (vi)((vu)x & 0x7FFFFFFFu);
        for (int i = 0; i < VL; i++) {
            const int nz = xa[i] != 0;
            c->t.nonzero += nz;
            c->t.flushed += nz && r[i] == 0.0f;
        }
        c->amax = vimax(c->amax, xa);
        return (vf)((vu)r | (b & 0x80000000u));
    }
    vf r;
    for (int i = 0; i < VL; i++) r[i] = qp_round_elem_tally(q->f, scale, x[i], &c->t);
    return r;
}

/* A producer thread's start: its counter zeroed, the rounder of r (NULL:
 * the producer quantizes nothing, and round_row and round_end do nothing). */
static inline rounder round_begin(qp_linear_rounded *r, round_counter *c)
{
    round_counter_init(c);
    return r ? rounder_of(r) : (rounder){0};
}

/* x[j * stride + 0..n) for j < rows quantized in place and counted (the
 * counter in registers throughout: slices of a few vectors cost no more per
 * element than rows). */
static inline void round_rows(float *x, int rows, int64_t stride, int n, const rounder *q, round_counter *c)
{
    if (!q->out) return;
    round_counter r = *c;
    const rounder qv = *q;
    for (int j = 0; j < rows; j++) {
        float *y = x + j * stride;
        int i = 0;
        for (; i + VL <= n; i += VL) vstore(y + i, vround(vload(y + i), qv, &r));
        for (; i < n; i++) y[i] = qp_round_elem_tally(qv.f, qv.scale, y[i], &r.t);
    }
    *c = r;
}

/* x[0..n) quantized in place and counted. */
static inline void round_row(float *x, int n, const rounder *q, round_counter *c) { round_rows(x, 1, 0, n, q, c); }

/* A thread's counts into the tensor's (inside a parallel region; sums and a
 * maximum: the same result in any order). */
static inline void round_end(const round_counter *c, const rounder *q)
{
    if (!q->out) return;
    qp_round_tally t = c->t;
    t.nonzero += c->plain;
    for (int i = 0; i < VL; i++)
        if ((uint32_t)c->amax[i] > t.amax_bits) t.amax_bits = (uint32_t)c->amax[i];
#pragma omp critical(qp_round_tally_merge)
    qp_round_tally_merge(&q->out->tally, &t);
}

/* ---- attention -------------------------------------------------------------- */

/* Where a head's q, k and v sit in a row of the projections (rs floats):
 * NH query heads of hs channels from 0, KVH key and value heads (KVH
 * divides NH; query head h reads key/value head h / (NH / KVH), grouped-query
 * attention) from koff and from voff. The GPT's: rs 3C, koff C, voff 2C, KVH
 * NH. */
typedef struct {
    int64_t rs, koff, voff;
    int NH, KVH, hs;
} qp_att_layout;

static inline int att_kv_head(const qp_att_layout *a, int h) { return h / (a->NH / a->KVH); }

/* Query rows go QB at a time as the lanes of a vector (a query block); the
 * backward takes keys KB at a time (a key block) and sums their dk and dv
 * rows over every query row in registers (FlashAttention-2's loop order). */
#define QB VL
#define KB 16

/* Register blocks: KG keys' scores, DG columns' sums, and the dk/dv blocks
 * (key_block_sum) side by side. The x86-64-v4 copy has 32 registers of a
 * whole vector, the x86-64-v3 copy 16 of half a one, the baseline copy 16 of
 * a quarter of one, so each takes its own: a block only decides which sums
 * run side by side, each sum is the same operations in the same order either
 * way, and the copies give the same bits. (v3, its sums in AVX registers
 * (hw_vf): 8 and 8 measured best, 1.5% less CPU time than 4 and 8 for a
 * T = 256 run.) */
#ifdef __AVX512F__
#define KG 8
#define DG 16
#elif defined(__AVX2__)
#define KG 8
#define DG 8
#else
#define KG 2
#define DG 2
#endif
_Static_assert(KB % KG == 0 && VL % DG == 0, "register blocks divide the key and column blocks");

static inline int imin(int a, int b) { return a < b ? a : b; }

/* Lanes 0..15. */
static inline vi lane_index(void)
{
    vi r;
    for (int i = 0; i < VL; i++) r[i] = i;
    return r;
}

/* The causal mask of key k against the query rows r0 + lane: the rows that
 * see it and exist (below T). */
static inline vi key_visible(int k, int r0, int T)
{
    const vi lane = lane_index(), zero = lane - lane;
    return vige(lane, zero + (k - r0)) & vilt(lane, zero + (T - r0));
}

/* One round of a 16 x 16 transpose: rows i and i + s (i & s == 0) swap
 * their off-diagonal s-wide sub-blocks. The lanes of r[i]: (j & s) ? y's j - s
 * : x's j; of r[i + s]: (j & s) ? y's j : x's j + s (x = r[i], y = r[i + s]),
 * as constant shuffles GCC (12 and later) and Clang both take. */
#define QP_ROUND_LO8 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define QP_ROUND_HI8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define QP_ROUND_LO4 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define QP_ROUND_HI4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define QP_ROUND_LO2 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define QP_ROUND_HI2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define QP_ROUND_LO1 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define QP_ROUND_HI1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
static inline __attribute__((always_inline)) void transpose_round(vf r[VL], const int s)
{
#pragma GCC unroll 16
    for (int i = 0; i < VL; i++)
        if (!(i & s)) {
            const vf x = r[i], y = r[i + s];
            switch (s) {
            case 8:
                r[i] = __builtin_shufflevector(x, y, QP_ROUND_LO8);
                r[i + s] = __builtin_shufflevector(x, y, QP_ROUND_HI8);
                break;
            case 4:
                r[i] = __builtin_shufflevector(x, y, QP_ROUND_LO4);
                r[i + s] = __builtin_shufflevector(x, y, QP_ROUND_HI4);
                break;
            case 2:
                r[i] = __builtin_shufflevector(x, y, QP_ROUND_LO2);
                r[i + s] = __builtin_shufflevector(x, y, QP_ROUND_HI2);
                break;
            default: /* s = 1 */
                r[i] = __builtin_shufflevector(x, y, QP_ROUND_LO1);
                r[i + s] = __builtin_shufflevector(x, y, QP_ROUND_HI1);
                break;
            }
        }
}

/* r[i][j] <-> r[j][i]: rounds of 8, 4, 2 and 1; moves data, computes
 * nothing. */
static inline void transpose16(vf r[VL])
{
    transpose_round(r, 8);
    transpose_round(r, 4);
    transpose_round(r, 2);
    transpose_round(r, 1);
}

/* dst[c * dld + i] = src[i * sld + c] for i < ni, c < nc (ni, nc <= 16):
 * a tile transposed; nothing else of dst is written. Vector shuffles where
 * they are instructions (the baseline copy would move them float by float
 * through memory, slower than the plain loop). */
static void tile_transpose(float *restrict dst, int64_t dld, const float *restrict src, int64_t sld, int ni, int nc)
{
#ifdef __AVX512F__
    if (ni == VL && nc == VL) {
        vf r[VL];
        for (int i = 0; i < VL; i++) r[i] = vload(src + i * sld);
        transpose16(r);
        for (int c = 0; c < VL; c++) vstore(dst + c * dld, r[c]);
        return;
    }
#endif
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < ni; i++) dst[c * dld + i] = src[i * sld + c];
}

/* dst (hp rows of ld floats: column d of source row i at dst[d * ld + i]) =
 * the hs columns of the n rows src + i * sld, transposed; when n or hs is
 * not a multiple of 16, the hp x pad16(n) block is zeroed first (the
 * padding the kernels read). */
static void pack_transposed(float *restrict dst, int64_t ld, const float *src, int64_t sld, int n, int hs, int hp)
{
    if (n % VL || hs % VL)
        for (int d = 0; d < hp; d++) zero_rows(dst + d * ld, qp_pad16(n));
    for (int r0 = 0; r0 < n; r0 += VL)
        for (int d0 = 0; d0 < hs; d0 += VL)
            tile_transpose(dst + d0 * ld + r0, ld, src + (int64_t)r0 * sld + d0, sld, imin(VL, n - r0),
                           imin(VL, hs - d0));
}

/* dst (n padded to 16 rows of hp floats) = the hs columns of the n rows
 * src + i * sld, zero-padded. */
static void pack_rows(float *restrict dst, int hp, const float *restrict src, int64_t sld, int n, int hs)
{
    for (int r = 0; r < qp_pad16(n); r++) {
        float *d = dst + (int64_t)r * hp;
        const float *x = src + (int64_t)r * sld;
        int c = 0;
        if (r < n) {
            for (; c + VL <= hs; c += VL) vstore(d + c, vload(x + c));
            for (; c < hs; c++) d[c] = x[c];
        }
        for (; c < hp; c++) d[c] = 0.0f;
    }
}

/* The rows of the next block of work (up to ATT_PF_REGIONS regions, n rows
 * of hs floats from each base at its stride), asked for one cache line at a
 * time from inside the loops of the current block: misses the hardware
 * prefetchers leave (every row of a head is in another 4 KiB page) overlap
 * the arithmetic instead of stalling the block that needs them. A burst of
 * them would stall as the loads do. Data movement only. */
#define ATT_PF_REGIONS 5
typedef struct {
    const float *base[ATT_PF_REGIONS];
    int64_t stride[ATT_PF_REGIONS];
    int nreg, n, hs, lpr; /* regions, rows, floats per row, lines asked per row */
    int r, j, l;          /* the next line: row, region, line */
} att_prefetch;

static void att_prefetch_init(att_prefetch *p, int n, int hs)
{
    p->nreg = 0, p->n = n, p->hs = hs, p->lpr = (hs + VL - 1) / VL;
    p->r = p->j = p->l = 0;
}

static void att_prefetch_add(att_prefetch *p, const float *base, int64_t stride)
{
    p->base[p->nreg] = base;
    p->stride[p->nreg++] = stride;
}

/* The next line, if any (a row's last line at its last float: rows need not
 * start on a line). */
static inline void att_prefetch_step(att_prefetch *p)
{
    if (p->r >= p->n || !p->nreg) return;
    const float *x = p->base[p->j] + (int64_t)p->r * p->stride[p->j];
    __builtin_prefetch(p->l + 1 < p->lpr ? x + p->l * VL : x + p->hs - 1, 0, 3);
    if (++p->l == p->lpr) {
        p->l = 0;
        if (++p->j == p->nreg) p->j = 0, p->r++;
    }
}

/* St[c] (lanes: query rows) = scale * k_c . q_r for c < nk, KG keys at a
 * time (keys past nk are computed from key nk - 1 and not used; st has room
 * for them). */
static void scores(float *restrict st, const float *restrict qt, const float *kb, int64_t rs, int nk, int hs,
                   float scale, att_prefetch *pf)
{
    for (int c0 = 0; c0 < nk; c0 += KG) {
        const float *k[KG];
        for (int j = 0; j < KG; j++) k[j] = kb + (int64_t)imin(c0 + j, nk - 1) * rs;
        for (int h = 0; h < VL; h += HW_LANES) {
            hw_vf s[KG];
            for (int j = 0; j < KG; j++) s[j] = hsplat(0.0f);
            for (int d = 0; d < hs; d++) {
                const hw_vf q = hload(qt + d * QB + h);
                for (int j = 0; j < KG; j++) s[j] = hfma(hsplat(k[j][d]), q, s[j]);
                att_prefetch_step(pf);
            }
            for (int j = 0; j < KG; j++) hstore(st + (c0 + j) * QB + h, s[j] * scale);
        }
    }
}

/* Acc^T[d0 + j] (lanes: query rows) = sum over keys c < nk, in order, of
 * v_c[d0 + j] * P^T[c], for j < nd (a constant where it is inlined: the nd
 * sums stay in registers). */
static inline __attribute__((always_inline)) void weighted_sum_cols(float *restrict acc, const float *restrict p,
                                                                   const float *vb, int64_t rs, int nk, int d0,
                                                                   const int nd)
{
    for (int h = 0; h < VL; h += HW_LANES) {
        hw_vf s[VL];
#pragma GCC unroll 16
        for (int j = 0; j < nd; j++) s[j] = hsplat(0.0f);
        for (int c = 0; c < nk; c++) {
            const hw_vf pc = hload(p + c * QB + h);
            const float *v = vb + (int64_t)c * rs + d0;
#pragma GCC unroll 16
            for (int j = 0; j < nd; j++) s[j] = hfma(hsplat(v[j]), pc, s[j]);
        }
#pragma GCC unroll 16
        for (int j = 0; j < nd; j++) hstore(acc + (d0 + j) * QB + h, s[j]);
    }
}

/* Acc^T (hs x QB) = P V over keys c < nk: the forward's P.V. */
static void weighted_sum(float *restrict acc, const float *restrict p, const float *vb, int64_t rs, int nk, int hs)
{
    int d0 = 0;
    for (; d0 + DG <= hs; d0 += DG) weighted_sum_cols(acc, p, vb, rs, nk, d0, DG);
    for (; DG > 4 && d0 + 4 <= hs; d0 += 4) weighted_sum_cols(acc, p, vb, rs, nk, d0, 4);
    for (; d0 < hs; d0++) weighted_sum_cols(acc, p, vb, rs, nk, d0, 1);
}

/* Scratch floats of a forward task: Q^T and the output (hs x QB each), the
 * scores and probabilities of up to T keys (room for KG more). */
static int64_t att_forward_scratch_floats(int hs, int T) { return 2 * qp_pad16(hs) * QB + (int64_t)(T + KG) * QB; }

/* One task of the forward: query rows [t0, t0+QB) of head h of sequence b,
 * a plain softmax over all the keys they see (their scores fit in O(T)).
 * out (B,T,NH*hs), lse (B,NH,T), qkv (B,T,rs) as laid out by a; bias (rs
 * floats, or NULL) is first added to the block's own q, k and v rows in
 * place (the blocks of a head run in order); scr:
 * att_forward_scratch_floats(hs, T). */
static void attention_forward_block(float *out, float *lse, float *qkv, const float *bias, const qp_att_layout *a,
                                    int b, int h, int t0, int T, float *scr)
{
    const int hs = a->hs, NH = a->NH, nq = imin(T - t0, QB), tend = t0 + nq;
    const int64_t rs = a->rs, C = (int64_t)NH * hs, kv = (int64_t)att_kv_head(a, h) * hs;
    float *base = qkv + (int64_t)b * T * rs;
    if (bias)
        for (int r = t0; r < tend; r++) {
            add_row(base + (int64_t)r * rs + h * hs, bias + h * hs, hs);
            add_row(base + (int64_t)r * rs + a->koff + kv, bias + a->koff + kv, hs);
            add_row(base + (int64_t)r * rs + a->voff + kv, bias + a->voff + kv, hs);
        }
    const float scale = 1.0f / sqrtf((float)hs);
    float *qt = scr, *acc = qt + qp_pad16(hs) * QB, *st = acc + qp_pad16(hs) * QB;
    if (nq < QB) zero_rows(qt, (int64_t)hs * QB);
    for (int d0 = 0; d0 < hs; d0 += VL)
        tile_transpose(qt + d0 * QB, QB, base + (int64_t)t0 * rs + h * hs + d0, rs, nq, imin(VL, hs - d0));
    /* meanwhile: the next block's rows */
    att_prefetch pf;
    att_prefetch_init(&pf, imin(QB, T - tend), hs);
    att_prefetch_add(&pf, base + (int64_t)tend * rs + h * hs, rs);
    att_prefetch_add(&pf, base + (int64_t)tend * rs + a->koff + kv, rs);
    att_prefetch_add(&pf, base + (int64_t)tend * rs + a->voff + kv, rs);
    att_prefetch_add(&pf, out + ((int64_t)b * T + tend) * C + h * hs, C);
    scores(st, qt, base + a->koff + kv, rs, tend, hs, scale, &pf);
    /* keys before t0 are seen by every row of the block */
    vf m = vsplat(-INFINITY), l = vsplat(0.0f);
    for (int c = 0; c < t0; c++) m = vmax(m, vload(st + c * QB));
    for (int c = t0; c < tend; c++) m = vsel(key_visible(c, t0, T), vmax(m, vload(st + c * QB)), m);
    for (int c = 0; c < tend; c++) {
        vf p = vexp_nonpos(vload(st + c * QB) - m);
        if (c >= t0) p = vsel(key_visible(c, t0, T), p, vsplat(0.0f));
        vstore(st + c * QB, p);
        l += p;
    }
    weighted_sum(acc, st, base + a->voff + kv, rs, tend, hs);
    const vf inv = 1.0f / l;
    for (int d = 0; d < hs; d++) vstore(acc + d * QB, vload(acc + d * QB) * inv);
    for (int d0 = 0; d0 < hs; d0 += VL)
        tile_transpose(out + ((int64_t)b * T + t0) * C + h * hs + d0, C, acc + d0 * QB, QB, imin(VL, hs - d0), nq);
    for (int r = 0; r < nq; r++) lse[((int64_t)b * NH + h) * T + t0 + r] = m[r] + logf(l[r]);
}

/* The backward's per-task buffers (hp = hs padded to 16, tp = T padded to
 * 16, zero-padded): the key/value head's k and v rows (tp x hp); a query
 * head's q and dout rows when hs is not a multiple of 16 (tp x hp), its
 * q^T, dout^T and dq^T sums (hp x tp); the key/value head's dk and dv sums
 * over the earlier heads of its group (tp x hp); a key block's P^T and
 * dS^T against every query row (KB x tp); the rows' D = dout . out and
 * log-sum-exp (tp); a query block's out^T (hp x QB). */
typedef struct {
    int hp, tp;
    float *k, *v, *dk, *dv, *q, *dout, *qt, *doutt, *dqt, *p, *g, *D, *lse, *outt;
} att_bwd_buffers;

static int64_t att_backward_scratch_floats(int hs, int T)
{
    const int64_t hp = qp_pad16(hs), tp = qp_pad16(T);
    return 9 * tp * hp + 2 * KB * tp + 2 * tp + hp * QB;
}

static att_bwd_buffers att_bwd_carve(float *scr, int hs, int T)
{
    att_bwd_buffers w = {.hp = (int)qp_pad16(hs), .tp = (int)qp_pad16(T)};
    const int64_t n = (int64_t)w.tp * w.hp;
    w.k = scr, w.v = w.k + n, w.dk = w.v + n, w.dv = w.dk + n, w.q = w.dv + n, w.dout = w.q + n;
    w.qt = w.dout + n, w.doutt = w.qt + n, w.dqt = w.doutt + n, w.p = w.dqt + n;
    w.g = w.p + KB * w.tp, w.D = w.g + KB * w.tp, w.lse = w.D + w.tp, w.outt = w.lse + w.tp;
    return w;
}

/* S^T[j] (lanes: query rows r0..) = sum over d < hs of rows[j][d] x^T[d],
 * for the KG rows j of a register block (rows of stride hp). */
static inline void rows_times_cols(float out[KG * VL], const float *rows, int hp, const float *xt, int64_t tp,
                                   int hs, att_prefetch *pf)
{
    const float *k[KG];
    for (int j = 0; j < KG; j++) k[j] = rows + (int64_t)j * hp;
    for (int h = 0; h < VL; h += HW_LANES) {
        hw_vf s[KG];
        for (int j = 0; j < KG; j++) s[j] = hsplat(0.0f);
        for (int d = 0; d < hs; d++) {
            const hw_vf x = hload(xt + (int64_t)d * tp + h);
            for (int j = 0; j < KG; j++) s[j] = hfma(hsplat(k[j][d]), x, s[j]);
            att_prefetch_step(pf);
        }
        for (int j = 0; j < KG; j++) hstore(out + j * VL + h, s[j]);
    }
}

/* One key block [k0, k0+KB) against one query block [r0, r0+QB) (r0 >= k0):
 * S^T = k q^T scale and dP^T = v dout^T (KG sums in registers at a time),
 * P^T = exp(S^T - lse) and dS^T = P^T (dP^T - D) scale into the key block's
 * panels, dq^T += k^T dS^T (the key block 0 starts the sums). */
static void attention_backward_tile(const att_bwd_buffers *w, int k0, int r0, int T, int hs, float scale,
                                    att_prefetch *pf)
{
    const int hp = w->hp, tp = w->tp;
    const vf lse = vload(w->lse + r0), D = vload(w->D + r0);
    float *p = w->p + r0, *g = w->g + r0;
    for (int j0 = 0; j0 < KB; j0 += KG) {
        float s[KG * VL] __attribute__((aligned(64)));
        rows_times_cols(s, w->k + (int64_t)(k0 + j0) * hp, hp, w->qt + r0, tp, hs, pf);
        for (int j = 0; j < KG; j++)
            vstore(p + (j0 + j) * tp,
                   vsel(key_visible(k0 + j0 + j, r0, T), vexp_nonpos(vload(s + j * VL) * scale - lse), vsplat(0.0f)));
        rows_times_cols(s, w->v + (int64_t)(k0 + j0) * hp, hp, w->doutt + r0, tp, hs, pf);
        for (int j = 0; j < KG; j++)
            vstore(g + (j0 + j) * tp, vload(p + (j0 + j) * tp) * (vload(s + j * VL) - D) * scale);
    }
    for (int d0 = 0; d0 < hp; d0 += DG)
        for (int h = 0; h < VL; h += HW_LANES) {
            hw_vf acc[DG];
#pragma GCC unroll 16
            for (int i = 0; i < DG; i++) acc[i] = k0 ? hload(w->dqt + (int64_t)(d0 + i) * tp + r0 + h) : hsplat(0.0f);
            for (int j = 0; j < KB; j++) {
                const hw_vf gj = hload(g + j * tp + h);
                const float *kj = w->k + (int64_t)(k0 + j) * hp + d0;
#pragma GCC unroll 16
                for (int i = 0; i < DG; i++) acc[i] = hfma(hsplat(kj[i]), gj, acc[i]);
                att_prefetch_step(pf);
            }
#pragma GCC unroll 16
            for (int i = 0; i < DG; i++) hstore(w->dqt + (int64_t)(d0 + i) * tp + r0 + h, acc[i]);
        }
}

/* Rows c0 .. c0+NK of dst (stride ds), floats [v0, v0 + 16 NV), = those
 * of src (stride ss; zeros without src) + the sum over query rows r in
 * [r0, r1), in order, of W^T[c][r] * x_r (NK, NV constants where it is
 * inlined: the NK x NV sums stay in registers). With r0 the key block's
 * first row, rows below r0 + c0 see none of these keys (their W is zero):
 * they are skipped. */
static inline __attribute__((always_inline)) void key_rows_sum(float *dst, int64_t ds, const float *src, int64_t ss,
                                                              const float *restrict wt, int64_t tp, const float *x,
                                                              int64_t xs, int r0, int r1, int c0, int v0,
                                                              const int NK, const int NV)
{
    const float *wk[8];
#pragma GCC unroll 8
    for (int k = 0; k < NK; k++) wk[k] = wt + (c0 + k) * tp;
    for (int h = 0; h < VL; h += HW_LANES) {
        hw_vf s[VL];
#pragma GCC unroll 16
        for (int i = 0; i < NK * NV; i++)
            s[i] = src ? hload(src + (int64_t)(c0 + i / NV) * ss + v0 + (i % NV) * VL + h) : hsplat(0.0f);
        for (int r = r0 + c0; r < r1; r++) {
            const float *xr = x + (int64_t)r * xs + v0 + h;
            hw_vf xv[4];
#pragma GCC unroll 4
            for (int u = 0; u < NV; u++) xv[u] = hload(xr + u * VL);
#pragma GCC unroll 16
            for (int i = 0; i < NK * NV; i++) s[i] = hfma(hsplat(wk[i / NV][r]), xv[i % NV], s[i]);
        }
#pragma GCC unroll 16
        for (int i = 0; i < NK * NV; i++) hstore(dst + (int64_t)(c0 + i / NV) * ds + v0 + (i % NV) * VL + h, s[i]);
    }
}

/* The KB rows of dst (a key block's dk or dv, stride ds, hp floats) = those
 * of src (stride ss, or zeros) + W X over query rows [r0, r1): W^T the
 * block's panel (KB x tp), X rows of hp floats at stride xs. */
static void key_block_sum(float *dst, int64_t ds, const float *src, int64_t ss, const float *restrict wt, int64_t tp,
                          const float *x, int64_t xs, int hp, int r0, int r1)
{
    int v0 = 0;
#ifdef __AVX512F__
    for (; v0 + 4 * VL <= hp; v0 += 4 * VL)
        for (int c0 = 0; c0 < KB; c0 += 4) key_rows_sum(dst, ds, src, ss, wt, tp, x, xs, r0, r1, c0, v0, 4, 4);
    for (; v0 + 2 * VL <= hp; v0 += 2 * VL)
        for (int c0 = 0; c0 < KB; c0 += 8) key_rows_sum(dst, ds, src, ss, wt, tp, x, xs, r0, r1, c0, v0, 8, 2);
    for (; v0 < hp; v0 += VL)
        for (int c0 = 0; c0 < KB; c0 += 8) key_rows_sum(dst, ds, src, ss, wt, tp, x, xs, r0, r1, c0, v0, 8, 1);
#else
    for (; v0 < hp; v0 += VL)
        for (int c0 = 0; c0 < KB; c0 += 4) key_rows_sum(dst, ds, src, ss, wt, tp, x, xs, r0, r1, c0, v0, 4, 1);
#endif
}

/* D (lanes: query rows) = dout_r . out_r from dout^T and out^T (hs x QB),
 * summed over d in order like dP^T = v dout^T: a row that sees one key
 * (out = v) gets D = dP, bit for bit, and dS = 0. */
static vf rows_dot(const float *doutt, int64_t tp, const float *outt, int hs)
{
    vf D = vsplat(0.0f);
    for (int d = 0; d < hs; d++) D = vfma(vload(outt + d * QB), vload(doutt + (int64_t)d * tp), D);
    return D;
}

/* The backward of query head h of one sequence, the gi-th of the ng of its
 * key/value head: its dq (written into dqkv), and its share of that head's
 * dk, dv: added to w->dk, w->dv (which hold the earlier heads' sums; the
 * first head starts from zero), the last head's written into dqkv instead,
 * key block by key block like dq. From dout (B,T,NH*hs), the forward's out
 * and lse. Everything is read where first needed (the first head packs the
 * key/value head's rows into w->k, w->v key block by key block, the first
 * key block packs the query rows query block by query block), the next
 * block's rows asked for meanwhile. */
static void attention_backward_head(float *dqkv, const float *dout, const float *out, const float *lse,
                                    const float *qkv, const qp_att_layout *a, int b, int h, int gi, int ng, int T,
                                    const att_bwd_buffers *w, float *part, const rounder *rq, round_counter *rc)
{
    const int hs = a->hs, NH = a->NH, hp = w->hp, tp = w->tp;
    const int64_t rs = a->rs, C = (int64_t)NH * hs, kvo = (int64_t)b * T * rs + (int64_t)att_kv_head(a, h) * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    const float *qb = qkv + (int64_t)b * T * rs + h * hs, *dob = dout + (int64_t)b * T * C + h * hs,
                *ob = out + (int64_t)b * T * C + h * hs, *lrow = lse + ((int64_t)b * NH + h) * T,
                *kb = qkv + kvo + a->koff, *vb = qkv + kvo + a->voff;
    float *dqb = dqkv + (int64_t)b * T * rs + h * hs, *dkb = dqkv + kvo + a->koff, *dvb = dqkv + kvo + a->voff;
    /* rows of whole vectors are read and written in place, others padded */
    const int inplace = hs % VL == 0;
    const float *qrows = inplace ? qb : w->q, *dorows = inplace ? dob : w->dout;
    const int64_t qs = inplace ? rs : hp, dos = inplace ? C : hp;
    /* whole key blocks of the last head go straight to dqkv */
    const int last = gi == ng - 1, tdirect = last && inplace ? T / KB * KB : 0;
    for (int r = 0; r < tp; r++) w->lse[r] = r < T ? lrow[r] : 0.0f;
    for (int k0 = 0; k0 < T; k0 += KB) {
        const int nk = imin(KB, T - k0), nnext = k0 + KB < T ? imin(KB, T - k0 - KB) : 0;
        if (gi == 0) {
            pack_rows(w->k + (int64_t)k0 * hp, hp, kb + k0 * rs, rs, nk, hs);
            pack_rows(w->v + (int64_t)k0 * hp, hp, vb + k0 * rs, rs, nk, hs);
        }
        att_prefetch pf;
        att_prefetch_init(&pf, 0, hs);
        for (int r0 = k0; r0 < T; r0 += QB) {
            if (k0 == 0) {
                /* this query block's rows, the next one's asked for */
                const int nq = imin(QB, T - r0), nn = r0 + QB < T ? imin(QB, T - r0 - QB) : 0;
                pack_transposed(w->qt + r0, tp, qb + r0 * rs, rs, nq, hs, hp);
                pack_transposed(w->doutt + r0, tp, dob + r0 * C, C, nq, hs, hp);
                if (!inplace) {
                    pack_rows(w->q + (int64_t)r0 * hp, hp, qb + r0 * rs, rs, nq, hs);
                    pack_rows(w->dout + (int64_t)r0 * hp, hp, dob + r0 * C, C, nq, hs);
                }
                if (nq < QB) zero_rows(w->outt, (int64_t)hs * QB);
                for (int d0 = 0; d0 < hs; d0 += VL)
                    tile_transpose(w->outt + d0 * QB, QB, ob + r0 * C + d0, C, nq, imin(VL, hs - d0));
                vstore(w->D + r0, rows_dot(w->doutt + r0, tp, w->outt, hs));
                att_prefetch_init(&pf, nn, hs);
                att_prefetch_add(&pf, qb + (r0 + QB) * rs, rs);
                att_prefetch_add(&pf, dob + (r0 + QB) * C, C);
                att_prefetch_add(&pf, ob + (r0 + QB) * C, C);
                if (r0 == 0 && gi == 0) {
                    att_prefetch_add(&pf, kb + KB * rs, rs);
                    att_prefetch_add(&pf, vb + KB * rs, rs);
                }
            } else if (r0 == k0) {
                /* the next key block's rows, this one's dq, dk, dv rows to write */
                att_prefetch_init(&pf, nk, hs);
                att_prefetch_add(&pf, dqb + k0 * rs, rs);
                if (k0 < tdirect) {
                    att_prefetch_add(&pf, dkb + k0 * rs, rs);
                    att_prefetch_add(&pf, dvb + k0 * rs, rs);
                }
                if (gi == 0 && nnext) {
                    att_prefetch_add(&pf, kb + (k0 + KB) * rs, rs);
                    att_prefetch_add(&pf, vb + (k0 + KB) * rs, rs);
                }
            }
            attention_backward_tile(w, k0, r0, T, hs, scale, &pf);
        }
        /* dv_c += sum_r P_rc dout_r, dk_c += sum_r dS_rc q_r */
        const float *dvin = gi ? w->dv + (int64_t)k0 * hp : NULL, *dkin = gi ? w->dk + (int64_t)k0 * hp : NULL;
        const int to_dqkv = k0 < tdirect;
        const int64_t ds = to_dqkv ? rs : hp;
        float *dv = to_dqkv ? dvb + k0 * rs : w->dv + (int64_t)k0 * hp,
              *dk = to_dqkv ? dkb + k0 * rs : w->dk + (int64_t)k0 * hp;
        key_block_sum(dv, ds, dvin, hp, w->p, tp, dorows, dos, hp, k0, T);
        key_block_sum(dk, ds, dkin, hp, w->g, tp, qrows, qs, hp, k0, T);
        /* dq rows below k0 + KB have all their keys */
        for (int d0 = 0; d0 < hs; d0 += VL)
            tile_transpose(dqb + k0 * rs + d0, rs, w->dqt + (int64_t)d0 * tp + k0, tp, imin(VL, hs - d0), nk);
    }
    if (last)
        for (int t = tdirect; t < T; t++)
            for (int d = 0; d < hs; d++) {
                dkb[(int64_t)t * rs + d] = w->dk[(int64_t)t * hp + d];
                dvb[(int64_t)t * rs + d] = w->dv[(int64_t)t * hp + d];
            }
    if (!part) return;
    /* the bias gradient's row-block partial sums of this head's columns, as
       the row pass that would otherwise read dqkv again adds them: a block's
       rows in order from zero (the blocks lie within a sequence); then the
       slices, final now, quantized for the dispatch (rq: the sums are of the
       values before) */
    const int64_t kvcol = (int64_t)att_kv_head(a, h) * hs;
    float *src[3] = {dqb, dkb, dvb};
    for (int t = 0; t < T; t++) {
        const int64_t row = (int64_t)b * T + t;
        float *pb = part + row / QP_ROW_BLOCK * rs;
        float *dst[3] = {pb + h * hs, pb + a->koff + kvcol, pb + a->voff + kvcol};
        for (int i = 0; i < (last ? 3 : 1); i++) {
            if (row % QP_ROW_BLOCK == 0) zero_rows(dst[i], hs);
            add_row(dst[i], src[i] + (int64_t)t * rs, hs);
        }
    }
    for (int i = 0; i < (last ? 3 : 1); i++) round_rows(src[i], T, rs, hs, rq, rc);
}

/* dq of every query head of key/value head kvh of sequence b, and that
 * head's dk and dv (all written): each query head of the group adds its
 * share in head order. */
static void attention_backward_kv(float *dqkv, const float *dout, const float *out, const float *lse,
                                  const float *qkv, const qp_att_layout *a, int b, int kvh, int T, float *scr,
                                  float *part, const rounder *rq, round_counter *rc)
{
    const int group = a->NH / a->KVH;
    const att_bwd_buffers w = att_bwd_carve(scr, a->hs, T);
    for (int g = 0; g < group; g++)
        attention_backward_head(dqkv, dout, out, lse, qkv, a, b, kvh * group + g, g, group, T, &w, part, rq, rc);
}

/* How the tasks of attention split the work. A head's rows are slices of
 * rows that hold every head (rs floats apart, mostly in another 4 KiB page
 * each), which the hardware prefetchers do not follow: read that way they
 * come at a few GB/s. A whole sequence's rows are one contiguous stretch,
 * read in order at the memory's full speed. So when a sequence's rows fit
 * in a core's L2 (ATT_STREAM_BYTES: 1-2 MiB on this machine, half that to
 * leave room for the work) and there are sequences enough for every thread,
 * a task is a sequence: its rows are read through once in order, then its
 * heads run out of cache. Else a task is one head of a sequence. Which task
 * runs which head changes no sum. */
#define ATT_STREAM_BYTES (768 << 10)

/* The threads of the enclosing parallel region. */
static inline int att_threads(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* Heads per task (1 or all the n of a sequence) for sequences of T rows of
 * the floats of the rows it reads (row floats per row, over any tensors). */
static int att_task_heads(int B, int T, int64_t row_floats, int n)
{
    const int64_t bytes = (int64_t)T * row_floats * (int64_t)sizeof(float);
    return bytes <= ATT_STREAM_BYTES && B >= 2 * att_threads() ? n : 1;
}

/* n floats read in order, one load per cache line (volatile: kept), so
 * that the hardware prefetchers stream them into cache. */
static void att_stream_in(const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i += VL) (void)*(volatile const float *)(x + i);
}

/* out (B,T,NH*hs) = softmax(q k^T / sqrt(hs), causal) v per head; lse
 * (B,NH,T); bias (rs floats, or NULL) is added to qkv first, row by row
 * as the rows are first read (a head adds its own k and v: with a bias, KVH
 * must equal NH). Worksharing loops: call inside a parallel region. A task
 * is a sequence or a head of one (att_task_heads); each head's query blocks
 * run in order; a task's sums do not depend on the thread that runs it, so
 * tasks go to threads as they come free. */
static void attention_forward_tasks(float *out, float *lse, float *qkv, const float *bias, const qp_att_layout *a,
                                    int B, int T)
{
    const int NH = a->NH, per = att_task_heads(B, T, a->rs, NH);
    float *scr = aligned_alloc(64, (size_t)qp_pad16(att_forward_scratch_floats(a->hs, T)) * sizeof(float));
#pragma omp for schedule(dynamic, 1)
    for (int task = 0; task < B * NH / per; task++) {
        const int b = task * per / NH, h0 = task * per % NH;
        if (per > 1) att_stream_in(qkv + (int64_t)b * T * a->rs, (int64_t)T * a->rs);
        for (int h = h0; h < h0 + per; h++)
            for (int t0 = 0; t0 < T; t0 += QB) attention_forward_block(out, lse, qkv, bias, a, b, h, t0, T, scr);
    }
    free(scr);
}

/* dqkv (B,T,rs) = the gradient of attention_forward_tasks' input (q, k and v
 * written, not accumulated); with part (not NULL: T a multiple of
 * QP_ROW_BLOCK, KVH equal to NH), part (one row of rs floats per block of
 * QP_ROW_BLOCK rows of dqkv) = the blocks' column sums, each block's rows
 * added in order to zero: what a bias gradient sums; and then, with rounded
 * (not NULL; part not NULL), each head's slices of dqkv quantized for the
 * dispatch as they are final (round_rows). Worksharing loops: call inside a
 * parallel region; a task is a sequence or a key/value head of one, handed
 * out as in the forward. */
static void attention_backward_tasks(float *dqkv, float *part, const float *dout, const float *out, const float *lse,
                                     const float *qkv, const qp_att_layout *a, int B, int T,
                                     qp_linear_rounded *rounded)
{
    round_counter cnt;
    const rounder q = round_begin(part ? rounded : NULL, &cnt);
    const int KVH = a->KVH;
    const int64_t rs = a->rs, C = (int64_t)a->NH * a->hs;
    const int per = att_task_heads(B, T, rs + 2 * C, KVH);
    float *scr = aligned_alloc(64, (size_t)qp_pad16(att_backward_scratch_floats(a->hs, T)) * sizeof(float));
#pragma omp for schedule(dynamic, 1)
    for (int task = 0; task < B * KVH / per; task++) {
        const int b = task * per / KVH, kv0 = task * per % KVH;
        if (per > 1) {
            att_stream_in(qkv + (int64_t)b * T * rs, (int64_t)T * rs);
            att_stream_in(dout + (int64_t)b * T * C, (int64_t)T * C);
            att_stream_in(out + (int64_t)b * T * C, (int64_t)T * C);
        }
        for (int kvh = kv0; kvh < kv0 + per; kvh++)
            attention_backward_kv(dqkv, dout, out, lse, qkv, a, b, kvh, T, scr, part, &q, &cnt);
    }
    free(scr);
    round_end(&cnt, &q);
}

/* ---- the loss, the token embedding's gradient -------------------------------- */

/* Softmax and cross-entropy per row: probs (N,V), losses (N) (with targets). */
static void softmax_crossentropy_forward(float *probs, float *losses, const float *logits, const int32_t *targets,
                                         int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float *l = logits + (int64_t)i * V;
        float *p = probs + (int64_t)i * V;
        vf mv = vsplat(-INFINITY);
        int v = 0;
        for (; v + VL <= V; v += VL) mv = vmax(mv, vload(l + v));
        float maxv = -INFINITY;
        for (int k = 0; k < VL; k++) maxv = mv[k] > maxv ? mv[k] : maxv;
        for (int k = v; k < V; k++) maxv = l[k] > maxv ? l[k] : maxv;
        vf sv = vsplat(0.0f);
        for (v = 0; v + VL <= V; v += VL) {
            const vf e = vexp_nonpos(vload(l + v) - maxv);
            vstore(p + v, e);
            sv += e;
        }
        float sum = vsum(sv);
        for (; v < V; v++) sum += p[v] = qpm_exp_nonpos(l[v] - maxv);
        const float inv = 1.0f / sum;
        for (v = 0; v + VL <= V; v += VL) vstore(p + v, vload(p + v) * inv);
        for (; v < V; v++) p[v] *= inv;
        /* -log p_target, without the rounding of p */
        if (targets) losses[i] = logf(sum) - (l[targets[i]] - maxv);
    }
}

/* The loss gradient in place of the probabilities: (p - onehot) * dloss. */
static void softmax_crossentropy_backward(float *probs, const int32_t *targets, float dloss, int N, int V)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        float *p = probs + (int64_t)i * V;
        int v = 0;
        for (; v + VL <= V; v += VL) vstore(p + v, vload(p + v) * dloss);
        for (; v < V; v++) p[v] *= dloss;
        p[targets[i]] -= dloss;
    }
}


/* Token (and, when dwpe is not NULL, position) embeddings' gradients:
 * dwte[inp] += dres, dwpe[t] += dres, by channel slices so that every sum
 * runs in (b,t) order. */
static void encoder_backward(float *dwte, float *dwpe, const float *dres, const int32_t *inp, int N, int T, int C)
{
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += VL) {
        const int nc = C - c0 < VL ? C - c0 : VL;
        for (int i = 0; i < N; i++) {
            const float *d = dres + (int64_t)i * C + c0;
            float *te = dwte + (int64_t)inp[i] * C + c0;
            for (int c = 0; c < nc; c++) te[c] += d[c];
            if (!dwpe) continue;
            float *pe = dwpe + (int64_t)(i % T) * C + c0;
            for (int c = 0; c < nc; c++) pe[c] += d[c];
        }
    }
}

/* The mean of the per-position losses (summed in double, in order) as the
 * model's mean_loss; -1 without targets. */
static void set_mean_loss(qp_gpt *m, const float *losses, const int32_t *targets, int N)
{
    if (!targets) {
        m->mean_loss = -1.0f;
        return;
    }
    double s = 0.0;
    for (int i = 0; i < N; i++) s += losses[i];
    m->mean_loss = (float)(s / N);
}

/* ---- the precision dispatch -------------------------------------------------- */

/* r when the producer of operand o of GEMM g in `layer` writes it
 * quantized (qp_linear_takes_rounded, r filled in), else NULL: also when the
 * model observes the GEMMs' inputs this step (its statistics are of the
 * values before quantization) or QP_PRODUCER_ROUNDING=off
 * (qp_model_producer_rounding). */
static inline qp_linear_rounded *rounds_operand(const qp_gpt *m, const qp_linear *lin, int layer, qp_gemm_id g,
                                                qp_operand o, qp_linear_rounded *r)
{
    return !m->observe && qp_model_producer_rounding() && qp_linear_takes_rounded(lin, layer, g, o, r) ? r : NULL;
}

/* The phase profile (qp_prof.h): each layer call counts for its phase; the
 * dispatch's own time is quantization, the GEMMs inside it count as GEMM. */
#define PHASE(p, call) (qp_prof_push(p), call, qp_prof_pop())

/* Y = X W^T through the dispatch; a block GEMM's input's statistics go to
 * the model's observer first when it observes (qp_gpt.observe). */
static int linear_forward(qp_gpt *m, qp_linear *lin, int layer, qp_gemm_id g, float *Y, const float *X,
                          const qp_linear_rounded *x_rounded, const float *W, int M, int IC, int OC)
{
    qp_prof_push(QP_PHASE_QUANT);
    if (m->observe && m->on_input && g != QP_GEMM_HEAD) {
        qp_outlier_row row;
        qp_outlier_stats(X, M, IC, m->ocols, m->oscratch, &row);
        row.step = -1, row.layer = layer, row.gemm = qp_gemm_name(g);
        m->on_input(&row, m->observer_user);
    }
    const int rc = qp_linear_forward_rounded(lin, layer, g, Y, X, x_rounded, W, NULL, M, IC, OC);
    qp_prof_pop();
    return rc;
}

static int linear_backward(qp_linear *lin, int layer, qp_gemm_id g, float *dX, float *dW, const float *dY,
                           const qp_linear_rounded *dy_rounded, const float *X, const float *W, int M, int IC, int OC,
                           int dx_accumulate)
{
    qp_prof_push(QP_PHASE_QUANT);
    const int rc =
        qp_linear_backward_rounded(lin, layer, g, dX, dW, NULL, dY, dy_rounded, X, W, M, IC, OC, dx_accumulate);
    qp_prof_pop();
    return rc;
}

/* A GEMM's operands in a pass (qp_model_pass.h's QP_STEP_LINEAR): the
 * forward's Y (M,OC) = X (M,IC) W^T, the backward's dX (+)= dY W (+= when
 * dx_accumulate: a second GEMM of the same input) and dW += dY^T X. */
typedef struct {
    float *Y;
    const float *X, *W;
    float *dX, *dW;
    const float *dY;
    int IC, OC, dx_accumulate;
} qp_model_gemm;

static inline int model_linear_forward(qp_gpt *m, qp_linear *lin, int layer, qp_gemm_id g, qp_model_gemm op,
                                       const qp_linear_rounded *x_rounded, int M)
{
    return linear_forward(m, lin, layer, g, op.Y, op.X, x_rounded, op.W, M, op.IC, op.OC);
}

static inline int model_linear_backward(qp_linear *lin, int layer, qp_gemm_id g, qp_model_gemm op,
                                        const qp_linear_rounded *dy_rounded, int M)
{
    return linear_backward(lin, layer, g, op.dX, op.dW, op.dY, dy_rounded, op.X, op.W, M, op.IC, op.OC,
                           op.dx_accumulate);
}

#endif
