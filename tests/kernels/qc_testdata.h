/* qc_testdata.h — the random and adversarial tensors the kernel tests share
 * (test_qcore.c on the CPU, test_cuda_quant.cu on the GPU): C and C++. Needs
 * qp_test.h first. */
#ifndef QC_TESTDATA_H
#define QC_TESTDATA_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "qp_format.h"

enum { RANDOM, TIES, SUBNORMAL, BOUNDARY, SPECIAL, ZEROS, HUGE_AMAX, TINY_AMAX, NKINDS };
static const char *const kind_names[NKINDS] = {"random", "ties", "subnormal", "boundary", "special", "zeros", "huge", "tiny"};

/* Exact midpoints of the E4M3 / E5M2 / E2M1 grids (normal and subnormal),
 * times a power of two (MX scales and scale 1 keep them ties). */
static float tie_value(unsigned long long *s)
{
    static const float ties[] = {
        /* E4M3: between 1 and 1.125, 1.125 and 1.25, 240/256 (even/odd), subnormal 1/512 steps */
        1.0625f, 1.1875f, 1.9375f, 248.0f, 464.0f, 432.0f, 3.0f / 1024.0f, 1.0f / 1024.0f, 0.0146484375f,
        /* E5M2 */ 1.125f, 1.375f, 1.875f, 61440.0f, 53248.0f,
        /* E2M1 */ 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
    const float v = ties[qp_test_next(s) % (sizeof ties / sizeof ties[0])];
    const int e = qp_test_next(s) % 4 == 0 ? (int)(qp_test_next(s) % 9) - 4 : 0;
    const float t = ldexpf(v, e);
    return qp_test_next(s) & 1 ? -t : t;
}

static void fill(float *x, int64_t n, int64_t cols, int kind, unsigned long long seed)
{
    unsigned long long s = seed;
    for (int64_t i = 0; i < n; i++) {
        const float g = qp_test_normal(&s);
        const uint32_t r = (uint32_t)qp_test_next(&s);
        switch (kind) {
        case RANDOM: x[i] = g * (i % 13 == 0 ? 30.0f : 1.0f); break;
        case TIES: x[i] = r % 4 ? tie_value(&s) : g; break;
        case SUBNORMAL:
            x[i] = (r & 3) == 0 ? qp_bits_f32(r & 0x807FFFFFu) : g * ldexpf(1.0f, -(int)(r % 30) - 5);
            if ((i / 32) % 3 == 1) x[i] = qp_bits_f32(r & (0x800FFFFFu >> (r % 8)));
            break;
        case BOUNDARY: {
            /* at and just above the element maxima, the power-of-two edges */
            static const float edges[] = {448.0f,  448.00003f, 449.0f,  480.0f,   6.0f,     6.0000005f, 6.5f,
                                          57344.0f, 57344.004f, 61439.996f, 1.0f, 0.99999994f, 2688.0f, 2688.0002f,
                                          7.0f,    3.5f};
            const float e = edges[r % (sizeof edges / sizeof edges[0])];
            x[i] = ldexpf(e, (int)(qp_test_next(&s) % 9) - 4) * (g < 0 ? -1.0f : 1.0f);
            if (i % 3 == 1) x[i] = e * (g < 0 ? -1.0f : 1.0f);
            if (i % 3 == 2) x[i] *= 0.25f * g;
            break;
        }
        case SPECIAL: {
            static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX, FLT_MIN,
                                             1e-45f, 1.0f};
            x[i] = (r % 6 == 0) ? specials[qp_test_next(&s) % (sizeof specials / sizeof specials[0])] : g;
            break;
        }
        case ZEROS: {
            /* whole zero blocks and rows, -0 rows, some live values */
            const int64_t row = i / cols, blk = (i % cols) / 16;
            x[i] = (row % 3 == 0 || blk % 2 == 0) ? ((row % 5 == 1) ? -0.0f : 0.0f) : g;
            break;
        }
        case HUGE_AMAX:
            x[i] = g * 3e37f;
            if (r % 50 == 0) x[i] = r & 1 ? FLT_MAX : -FLT_MAX;
            if (r % 50 == 1) x[i] = 3.4e38f;
            break;
        default: /* TINY_AMAX: amax around 1e-40 .. 1e-36 */
            x[i] = g * ldexpf(1.0f, -125 - (int)(r % 20));
            break;
        }
    }
}

#endif
