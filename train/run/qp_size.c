/* qp_size.c — sizing by compute (see qp_size.h). */
#include "qp_size.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Small GPTs for CPU studies: widths 32, 64, 96, 128 at depth 2 (two
 * blocks, so NVIDIA's NVFP4 recipe, which keeps the last ~15% of blocks and
 * at least one in BF16, still quantizes one; pico -> micro spans 8.8x), the
 * nanoGPT baby model and one 4x larger. */
const qp_model_preset qp_model_presets[QP_N_MODEL_PRESETS] = {
    [0] = {"pico", 2, 4, 32},   /* N =    25,472 */
    [1] = {"nano", 2, 4, 64},   /* N =   100,096 */
    [2] = {"micro", 2, 4, 96},  /* N =   223,872 */
    [3] = {"mini", 2, 4, 128},  /* N =   396,800 */
    [4] = {"baby", 4, 4, 128},  /* N =   793,344 (nanoGPT's baby Shakespeare model) */
    [5] = {"small", 4, 4, 256}, /* N = 3,159,552 */
};
_Static_assert(sizeof qp_model_presets / sizeof qp_model_presets[0] == QP_N_MODEL_PRESETS, "preset table");

int64_t qp_size_nonembedding(int layers, int dim)
{
    const int64_t C = dim;
    return (int64_t)layers * (12 * C * C + 13 * C) + 2 * C;
}

int64_t qp_size_steps(double tokens_per_param, int64_t nonembedding, int64_t tokens_per_step)
{
    if (!(tokens_per_param > 0) || !isfinite(tokens_per_param) || nonembedding < 1 || tokens_per_step < 1) return -1;
    const double s = nearbyint(tokens_per_param * (double)nonembedding / (double)tokens_per_step);
    if (s > 1099511627776.0) return -1;
    return s < 1 ? 1 : (int64_t)s;
}

int qp_size_model(const char *value, int layers, int heads, qp_model_preset *out, char *err, size_t errlen)
{
    for (int i = 0; i < QP_N_MODEL_PRESETS; i++)
        if (!strcmp(value, qp_model_presets[i].name)) {
            *out = qp_model_presets[i];
            return 0;
        }
    char *end;
    errno = 0;
    double n = strtod(value, &end);
    if (end != value && (*end == 'k' || *end == 'K')) n *= 1e3, end++;
    else if (end != value && *end == 'M') n *= 1e6, end++;
    if (end == value || *end || errno || !isfinite(n) || n < 1000 || n > 1e11) {
        char names[256] = "";
        for (int i = 0; i < QP_N_MODEL_PRESETS; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", qp_model_presets[i].name);
        snprintf(err, errlen, "model '%s': expected a preset (%s) or a non-embedding parameter count "
                 "from 1000 to 1e11 (e.g. 100k, 0.4M)", value, names);
        return -1;
    }
    if (layers < 1 || heads < 1) {
        snprintf(err, errlen, "model '%s': needs layers and heads >= 1", value);
        return -1;
    }
    /* widths that are multiples of 32 (whole MX blocks) and of heads */
    int g = 32, h = heads;
    while (h) {
        const int t = g % h;
        g = h, h = t;
    }
    const int step = 32 / g * heads; /* lcm(32, heads) */
    int best = 0;
    double best_d = INFINITY;
    for (int c = step; c <= 65536; c += step) {
        const double d = fabs(log((double)qp_size_nonembedding(layers, c) / n));
        if (d < best_d) best_d = d, best = c;
        if ((double)qp_size_nonembedding(layers, c) > n) break;
    }
    *out = (qp_model_preset){value, layers, heads, best};
    return 0;
}
