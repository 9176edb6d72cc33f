/* qp_dist_grads.c — the gradient exchange and its codec (see qp_dist_grads.h). */
#include "qp_dist_grads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qp_dist.h"
#include "qp_format.h"
#include "qp_quant.h"
#include "qp_scaling.h"

#define MAX_TENSORS 64

struct qp_grad_exchange {
    qp_grad_comm kind;
    int ntensors;
    int64_t sizes[MAX_TENSORS], n;
    float *ref, *send; /* FP32 all-reduce for the error measurement; what this rank sends */
    float *ef;         /* error-feedback residual, NULL without */
    uint8_t *payload, *gathered;
};

static int64_t elem_bytes(qp_grad_comm k)
{
    switch (k) {
    case QP_GRAD_COMM_FP32: return 4;
    case QP_GRAD_COMM_BF16: return 2;
    case QP_GRAD_COMM_FP8: return 1;
    case QP_GRAD_COMM_COUNT: break;
    }
    return 4;
}

qp_grad_exchange *qp_grad_exchange_create(qp_grad_comm kind, int ef, const int64_t *sizes, int ntensors)
{
    if ((unsigned)kind >= QP_GRAD_COMM_COUNT || ntensors < 1 || ntensors > MAX_TENSORS) return NULL;
    qp_grad_exchange *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->kind = kind, x->ntensors = ntensors;
    for (int t = 0; t < ntensors; t++) x->sizes[t] = sizes[t], x->n += sizes[t];
    if (kind == QP_GRAD_COMM_FP32) return x;
    const size_t P = (size_t)x->n, eb = (size_t)elem_bytes(kind), world = (size_t)qp_dist_size();
    x->ref = malloc(P * sizeof(float));
    x->send = malloc(P * sizeof(float));
    x->payload = malloc(P * eb);
    x->gathered = malloc(P * eb * world);
    if (ef) x->ef = calloc(P, sizeof(float));
    if (!x->ref || !x->send || !x->payload || !x->gathered || (ef && !x->ef)) {
        qp_grad_exchange_destroy(x);
        return NULL;
    }
    return x;
}

void qp_grad_exchange_destroy(qp_grad_exchange *x)
{
    if (!x) return;
    free(x->ref), free(x->send), free(x->ef), free(x->payload), free(x->gathered);
    free(x);
}

int64_t qp_grad_exchange_bytes(const qp_grad_exchange *x)
{
    return elem_bytes(x->kind) * x->n + (x->kind == QP_GRAD_COMM_FP8 ? 4 * x->ntensors : 0);
}

void qp_grad_exchange_run(qp_grad_exchange *x, float *g, double *rel_err, double *meas_ms)
{
    const int64_t P = x->n;
    const int world = qp_dist_size();
    *rel_err = NAN;
    *meas_ms = 0.0;
    if (x->kind == QP_GRAD_COMM_FP32) {
        qp_dist_sum_f32(g, P);
        return;
    }
    memcpy(x->ref, g, (size_t)P * sizeof(float));
    const double c0 = qp_dist_comm_ms();
    qp_dist_sum_f32(x->ref, P);
    *meas_ms = qp_dist_comm_ms() - c0;
    float *s = x->send;
    for (int64_t i = 0; i < P; i++) s[i] = g[i] + (x->ef ? x->ef[i] : 0.0f);
    float scale_inv[MAX_TENSORS];
    if (x->kind == QP_GRAD_COMM_BF16) {
        uint16_t *pl = (uint16_t *)x->payload;
        for (int64_t i = 0; i < P; i++) pl[i] = qp_f32_to_bf16(s[i]);
        if (x->ef)
            for (int64_t i = 0; i < P; i++) x->ef[i] = s[i] - qp_bf16_to_f32(pl[i]);
        qp_dist_allgather(x->payload, x->gathered, P * 2);
    } else {
        float amax[MAX_TENSORS], scale[MAX_TENSORS];
        int64_t off = 0;
        for (int t = 0; t < x->ntensors; t++) amax[t] = qp_amax(s + off, x->sizes[t]), off += x->sizes[t];
        qp_dist_max_f32(amax, x->ntensors);
        off = 0;
        for (int t = 0; t < x->ntensors; t++) {
            scale[t] = qp_scale_from_amax(448.0f, amax[t], 0);
            scale_inv[t] = 1.0f / scale[t];
            for (int64_t i = off; i < off + x->sizes[t]; i++) {
                x->payload[i] = qp_f32_to_e4m3(s[i] * scale[t]);
                if (x->ef) x->ef[i] = s[i] - qp_e4m3_to_f32(x->payload[i]) * scale_inv[t];
            }
            off += x->sizes[t];
        }
        qp_dist_allgather(x->payload, x->gathered, P);
    }
    /* the sum, in rank order */
    int64_t off = 0;
    for (int t = 0; t < x->ntensors; t++) {
        for (int64_t i = off; i < off + x->sizes[t]; i++) {
            float acc = 0.0f;
            for (int k = 0; k < world; k++)
                acc += x->kind == QP_GRAD_COMM_BF16
                           ? qp_bf16_to_f32(((const uint16_t *)x->gathered)[(int64_t)k * P + i])
                           : qp_e4m3_to_f32(x->gathered[(int64_t)k * P + i]) * scale_inv[t];
            g[i] = acc;
        }
        off += x->sizes[t];
    }
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < P; i++) {
        const double d = (double)g[i] - (double)x->ref[i];
        num += d * d;
        den += (double)x->ref[i] * x->ref[i];
    }
    *rel_err = den > 0 ? sqrt(num / den) : 0.0;
}
