/* qp_hadamard.c — 16-point random Hadamard transform (see qp_hadamard.h),
 * computed with the fast Walsh-Hadamard butterfly (H16 is symmetric). */
#include "qp_hadamard.h"

#include "qp_rng.h"

void qp_rht_signs(uint64_t seed, float signs[16])
{
    uint32_t r[4];
    qp_philox4x32(seed, 0, 0, r);
    for (int i = 0; i < 16; i++) signs[i] = (r[0] >> i) & 1u ? -1.0f : 1.0f;
}

static void fwht16(float *v)
{
    for (int h = 1; h < 16; h <<= 1)
        for (int i = 0; i < 16; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                const float a = v[j], b = v[j + h];
                v[j] = a + b;
                v[j + h] = a - b;
            }
}

int qp_rht16(float *x, int64_t rows, int64_t cols, uint64_t seed)
{
    if (cols % 16) return -1;
    float s[16];
    qp_rht_signs(seed, s);
    for (int64_t i = 0; i < rows * cols; i += 16) {
        float *v = x + i;
        fwht16(v);                                   /* y = H x */
        for (int j = 0; j < 16; j++) v[j] *= 0.25f * s[j]; /* y = diag(s) H x / 4 */
    }
    return 0;
}

int qp_rht16_inverse(float *x, int64_t rows, int64_t cols, uint64_t seed)
{
    if (cols % 16) return -1;
    float s[16];
    qp_rht_signs(seed, s);
    for (int64_t i = 0; i < rows * cols; i += 16) {
        float *v = x + i;
        for (int j = 0; j < 16; j++) v[j] *= s[j];  /* x = H diag(s) y / 4 */
        fwht16(v);
        for (int j = 0; j < 16; j++) v[j] *= 0.25f;
    }
    return 0;
}
