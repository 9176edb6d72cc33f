/* qp_cuda_prof.c — per-phase GPU time from events at phase changes (see qp_cuda_prof.h). */
#include "qp_cuda_prof.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

enum { kEvents = 4096 }; /* marks between two collections (a GPT-2-small step makes ~800) */


struct qp_cuda_prof {
    cudaStream_t stream;
    cudaEvent_t ev[kEvents];
    int ph[kEvents];
    int n;          /* marks recorded since the last collection (mark 0 may be the open one carried over) */
    bool overflow;  /* marks dropped: the period is not counted */
    bool broken;
    double ms[QP_PH_COUNT];
    double last[QP_PH_COUNT]; /* the last collected period; NaN when it was not measured */
    long steps;
};

const char *qp_cuda_phase_name(int ph) { return ph == QP_PH_HOST ? "host" : qp_phase_name((qp_phase)ph); }

qp_cuda_prof *qp_cuda_prof_create(void *stream)
{
    qp_cuda_prof *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->stream = (cudaStream_t)stream;
    for (int i = 0; i < QP_PH_COUNT; i++) p->last[i] = NAN;
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

void qp_cuda_prof_mark(qp_cuda_prof *p, int ph)
{
    if (!p || (unsigned)ph >= QP_PH_COUNT || p->broken || (p->n > 0 && p->ph[p->n - 1] == ph)) return;
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
    const bool measured = !p->overflow;
    count = count && measured;
    for (int i = 0; i < QP_PH_COUNT; i++) p->last[i] = measured ? 0.0 : NAN;
    for (int i = 0; i + 1 < p->n; i++) {
        float t = 0.0f;
        if (cudaEventElapsedTime(&t, p->ev[i], p->ev[i + 1]) != cudaSuccess) {
            p->broken = true;
            for (int k = 0; k < QP_PH_COUNT; k++) p->last[k] = NAN;
            return -1;
        }
        if (measured) p->last[p->ph[i]] += t;
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

double qp_cuda_prof_ms(const qp_cuda_prof *p, int ph)
{
    if (!p || p->steps == 0 || (unsigned)ph >= QP_PH_COUNT) return NAN;
    return p->ms[ph] / (double)p->steps;
}

void qp_cuda_prof_last(const qp_cuda_prof *p, double ms[QP_PHASE_COUNT])
{
    for (int i = 0; i < QP_PHASE_COUNT; i++) ms[i] = p && !p->broken ? p->last[i] : NAN;
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
    const char *sep = "";
    for (int i = 0; i < QP_PH_COUNT && at < n; i++) {
        if (i == QP_PHASE_DATA || (i == QP_PHASE_COMM && p->ms[i] == 0.0)) continue; /* not GPU phases / unused */
        const double ms = p->ms[i] / (double)p->steps;
        at += (size_t)snprintf(buf + at, n - at, "%s %s %.2f (%.0f%%)", sep, qp_cuda_phase_name(i), ms,
                               total > 0 ? 100.0 * ms / total : 0.0);
        sep = ",";
    }
}
