/* qp_rng_cache.h — the stochastic-rounding word cache, written once and
 * compiled into each instruction set's file.
 *
 * Owns: runs of raw Philox words (qp_rng_u32's: word i%4 of counter i/4)
 * kept two at a time, by the parity of the run's index, so a row that
 * starts at any offset, and reads across the end of a run, computes each
 * run once. The ISA file (qp_simd_avx2.c, qp_simd_avx512.c) defines before
 * including it:
 *   QP_RNG_UNIT     the type a run is stored in (uint32_t, __m512i)
 *   QP_RNG_UNITS    units per run
 *   QP_RNG_TARGET   the ISA's target attribute string
 *   QP_RNG_INLINE   the ISA's always-inline function prefix
 *   QP_RNG_FILL     its function (keys, stream, g, out[QP_RNG_UNITS]) that
 *                   writes run g of the stream
 * and gets rng_cache, rng_init(c, seed, stream) and rng_run(c, g): run g's
 * words. Each ISA file includes it once (no include guard: one cache per
 * instruction set, with that set's vectors). */

typedef struct {
    uint64_t stream;
    uint32_t keys[20];
    uint64_t run[2]; /* the run held in each slot (UINT64_MAX: none) */
    QP_RNG_UNIT w[2][QP_RNG_UNITS];
} rng_cache;

QP_RNG_INLINE void rng_init(rng_cache *c, uint64_t seed, uint64_t stream)
{
    qp_philox_keys(seed, c->keys);
    c->stream = stream;
    c->run[0] = c->run[1] = UINT64_MAX;
}

/* Out of line: one call per run, and inlined at every use it would bloat
 * the row loops past the instruction cache. */
__attribute__((target(QP_RNG_TARGET), noinline)) static void rng_fill(rng_cache *c, uint64_t g)
{
    const int s = (int)(g & 1);
    QP_RNG_FILL(c->keys, c->stream, g, c->w[s]);
    c->run[s] = g;
}

QP_RNG_INLINE const QP_RNG_UNIT *rng_run(rng_cache *c, uint64_t g)
{
    const int s = (int)(g & 1);
    if (c->run[s] != g) rng_fill(c, g);
    return c->w[s];
}
