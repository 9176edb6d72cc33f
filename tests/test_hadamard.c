/* test_hadamard.c — random Hadamard transforms: the 16-point one's
 * orthogonality (inverse restores x), products of rotated operands equal the
 * originals' (the property the NVFP4 wgrad GEMM relies on), agreement with an
 * explicit H16 * diag(s) / 4 matrix, seed dependence and bad shapes; its bits
 * equal the transform as it was before the sizes were generalized; and for
 * n = 16, 32, 64, 128: against a dense normalized Hadamard matrix
 * H_n diag(s) / sqrt(n) built here from its definition (H_ij = (-1)^popcount(i&j)),
 * the inverse, the product identity, the vector path against the scalar one,
 * and bad sizes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_hadamard.h"
#include "qp_quant.h"
#include "qp_test.h"

static int popcount(unsigned v) { return __builtin_popcount(v); }

/* QP_SIMD as the test started (ctest runs it as the CPU allows and with
 * QP_SIMD=avx2): the checks that force the scalar path put it back. */
static char simd_at_start[64];
static int simd_was_set;

static void restore_simd(void)
{
    if (simd_was_set) setenv("QP_SIMD", simd_at_start, 1);
    else unsetenv("QP_SIMD");
}

int main(void)
{
    const char *simd = getenv("QP_SIMD");
    simd_was_set = simd != NULL;
    if (simd) snprintf(simd_at_start, sizeof simd_at_start, "%s", simd);
    unsigned long long s = 11;
    enum { M = 6, N = 5, K = 64 };
    float a[M * K], b[N * K], a0[M * K], b0[N * K];
    for (int i = 0; i < M * K; i++) a0[i] = a[i] = qp_test_normal(&s) * (i % 16 == 3 ? 25.0f : 1.0f);
    for (int i = 0; i < N * K; i++) b0[i] = b[i] = qp_test_normal(&s);

    CHECK(qp_rht16(a, M, K, 7) == 0 && qp_rht16(b, N, K, 7) == 0, "transform");
    /* Explicit matrix: y_j = sum_i x_i R_ij with R = H diag(sign) / 4. */
    float sg[16];
    qp_rht_signs(7, sg);
    double worst = 0;
    for (int r = 0; r < M; r++)
        for (int blk = 0; blk < K / 16; blk++)
            for (int j = 0; j < 16; j++) {
                double y = 0;
                for (int i = 0; i < 16; i++)
                    y += a0[r * K + blk * 16 + i] * ((popcount((unsigned)(i & j)) & 1) ? -1.0 : 1.0) * sg[j] / 4.0;
                worst = fmax(worst, fabs(y - a[r * K + blk * 16 + j]));
            }
    CHECK(worst < 1e-4, "matches the explicit matrix: %g", worst);

    /* (A R)(B R)^T == A B^T. */
    double prod_err = 0, scale = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double p0 = 0, p1 = 0;
            for (int k = 0; k < K; k++) {
                p0 += (double)a0[i * K + k] * b0[j * K + k];
                p1 += (double)a[i * K + k] * b[j * K + k];
            }
            prod_err = fmax(prod_err, fabs(p0 - p1));
            scale = fmax(scale, fabs(p0));
        }
    CHECK(prod_err < 1e-5 * (scale + 1), "product preserved: %g", prod_err);

    /* Outliers are spread: the max magnitude in a rotated block drops. */
    float amax0 = 0, amax1 = 0;
    for (int i = 0; i < 16; i++) amax0 = fmaxf(amax0, fabsf(a0[i])), amax1 = fmaxf(amax1, fabsf(a[i]));
    CHECK(amax1 < amax0, "outlier spread: %g -> %g", amax0, amax1);

    CHECK(qp_rht16_inverse(a, M, K, 7) == 0, "inverse");
    double inv_err = 0;
    for (int i = 0; i < M * K; i++) inv_err = fmax(inv_err, fabs(a[i] - a0[i]));
    CHECK(inv_err < 1e-4, "inverse restores x: %g", inv_err);

    float sg2[16];
    qp_rht_signs(8, sg2);
    CHECK(memcmp(sg, sg2, sizeof sg) != 0, "seed changes the signs");
    int plus = 0;
    for (int i = 0; i < 16; i++) {
        plus += sg[i] > 0;
        CHECK(sg[i] == 1.0f || sg[i] == -1.0f, "sign value");
    }
    CHECK(plus > 0 && plus < 16, "mixed signs");

    /* The vector path gives the scalar path's bits (QP_SIMD=scalar forces it). */
    {
        enum { R = 300, K2 = 64 };
        static float v1[R * K2], v2[R * K2];
        unsigned long long st = 5;
        for (int i = 0; i < R * K2; i++) v1[i] = v2[i] = qp_test_normal(&st) * (i % 7 == 0 ? 1e3f : 1.0f);
        qp_rht16(v1, R, K2, 99);
        setenv("QP_SIMD", "scalar", 1);
        qp_rht16(v2, R, K2, 99);
        CHECK(memcmp(v1, v2, sizeof v1) == 0, "vector RHT == scalar RHT");
        qp_rht16_inverse(v2, R, K2, 99);
        restore_simd();
        qp_rht16_inverse(v1, R, K2, 99);
        CHECK(memcmp(v1, v2, sizeof v1) == 0, "vector inverse == scalar inverse");
    }

    float bad[20];
    CHECK(qp_rht16(bad, 1, 20, 1) == -1 && qp_rht16_inverse(bad, 1, 20, 1) == -1, "cols %% 16 != 0 rejected");

    /* The 16-point transform as it was written before the sizes were
     * generalized (butterflies, then x 0.25 * s_j): the same bits. */
    {
        enum { R = 50, K3 = 48 };
        static float v[R * K3], w[R * K3];
        unsigned long long st = 77;
        for (int i = 0; i < R * K3; i++) v[i] = w[i] = qp_test_normal(&st) * (i % 5 == 0 ? 300.0f : 1.0f);
        float sgn[16];
        qp_rht_signs(1234, sgn);
        for (int i = 0; i < R * K3; i += 16) {
            float *q = w + i;
            for (int h = 1; h < 16; h <<= 1)
                for (int b = 0; b < 16; b += 2 * h)
                    for (int j = b; j < b + h; j++) {
                        const float x0 = q[j], x1 = q[j + h];
                        q[j] = x0 + x1;
                        q[j + h] = x0 - x1;
                    }
            for (int j = 0; j < 16; j++) q[j] *= 0.25f * sgn[j];
        }
        qp_rht16(v, R, K3, 1234);
        CHECK(memcmp(v, w, sizeof v) == 0, "rht16 bit-identical to the original 16-point transform");
    }

    /* Every size against the dense matrix, inverse, products, vector path. */
    for (int n = 16; n <= 128; n *= 2) {
        enum { R = 7, NV = 3 };
        const int K4 = NV * n;
        float *x0 = malloc(sizeof(float) * R * K4), *x = malloc(sizeof(float) * R * K4), *y = malloc(sizeof(float) * R * K4);
        float *sg4 = malloc(sizeof(float) * n);
        unsigned long long st = 1000 + (unsigned)n;
        for (int i = 0; i < R * K4; i++) x0[i] = x[i] = y[i] = qp_test_normal(&st) * (i % 37 == 0 ? 50.0f : 1.0f);
        CHECK(qp_rht(x, R, K4, n, 4321) == 0, "rht %d", n);
        qp_rht_signs_n(4321, n, sg4);
        const double norm = 1.0 / sqrt((double)n);
        double worst = 0;
        for (int r = 0; r < R; r++)
            for (int blk = 0; blk < NV; blk++)
                for (int j = 0; j < n; j++) {
                    double acc = 0;
                    for (int i = 0; i < n; i++)
                        acc += x0[r * K4 + blk * n + i] * ((popcount((unsigned)(i & j)) & 1) ? -1.0 : 1.0) * sg4[j] * norm;
                    worst = fmax(worst, fabs(acc - x[r * K4 + blk * n + j]) / (1.0 + fabs(acc)));
                }
        CHECK(worst < 2e-6, "rht %d: matches the dense normalized Hadamard matrix (worst %g)", n, worst);
        /* the 16 first signs are the 16-point transform's */
        float sg16[16];
        qp_rht_signs(4321, sg16);
        CHECK(memcmp(sg4, sg16, sizeof sg16) == 0, "rht %d: signs extend the 16-point ones", n);
        /* orthogonal: the inverse restores x, norms are kept */
        double n0 = 0, n1 = 0;
        for (int i = 0; i < R * K4; i++) n0 += (double)x0[i] * x0[i], n1 += (double)x[i] * x[i];
        CHECK(fabs(n0 - n1) <= 1e-5 * n0, "rht %d keeps the norm: %g vs %g", n, n0, n1);
        CHECK(qp_rht_inverse(x, R, K4, n, 4321) == 0, "rht %d inverse", n);
        double ie = 0;
        for (int i = 0; i < R * K4; i++) ie = fmax(ie, fabs(x[i] - x0[i]) / (1.0 + fabs(x0[i])));
        CHECK(ie < 1e-5, "rht %d: inverse restores x (%g)", n, ie);
        /* vector path == scalar path, forward and inverse */
        memcpy(x, x0, sizeof(float) * R * K4);
        qp_rht(x, R, K4, n, 99);
        setenv("QP_SIMD", "scalar", 1);
        qp_rht(y, R, K4, n, 99);
        CHECK(memcmp(x, y, sizeof(float) * R * K4) == 0, "rht %d: vector == scalar", n);
        qp_rht_inverse(y, R, K4, n, 99);
        restore_simd();
        qp_rht_inverse(x, R, K4, n, 99);
        CHECK(memcmp(x, y, sizeof(float) * R * K4) == 0, "rht %d: vector inverse == scalar inverse", n);
        /* bad shapes: cols not a multiple of n, nothing changed */
        memcpy(y, x0, sizeof(float) * R * K4);
        CHECK(qp_rht(y, R, K4 - 16, n, 1) == (n == 16 ? 0 : -1), "rht %d: cols %d", n, K4 - 16);
        if (n > 16) CHECK(memcmp(y, x0, sizeof(float) * R * (K4 - 16)) == 0, "rht %d: refused input unchanged", n);
        free(x0), free(x), free(y), free(sg4);
    }
    /* the fused transpose + transform: qp_rht of the plain transpose, bit for bit, vector and scalar paths,
     * with a column count off the vector width (the scalar tail) and one on it; NaN and Inf go through */
    for (int n = 16; n <= 128; n *= 2)
        for (int wide = 0; wide < 2; wide++) {
            const int R = 3 * n, C = wide ? 48 : 37;
            float *src = malloc(sizeof(float) * R * C), *ref = malloc(sizeof(float) * R * C),
                  *got = malloc(sizeof(float) * R * C);
            for (int i = 0; i < R * C; i++) src[i] = (float)sin(0.37 * i) * (1.0f + (float)(i % 13));
            src[5 * C + 3] = NAN, src[n * C + 1] = INFINITY;
            for (int r = 0; r < R; r++)
                for (int c = 0; c < C; c++) ref[c * R + r] = src[r * C + c];
            CHECK(qp_rht(ref, C, R, n, 2024) == 0, "transpose_rht %d: reference", n);
            for (int scalar = 0; scalar < 2; scalar++) {
                if (scalar) setenv("QP_SIMD", "scalar", 1);
                memset(got, 0xA5, sizeof(float) * R * C);
                CHECK(qp_transpose_rht(src, got, R, C, n, 2024) == 0, "transpose_rht %d", n);
                CHECK(memcmp(got, ref, sizeof(float) * R * C) == 0,
                      "transpose_rht %d (%dx%d, %s) == transpose then rht, bit for bit", n, R, C,
                      scalar ? "scalar" : "vector");
                /* the amax from the pass: qp_amax of what it wrote, with NaN/Inf in the tensor and without */
                for (int finite = 0; finite < 2; finite++) {
                    float *s2 = malloc(sizeof(float) * R * C), am = -1.0f;
                    memcpy(s2, src, sizeof(float) * R * C);
                    if (finite) s2[5 * C + 3] = -7.5f, s2[n * C + 1] = 3.25f;
                    memset(got, 0xA5, sizeof(float) * R * C);
                    CHECK(qp_transpose_rht_amax(s2, got, R, C, n, 2024, &am) == 0, "transpose_rht_amax %d", n);
                    const float want = qp_amax(got, (int64_t)R * C);
                    CHECK(qp_f32_bits(am) == qp_f32_bits(want) && want > 0,
                          "transpose_rht_amax %d (%s, %s): amax %.9g == qp_amax of the output %.9g", n,
                          scalar ? "scalar" : "vector", finite ? "finite" : "NaN and Inf", am, want);
                    free(s2);
                }
                restore_simd();
            }
            memset(got, 0xA5, sizeof(float) * R * C);
            memcpy(ref, got, sizeof(float) * R * C);
            CHECK(qp_transpose_rht(src, got, R - 8, C, n, 1) == -1 && qp_transpose_rht(src, got, R, C, 24, 1) == -1,
                  "transpose_rht %d: rows not a multiple of n, or n not a size, refused", n);
            CHECK(memcmp(got, ref, sizeof(float) * R * C) == 0, "transpose_rht %d: refused, nothing written", n);
            free(src), free(ref), free(got);
        }
    static const int bad_n[] = {0, 8, 24, 256, -16};
    for (int i = 0; i < 5; i++)
        CHECK(qp_rht(bad, 1, 16, bad_n[i], 1) == -1 && qp_rht_inverse(bad, 1, 16, bad_n[i], 1) == -1,
              "rht size %d rejected", bad_n[i]);
    return qp_test_finish("test_hadamard");
}
