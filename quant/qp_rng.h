/* qp_rng.h — counter-based random numbers (Philox-4x32-10).
 *
 * Owns: every random number the quantizers use. A value depends only on
 * (seed, counter), never on call order or thread count, so stochastic rounding
 * of element i of a tensor is reproducible on any number of threads and, with
 * the same generator in kernels/, on the GPU. */
#ifndef QP_RNG_H
#define QP_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Four 32-bit outputs of Philox-4x32 with 10 rounds for a 128-bit counter
 * (ctr_lo, ctr_hi) and 64-bit key (seed). */
void qp_philox4x32(uint64_t seed, uint64_t ctr_lo, uint64_t ctr_hi, uint32_t out[4]);

/* The random word for element index i of stream `stream` under `seed`:
 * word i%4 of philox(seed, counter = (i/4, stream)). */
uint32_t qp_rng_u32(uint64_t seed, uint64_t stream, uint64_t i);

#ifdef __cplusplus
}
#endif
#endif
