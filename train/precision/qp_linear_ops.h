/* qp_linear_ops.h — the operations the precision dispatch is made of: the
 * interface between the dispatch's one implementation (qp_linear.c: which
 * operand is transposed, rotated, quantized in which format with which SR
 * stream and scale, how statistics update the scaling state and make a qerr
 * row, when they are applied, which GEMM runs) and where the work happens.
 *
 * Owns: the operation table, the GEMM operand a backend hands its GEMM, and
 * one quantization's job and statistics. Backends: the CPU's host operations
 * (qp_linear_host.c: quant/'s qdq, oneDNN's GEMM), installed by
 * qp_linear_create; the GPU's device operations (kernels/qp_cuda_linear.cu
 * on the operand building of kernels/qp_cuda_linear_ops.h), installed with
 * qp_linear_set_ops. Plain C over quant/'s types only, so kernels/ needs no
 * other header of the dispatch. Every operation returns 0, or -1 with a
 * message that error() gives.
 *
 * Statistics are kept, not returned: a quantization leaves them in its
 * side's scratch, keep() sets them aside as slot k of the backend's kept
 * list, and fetch_kept() brings slots 0..n-1 to the host at once when the
 * dispatch flushes (qp_linear_flush). Nothing a later quantization or GEMM
 * reads depends on them (decode scales reach the GEMM with the operand, as
 * host values or backend pointers), so a GPU never waits for the host per
 * operand; the CPU keeps one slot, so its statistics apply at once. */
#ifndef QP_LINEAR_OPS_H
#define QP_LINEAR_OPS_H

#include <stdint.h>

#include "qp_metrics.h"
#include "qp_quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a GEMM operand holds its values. */
typedef enum {
    QP_LOP_F32 = 0,   /* float values */
    QP_LOP_F32_BF16,  /* float values, each exactly a BF16 (the CPU's BF16 GEMM takes them) */
    QP_LOP_BF16,      /* BF16 bits */
    QP_LOP_E4M3,      /* FP8 codes, the decode scale at scale_inv_ptr */
    QP_LOP_E5M2,
    QP_LOP_MXFP8,     /* E4M3 codes and tiled E8M0 block scales */
    QP_LOP_NVFP4,     /* packed E2M1 codes, tiled E4M3 block scales, tensor decode scale at scale_inv_ptr */
    QP_LOP_COUNT
} qp_lop_type;

typedef struct {
    qp_lop_type type;
    const void *data;
    int trans;                   /* stored cols x rows (the CPU's GEMM reads either; device operands are rows x K) */
    float scale_inv;             /* per-tensor decode scale the dispatch folds into alpha */
    const float *scale_inv_ptr;  /* or the decode scale in the backend's memory (the backend's GEMM applies it) */
    const uint8_t *block_scales; /* MXFP8 and NVFP4 native */
    const float *kscale;         /* not NULL: data holds element codes (BF16 values) and this the FP32 scale of
                                    each (row, K-chunk of QK_FP8_BLOCK), row-major: formats whose block scales
                                    cannot go into alpha (qp_format_traits.unscaled_exact false) */
} qp_linear_operand;

/* What one quantization saw. qs as quant/ reports it (a backend may leave the
 * block-scale fields 0); the error metrics (quant/qp_metrics.h) of this
 * operand when the job asks for them, with the per-block scale statistics
 * of qp_metrics_for_format (bsd; bsd.n_blocks 0: none, a format without
 * block scales or a backend that leaves them). */
typedef struct {
    qp_qstats qs;
    double rel_l2, snr_db, sat_frac, zero_frac, amax;
    double elems_flushed_frac, elems_saturated_frac;
    qp_bscale_dist bsd;
} qp_linear_stats;

/* The GEMMs a recipe makes, what a backend needs to choose its GEMM kinds
 * (qp_linear_gemms): pair[a][b] when some pass multiplies an operand in
 * format a (its A) by one in format b (its B); any_rht when some pass
 * rotates its operands. */
typedef struct {
    unsigned char pair[QP_FMT_COUNT][QP_FMT_COUNT];
    int any_rht;
} qp_linear_gemm_set;

/* The GEMM kind a backend runs for a pair of formats: 0 = the emulated one
 * (every backend has it); others are the backend's own. */
#define QP_LINEAR_EMULATED 0

/* Quantize one operand for one GEMM. */
typedef struct {
    qp_fmt fmt;
    const float *x;    /* rows x cols, stored cols x rows when trans */
    int rows, cols, trans;
    const qp_qopts *opts;
    int side;          /* 0: the GEMM's A, 1: its B (selects buffers and the statistics scratch) */
    int kind;          /* gemm_kind's answer for this GEMM */
    int want_stats;    /* leave the statistics (qs) in side's scratch for keep() */
    int want_metrics;  /* with the error metrics (a qerr row is made of them) */
    int keep;          /* quantize: >= 0 (< max_copies), also keep this operand and its statistics as copy `keep`
                          for a later use's reuse; -1: not kept */
    int from;          /* reuse: the kept copy to read back, or -1 for side's last quantization */
} qp_linear_qjob;

typedef struct qp_linear_ops {
    void *ctx;
    int64_t max_elems;  /* the largest operand the buffers hold */
    int max_kept;       /* slots of the kept list (1: statistics apply after each quantization) */
    int max_copies;     /* quantized operands the backend can keep for a later use (qp_linear_qjob.keep) */
    float *tbuf[2];     /* per side: transposed or rotated copies (backend memory, max_elems floats) */
    const char *(*error)(void *ctx);
    /* dst (src_cols x src_rows) = src^T */
    int (*transpose)(void *ctx, const float *src, float *dst, int src_rows, int src_cols);
    int (*copy)(void *ctx, float *dst, const float *src, int64_t n);
    /* in place, the n-point RHT of every n elements of each of rows rows */
    int (*rht)(void *ctx, float *x, int rows, int cols, int n, uint64_t seed);
    /* in place, Transformer Engine's fixed-sign 16-point RHT of every 16
     * elements of each of rows rows (quant/'s qp_rht16_te, the transform
     * of qerr's --rht-signs te and Python's rht="te"); NULL: the backend
     * has none, and the dispatch refuses a recipe with rht=te */
    int (*rht_te)(void *ctx, float *x, int rows, int cols);
    /* transpose, then rht of dst's rows, in one pass over memory, and
     * *amax = amax(dst) as the amax operation gives it (NULL: the dispatch
     * calls the two, then amax when it needs it) */
    int (*transpose_rht)(void *ctx, const float *src, float *dst, int src_rows, int src_cols, int n, uint64_t seed,
                         float *amax);
    /* job's operand (job->trans: stored cols x rows) quantized where it is
     * stored, its blocks down the stored columns, after the rht-point RHT
     * along the contraction when rht is not 0: the values and statistics
     * of quantize() on transpose_rht's (or transpose's) result, without
     * that copy; the operand the GEMM reads transposed. *done 0 (and
     * nothing else happens) where the backend cannot for this job. NULL:
     * never. */
    int (*quantize_stored)(void *ctx, const qp_linear_qjob *job, int rht, uint64_t rht_seed, qp_linear_operand *out,
                           int *done);
    /* max |x| over the finite values, to the host (data parallelism only) */
    int (*amax)(void *ctx, const float *x, int64_t n, float *out);
    /* an unquantized operand: rows x cols, stored cols x rows when trans */
    int (*plain)(void *ctx, const float *x, int trans, int rows, int cols, int side, qp_linear_operand *out);
    /* the GEMM kind for A in fmt a, B in fmt b (FP32 for plain operands), M x N x K; NULL: always emulated */
    int (*gemm_kind)(void *ctx, qp_fmt a, qp_fmt b, int M, int N, int K);
    /* the GEMM operand of job, and (job->want_stats) its statistics in side's scratch */
    int (*quantize)(void *ctx, const qp_linear_qjob *job, qp_linear_operand *out);
    /* job's operand quantized exactly as an earlier use quantized it (the
     * same tensor, format, options and scale, now read as job->trans says:
     * qp_linear_reusable), without quantizing again: side's last
     * quantization (job->from -1: dY from dgrad to wgrad) or kept copy
     * job->from (X from fprop to wgrad, W from fprop to dgrad); side's
     * statistics become that quantization's. NULL: the dispatch quantizes
     * again (and no copy is kept). */
    int (*reuse)(void *ctx, const qp_linear_qjob *job, qp_linear_operand *out);
    /* job's operand as its producer left it, already quantized: values (as
     * floats) of a format without blocks, qp_round_elem_tally's, with the
     * statistics *counts (qp_linear_takes_rounded): the GEMM reads them
     * where they are (alpha takes counts->scale_inv), side's
     * statistics become the counts', and they are side's last quantization
     * and, when job->keep >= 0, kept copy job->keep, as quantize() would
     * leave them. NULL: operations that do not read such values as floats. */
    int (*take_rounded)(void *ctx, const qp_linear_qjob *job, const qp_qstats *counts, qp_linear_operand *out);
    /* side's statistics as kept slot `slot` (< max_kept), in the order of the work */
    int (*keep)(void *ctx, int side, int slot);
    /* kept slots 0..n-1 to the host (a device waits for its work here) */
    int (*fetch_kept)(void *ctx, int n, qp_linear_stats *out);
    /* C[M,N] (+)= alpha A[M,K] B[N,K]^T */
    int (*gemm)(void *ctx, const qp_linear_operand *a, const qp_linear_operand *b, float *C, int M, int N, int K,
                float alpha, int accumulate);
    int (*bias_add)(void *ctx, float *Y, const float *b, int M, int N);
    /* db[n] += sum over rows of dY[:, n] */
    int (*bias_grad)(void *ctx, float *db, const float *dY, int M, int N);
} qp_linear_ops;

#ifdef __cplusplus
}
#endif
#endif
