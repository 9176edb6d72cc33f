/* qp_optim.c — AdamW, schedule and clipping (see qp_optim.h). */
#include "qp_optim.h"

#include <math.h>

double qp_lr_at(const qp_optim_cfg *c, int64_t step)
{
    if (step < c->warmup) return c->lr * (double)(step + 1) / (double)c->warmup;
    if (step >= c->steps) return c->min_lr;
    const double span = (double)(c->steps - c->warmup);
    const double progress = span > 0 ? (double)(step - c->warmup) / span : 1.0;
    return c->min_lr + 0.5 * (1.0 + cos(M_PI * progress)) * (c->lr - c->min_lr);
}

double qp_grad_norm(const float *g, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)g[i] * g[i];
    return sqrt(s);
}

void qp_adamw_step(const qp_optim_cfg *c, float *params, const float *grads, float *m, float *v, const int64_t *sizes,
                   const int *decays, int ntensors, int64_t t, double lr, float clip_scale)
{
    const float b1 = (float)c->beta1, b2 = (float)c->beta2, eps = (float)c->eps;
    const float bc1 = 1.0f - powf(b1, (float)t), bc2 = 1.0f - powf(b2, (float)t);
    const float flr = (float)lr;
    int64_t off = 0;
    for (int k = 0; k < ntensors; k++) {
        const float wd = decays[k] ? (float)c->weight_decay : 0.0f;
#pragma omp parallel for schedule(static)
        for (int64_t i = off; i < off + sizes[k]; i++) {
            const float g = grads[i] * clip_scale;
            const float mi = b1 * m[i] + (1.0f - b1) * g;
            const float vi = b2 * v[i] + (1.0f - b2) * g * g;
            m[i] = mi;
            v[i] = vi;
            const float mhat = mi / bc1, vhat = vi / bc2;
            params[i] -= flr * (mhat / (sqrtf(vhat) + eps) + wd * params[i]);
        }
        off += sizes[k];
    }
}
