/* qp_rng.h — counter-based random numbers (Philox-4x32-10).
 *
 * Owns: every random number the quantizers use. A value depends only on
 * (seed, counter), never on call order or thread count, so stochastic rounding
 * of element i of a tensor is reproducible on any number of threads and on the
 * GPU, which compiles the same code (qp_core.h):
 *   qp_philox4x32(seed, ctr_lo, ctr_hi, out[4])  four 32-bit outputs of
 *       Philox-4x32-10 for the 128-bit counter (ctr_lo, ctr_hi) and key seed
 *   qp_rng_u32(seed, stream, i)  raw word i of a stream: word i%4 of
 *       philox(seed, counter = (i/4, stream))
 *   qp_sr_word(seed, stream, g, bits)  stochastic rounding's word for element
 *       g: `bits` bits (qp_sr_bits: 16 for BF16, 8 for the 8-bit and smaller
 *       codecs, the shares of Blackwell's cvt.rs) from raw word g/(32/bits),
 *       so one Philox call serves 8 or 16 elements
 * Checked against Random123's published known-answer vectors (test_format). */
#ifndef QP_RNG_H
#define QP_RNG_H

#include "qp_core.h"

#endif
