/* qp_optim.c — AdamW, schedule and clipping (see qp_optim.h). */
#include "qp_optim.h"

#include <math.h>
#include <stdlib.h>

double qp_lr_at(const qp_optim_cfg *c, int64_t step)
{
    if (step < c->warmup) return c->lr * (double)(step + 1) / (double)c->warmup;
    if (step >= c->steps) return c->min_lr;
    const double span = (double)(c->steps - c->warmup);
    const double progress = span > 0 ? (double)(step - c->warmup) / span : 1.0;
    return c->min_lr + 0.5 * (1.0 + cos(M_PI * progress)) * (c->lr - c->min_lr);
}

/* Both loops below run over fixed chunks of the flat parameter array, so a
 * step is one parallel region and its results do not depend on the thread
 * count. */
#define CHUNK 16384

double qp_grad_norm(const float *g, int64_t n)
{
    /* per chunk: 8 running sums in double, combined by a fixed tree; chunks in order */
    const int64_t nch = (n + CHUNK - 1) / CHUNK;
    double stack_part[64], *part = nch <= 64 ? stack_part : malloc((size_t)nch * sizeof(double));
    if (!part) { /* no memory for the partial sums: the same sums, one thread */
        double s = 0.0;
        for (int64_t i = 0; i < n; i++) s += (double)g[i] * g[i];
        return sqrt(s);
    }
#pragma omp parallel for schedule(static)
    for (int64_t ch = 0; ch < nch; ch++) {
        const int64_t lo = ch * CHUNK, hi = lo + CHUNK < n ? lo + CHUNK : n;
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = lo;
        for (; i + 8 <= hi; i += 8)
            for (int j = 0; j < 8; j++) acc[j] += (double)g[i + j] * g[i + j];
        for (; i < hi; i++) acc[0] += (double)g[i] * g[i];
        part[ch] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
    double s = 0.0;
    for (int64_t ch = 0; ch < nch; ch++) s += part[ch];
    if (part != stack_part) free(part);
    return sqrt(s);
}

void qp_adamw_step(const qp_optim_cfg *c, float *params, const float *grads, float *m, float *v, const int64_t *sizes,
                   const int *decays, int ntensors, int64_t t, double lr, float clip_scale)
{
    const float b1 = (float)c->beta1, b2 = (float)c->beta2, eps = (float)c->eps;
    const float bc1 = 1.0f - powf(b1, (float)t), bc2 = 1.0f - powf(b2, (float)t);
    const float flr = (float)lr;
    int64_t n = 0;
    for (int k = 0; k < ntensors; k++) n += sizes[k];
    const int64_t nch = (n + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static)
    for (int64_t ch = 0; ch < nch; ch++) {
        const int64_t lo = ch * CHUNK, hi = lo + CHUNK < n ? lo + CHUNK : n;
        int k = 0;
        int64_t off = 0;
        while (off + sizes[k] <= lo) off += sizes[k++]; /* the tensor holding lo */
        for (int64_t a = lo; a < hi; off += sizes[k++]) {
            const int64_t b = off + sizes[k] < hi ? off + sizes[k] : hi;
            const float wd = decays[k] ? (float)c->weight_decay : 0.0f;
#pragma omp simd
            for (int64_t i = a; i < b; i++) {
                const float g = grads[i] * clip_scale;
                const float mi = b1 * m[i] + (1.0f - b1) * g;
                const float vi = b2 * v[i] + (1.0f - b2) * g * g;
                m[i] = mi;
                v[i] = vi;
                const float mhat = mi / bc1, vhat = vi / bc2;
                params[i] -= flr * (mhat / (sqrtf(vhat) + eps) + wd * params[i]);
            }
            a = b;
        }
    }
}
