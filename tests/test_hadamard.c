/* test_hadamard.c — the 16-point random Hadamard transform: orthogonality
 * (inverse restores x), products of rotated operands equal the originals'
 * (the property the NVFP4 wgrad GEMM relies on), agreement with an explicit
 * H16 * diag(s) / 4 matrix, seed dependence, and bad shapes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_hadamard.h"
#include "qp_test.h"

static int popcount(unsigned v) { return __builtin_popcount(v); }

int main(void)
{
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
        unsetenv("QP_SIMD");
        qp_rht16_inverse(v1, R, K2, 99);
        CHECK(memcmp(v1, v2, sizeof v1) == 0, "vector inverse == scalar inverse");
    }

    float bad[20];
    CHECK(qp_rht16(bad, 1, 20, 1) == -1 && qp_rht16_inverse(bad, 1, 20, 1) == -1, "cols %% 16 != 0 rejected");
    return qp_test_finish("test_hadamard");
}
