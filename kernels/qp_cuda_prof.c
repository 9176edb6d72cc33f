/* qp_cuda_prof.c — per-phase GPU time from events at phase changes (see qp_cuda_prof.h). */
#include "qp_cuda_prof.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

enum { kEvents = 4096 }; /* marks between two collections (a GPT-2-small step makes ~800) */

static const char *const kNames[QP_PH_COUNT] = {
    [QP_PH_GEMM] = "gemm",           [QP_PH_QUANT] = "quantize",   [QP_PH_ATTENTION] = "attention",
    [QP_PH_LAYERNORM] = "layernorm", [QP_PH_POINTWISE] = "pointwise", [QP_PH_EMBED_LOSS] = "embed+loss",
    [QP_PH_OPTIMIZER] = "optimizer", [QP_PH_HOST] = "host",
};
_Static_assert(sizeof kNames / sizeof kNames[0] == QP_PH_COUNT, "a name per phase");

struct qp_cuda_prof {
    cudaStream_t stream;
    cudaEvent_t ev[kEvents];
    qp_cuda_phase ph[kEvents];
    int n;          /* marks recorded since the last collection (mark 0 may be the open one carried over) */
    bool overflow;  /* marks dropped: the period is not counted */
    bool broken;
    double ms[QP_PH_COUNT];
    long steps;
};

const char *qp_cuda_phase_name(qp_cuda_phase ph)
{
    return (unsigned)ph < QP_PH_COUNT ? kNames[ph] : "?";
}

qp_cuda_prof *qp_cuda_prof_create(void *stream)
{
    qp_cuda_prof *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->stream = (cudaStream_t)stream;
    for (int i = 0; i < kEvents; i++)
        if (cudaEventCreate(&p->ev[i]) != cudaSuccess) {
            for (int k = 0; k < i; k++) cudaEventDestroy(p->ev[k]);
            free(p);
            cudaGetLastError();
            return NULL;
        }
    return p;
}

void qp_cuda_prof_destroy(qp_cuda_prof *p)
{
    if (!p) return;
    for (int i = 0; i < kEvents; i++) cudaEventDestroy(p->ev[i]);
    free(p);
}

void qp_cuda_prof_mark(qp_cuda_prof *p, qp_cuda_phase ph)
{
    if (!p || p->broken || (p->n > 0 && p->ph[p->n - 1] == ph)) return;
    if (p->n == kEvents) {
        p->overflow = true;
        return;
    }
    if (cudaEventRecord(p->ev[p->n], p->stream) != cudaSuccess) {
        p->broken = true;
        return;
    }
    p->ph[p->n++] = ph;
}

int qp_cuda_prof_collect(qp_cuda_prof *p, int count)
{
    if (!p || p->broken) return p ? -1 : 0;
    count = count && !p->overflow;
    for (int i = 0; i + 1 < p->n; i++) {
        float t = 0.0f;
        if (cudaEventElapsedTime(&t, p->ev[i], p->ev[i + 1]) != cudaSuccess) {
            p->broken = true;
            return -1;
        }
        if (count) p->ms[p->ph[i]] += t;
    }
    if (count) p->steps++;
    if (p->n > 1) { /* the last mark opens the next period */
        cudaEvent_t e = p->ev[0];
        p->ev[0] = p->ev[p->n - 1], p->ph[0] = p->ph[p->n - 1];
        p->ev[p->n - 1] = e;
    }
    p->n = p->n > 0 ? 1 : 0;
    p->overflow = false;
    return 0;
}

double qp_cuda_prof_ms(const qp_cuda_prof *p, qp_cuda_phase ph)
{
    if (!p || p->steps == 0 || (unsigned)ph >= QP_PH_COUNT) return NAN;
    return p->ms[ph] / (double)p->steps;
}

void qp_cuda_prof_report(const qp_cuda_prof *p, char *buf, size_t n)
{
    if (!p || p->steps == 0) {
        snprintf(buf, n, "no profiled steps%s", p && p->broken ? " (a CUDA error stopped the profile)" : "");
        return;
    }
    double total = 0.0;
    for (int i = 0; i < QP_PH_COUNT; i++) total += p->ms[i];
    total /= (double)p->steps;
    size_t at = (size_t)snprintf(buf, n, "%ld steps, %.2f ms/step:", p->steps, total);
    for (int i = 0; i < QP_PH_COUNT && at < n; i++) {
        const double ms = p->ms[i] / (double)p->steps;
        at += (size_t)snprintf(buf + at, n - at, " %s %.2f (%.0f%%)%s", kNames[i], ms,
                                    total > 0 ? 100.0 * ms / total : 0.0, i + 1 < QP_PH_COUNT ? "," : "");
    }
}
