/* qprec_linear_ops.c — the Python package's GEMM of the precision
 * dispatch: the dispatch (train/precision/qp_linear.c) and its CPU
 * operations (train/precision/qp_linear_host.c), compiled into libqprec.so
 * unchanged, decide and carry out every transpose, RHT, format,
 * stochastic-rounding stream, scale and reuse exactly as in qtrain; only the
 * product is not theirs. Instead of multiplying, each GEMM hands its two
 * operands, decoded, to the caller (PyTorch), which multiplies them itself.
 *
 * Owns: the package's qp_gemm (train/precision/qp_gemm.h's opaque type, the
 * GEMM handed to qp_linear_create; the package links no GEMM library): a
 * capture, not a product. qprec_gemm_product, set as the CPU operations'
 * product (qp_linear_host_set_gemm), writes A (M x K) and B (N x K) as
 * decoded FP32 values — element (times its K-chunk scale) times the
 * operand's decode scale, what quant/'s qp_qdq gives — into the next pair
 * of the caller's buffers (qprec_gemm_capture), so that C = A B^T is the
 * product the dispatch asked for. qp_gemm_has_bf16 says 0: the operations
 * hold quantized operands as floats, as on a CPU whose BF16 products run in
 * FP32. No data parallelism. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_linear_host.h"
#include "qp_quant.h"
#include "qprec_linear_ops.h"

struct qp_gemm {
    float *cap[2 * QPREC_CAPTURES]; /* where the next products write A and B */
    int n_cap, next_cap;
    char err[128];
};

qp_gemm *qprec_gemm_create(void) { return calloc(1, sizeof(qp_gemm)); }
void qprec_gemm_destroy(qp_gemm *g) { free(g); }

void qprec_gemm_capture(qp_gemm *g, float *const *bufs, int n_pairs)
{
    g->n_cap = n_pairs < QPREC_CAPTURES ? n_pairs : QPREC_CAPTURES;
    for (int i = 0; i < 2 * g->n_cap; i++) g->cap[i] = bufs[i];
    g->next_cap = 0;
}

int qp_gemm_has_bf16(const qp_gemm *g)
{
    (void)g;
    return 0;
}

const char *qp_gemm_error(const qp_gemm *g) { return g ? g->err : "no GEMM"; }

/* never reached: the operations' product is qprec_gemm_product */
int qp_gemm_run_typed(qp_gemm *g, const void *A, int a16, int a_t, const void *B, int b16, int b_t, float *C, int M,
                      int N, int K, int kc, const float *sa, const float *sb, float alpha, int accumulate,
                      int bf16_exact)
{
    (void)A, (void)a16, (void)a_t, (void)B, (void)b16, (void)b_t, (void)C, (void)M, (void)N, (void)K, (void)kc;
    (void)sa, (void)sb, (void)alpha, (void)accumulate, (void)bf16_exact;
    snprintf(g->err, sizeof g->err, "the package's GEMMs are its caller's (qprec_gemm_product)");
    return -1;
}

/* One operand (rows x K) as decoded FP32 values into dst: element (times
 * the K-chunk scale) times the tensor's decode scale, quant/'s qp_qdq's
 * product. */
static void decode_operand(const qp_linear_operand *a, int rows, int K, float *dst)
{
    const float s = a->scale_inv_ptr ? *a->scale_inv_ptr : a->scale_inv;
    const float *v = a->data;
    const uint16_t *v16 = a->data;
    const int bits = a->type == QP_LOP_BF16;
    const int nk = (K + QK_FP8_BLOCK - 1) / QK_FP8_BLOCK;
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < K; k++) {
            const size_t i = a->trans ? (size_t)k * rows + r : (size_t)r * K + k;
            float x = bits ? qp_bf16_to_f32(v16[i]) : v[i];
            if (a->kscale) x *= a->kscale[(size_t)r * nk + k / QK_FP8_BLOCK];
            if (s != 1.0f) x *= s;
            dst[(size_t)r * K + k] = x;
        }
}

int qprec_gemm_product(void *user, const qp_linear_operand *a, const qp_linear_operand *b, float *C, int M, int N,
                       int K, float alpha, int accumulate, char *err, size_t errlen)
{
    qp_gemm *g = user;
    (void)C, (void)alpha, (void)accumulate; /* the caller multiplies: alpha is the two decode scales, applied here */
    if (g->next_cap >= g->n_cap) {
        snprintf(err, errlen, "a GEMM of the dispatch with no buffers for its operands");
        return -1;
    }
    float *da = g->cap[2 * g->next_cap], *db = g->cap[2 * g->next_cap + 1];
    g->next_cap++;
    for (int i = 0; i < 2; i++) {
        const qp_linear_operand *o = i ? b : a;
        if (o->type != QP_LOP_F32 && o->type != QP_LOP_F32_BF16 && o->type != QP_LOP_BF16) {
            snprintf(err, errlen, "an operand held as %d, not floats or BF16 bits", (int)o->type);
            return -1;
        }
    }
    decode_operand(a, M, K, da);
    decode_operand(b, N, K, db);
    return 0;
}
