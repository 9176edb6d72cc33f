/* qp_test.h — the few macros every C unit test uses. A test binary counts
 * checks and ends with "N passed, N failed"; it exits non-zero on any failure. */
#ifndef QP_TEST_H
#define QP_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int qp_test_passed, qp_test_failed;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (cond) {                                                       \
            qp_test_passed++;                                             \
        } else {                                                          \
            qp_test_failed++;                                             \
            if (qp_test_failed <= 30) {                                   \
                fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
                fprintf(stderr, __VA_ARGS__);                             \
                fputc('\n', stderr);                                      \
            }                                                             \
        }                                                                 \
    } while (0)

static inline int qp_same_float(float a, float b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

static inline int qp_test_finish(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, qp_test_passed, qp_test_failed);
    return qp_test_failed ? 1 : 0;
}

/* Deterministic test data: xorshift64* and a Box-Muller normal. */
static inline unsigned long long qp_test_next(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}
static inline double qp_test_uniform(unsigned long long *s) { return (qp_test_next(s) >> 11) * (1.0 / 9007199254740992.0); }
static inline float qp_test_normal(unsigned long long *s)
{
    const double u = qp_test_uniform(s) + 1e-300, v = qp_test_uniform(s);
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

#endif
