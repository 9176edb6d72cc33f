/* qp_stats.h — the few statistics the figures need.
 *
 * Owns: how a loss curve is smoothed and how a throughput series is
 * summarised, so every figure (and the gap between two runs) uses the same
 * definitions. */
#ifndef QP_STATS_H
#define QP_STATS_H

#include <stddef.h>

/* Exponential moving average with TensorBoard's bias correction:
 *   m_t = a*m_{t-1} + (1-a)*x_t (m_{-1} = 0),  out_t = m_t / (1 - a^(k+1))
 * where k counts the finite inputs so far. Without the correction the first
 * points would be pulled towards 0; with it out_0 = x_0. Non-finite inputs
 * (a diverged step) leave the average alone and repeat the last value (NaN
 * before the first finite one). a = 0 copies x. out may alias x. */
void qp_ema(const double *x, size_t n, double a, double *out);

/* Quantile q in [0, 1] of the finite values of x (linear interpolation
 * between order statistics, numpy's default); NaN when none is finite. */
double qp_quantile(const double *x, size_t n, double q);

#endif
