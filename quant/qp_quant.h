/* qp_quant.h — tensor quantizers: per-tensor FP8, OCP MX (MXFP8, MXFP4) and
 * NVFP4 (1x16 and 16x16) block formats, packed storage and dequantization,
 * and a fused quantize-dequantize for emulation.
 *
 * Owns: the scale rules and the packed layout of every tensor format, and the
 * traits table that names them (a new format is one row of qp_formats[]).
 *
 * Layout. A tensor is a row-major rows x cols float32 matrix; blocks run along
 * the contiguous (last) dimension. A row is padded with zeros to a whole number
 * of blocks: the padding is never read from the input, contributes nothing to
 * any amax, and is stored as code 0. Codes: one byte per element for FP8, two
 * (little-endian) for BF16, four for FP32, two elements per byte for FP4 (even
 * element in the low nibble, as cuda_fp4's __nv_fp4x2 stores them). Block
 * scales: one byte each, scale_rows x scale_cols, row-major, in the plain
 * (not swizzled) order; NVFP4-2D keeps one scale per 16x16 tile.
 *
 * Scale rules (x is the input, Q the element quantizer, "dec" what a reader
 * multiplies codes by):
 *   bf16      y = bf16(x)
 *   fp8-e4m3  s = 448/amax (per tensor; amax over finite values; s = 1 if
 *   fp8-e5m2  amax == 0; clamped to FLT_MAX), y = Q(x*s), dec = 1/s.  A caller
 *             may pass its own s (delayed scaling, qp_scaling.h).
 *   mxfp8     per 32-block: X = 2^(floor(log2 amax_b) - emax), emax = 8 (E4M3),
 *   mxfp8-e5m2  15 (E5M2), 2 (E2M1), clamped to [2^-127, 2^127], stored as
 *   mxfp4     E8M0; y = Q(x / X) (elements saturate), dec = X. A block holding
 *             NaN or Inf gets the NaN scale 0xFF (all its elements decode NaN),
 *             as the OCP reference code does; an all-zero block gets 2^-127.
 *   nvfp4     S = 6*448/amax (tensor, FP32; 1 if amax == 0), per 16-block
 *   nvfp4-2d  d_b = ue4m3(amax_b * (S * (1/6))), e_b = 1/(d_b * (1/S)),
 *             y = e2m1(x * e_b), dec = e2m1 * d_b * (1/S). A block whose d_b
 *             is 0 stores zeros. NaN inputs encode as +6 (the E2M1 oracle);
 *             amax and S ignore non-finite values. The float operations run
 *             in exactly this order, Transformer Engine's (at an E4M3 tie,
 *             amax_b*S/6 and amax_b*(S*(1/6)) can round to different scales).
 * NaN/Inf: per-tensor amax ignores non-finite values; they are counted in
 * qp_qstats.n_nonfinite and encoded as the element codec does (see qp_format.h).
 */
#ifndef QP_QUANT_H
#define QP_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QK_MX 32     /* OCP MX block size */
#define QK_NVFP4 16  /* NVFP4 block size (and 2D tile side) */
#define QK_RHT 16    /* random Hadamard transform size */

typedef enum {
    QP_FMT_FP32 = 0,
    QP_FMT_BF16,
    QP_FMT_FP8_E4M3,
    QP_FMT_FP8_E5M2,
    QP_FMT_MXFP8,
    QP_FMT_MXFP8_E5M2,
    QP_FMT_MXFP4,
    QP_FMT_NVFP4,
    QP_FMT_NVFP4_2D,
    QP_FMT_COUNT
} qp_fmt;

typedef enum { QP_ELEM_F32, QP_ELEM_BF16, QP_ELEM_E4M3, QP_ELEM_E5M2, QP_ELEM_E2M1 } qp_elem;
typedef enum { QP_SCALE_NONE, QP_SCALE_TENSOR, QP_SCALE_E8M0, QP_SCALE_UE4M3 } qp_block_scale;

typedef struct {
    const char *name;        /* CLI name, e.g. "nvfp4-2d" */
    qp_fmt fmt;
    qp_elem elem;
    int elem_bits;           /* storage bits per element */
    float elem_max;          /* largest finite element magnitude */
    int elem_emax;           /* exponent of elem_max (MX scale rule) */
    int block_rows;          /* 1, or 16 for 2D tiles */
    int block_cols;          /* elements per block along a row; 1 = no blocks */
    qp_block_scale block_scale;
    bool tensor_scale;       /* has an FP32 per-tensor scale */
    const char *description;
} qp_format_traits;

extern const qp_format_traits qp_formats[QP_FMT_COUNT];

/* Traits by CLI name; NULL if unknown. */
const qp_format_traits *qp_format_by_name(const char *name);
/* Comma-separated list of every format name (for error messages). */
const char *qp_format_names(void);

/* Options of one quantization. Zero-initialised means: round to nearest,
 * current scaling. */
typedef struct {
    bool stochastic;   /* stochastic rounding of elements */
    uint64_t seed;     /* SR: generator key */
    uint64_t stream;   /* SR: stream (e.g. tensor id x step), element i uses word i */
    int64_t sr_offset;     /* SR: element (r, c) uses word sr_offset + r * sr_row_stride + c,  */
    int64_t sr_row_stride; /*   stride 0 meaning cols (so zeroes give "element i uses word i"):  */
                           /*   a slice of a bigger tensor draws the words the whole tensor's    */
                           /*   quantization draws for the same elements (data-parallel ranks) */
    float scale;       /* > 0: use this per-tensor encode scale instead of the current one
                          (fp8: s; nvfp4: S); ignored by formats without a tensor scale */
    bool unscaled;     /* qp_qdq only: output decode(code) * block scale, leaving the
                          per-tensor decode scale (qp_qstats.scale_inv) to the caller.
                          These values are exact in BF16 for every format (MX: unless
                          the block scale is below 2^-124), which is what lets a BF16
                          GEMM with the tensor scales in alpha emulate the hardware. */
} qp_qopts;

/* What one quantization saw. Counts are over real (unpadded) elements. */
typedef struct {
    int64_t n;             /* elements */
    int64_t n_nonfinite;   /* NaN or Inf inputs */
    int64_t n_nonzero;     /* finite non-zero inputs */
    int64_t n_sat;         /* finite inputs whose scaled magnitude exceeded elem_max */
    int64_t n_flushed;     /* finite non-zero inputs that quantized to zero */
    float amax;            /* max |x| over finite inputs */
    float scale;           /* per-tensor encode scale used (1 if none) */
    float scale_inv;       /* per-tensor decode scale (1 if none) */
    int64_t n_blocks;      /* block scales written */
    int64_t n_blocks_zero_scale;  /* block scales that are 0 (or 2^-127 for E8M0) */
    int64_t n_blocks_sat_scale;   /* block scales clamped at their format's max */
    float block_scale_min, block_scale_max; /* decoded, over blocks with a non-zero amax */
    double block_scale_log2_mean;           /* mean log2 of those */
} qp_qstats;

/* A quantized tensor in packed storage. */
typedef struct {
    qp_fmt fmt;
    int64_t rows, cols;
    int64_t row_bytes;     /* bytes of codes per row (padded to whole blocks) */
    int64_t scale_rows, scale_cols;
    uint8_t *codes;        /* rows x row_bytes */
    uint8_t *scales;       /* scale_rows x scale_cols, NULL if no block scales */
    float scale_inv;       /* per-tensor decode scale */
} qp_qtensor;

/* Storage sizes for a rows x cols tensor. */
int64_t qp_row_bytes(qp_fmt fmt, int64_t cols);
void qp_scale_shape(qp_fmt fmt, int64_t rows, int64_t cols, int64_t *scale_rows, int64_t *scale_cols);

/* Allocate / free packed storage; returns 0, or -1 on bad shape or no memory. */
int qp_qtensor_alloc(qp_qtensor *q, qp_fmt fmt, int64_t rows, int64_t cols);
void qp_qtensor_free(qp_qtensor *q);

/* Quantize x (rows x cols) into q (allocated for the same format and shape).
 * st may be NULL. Uses the fastest path this CPU has; identical output to
 * qp_quantize_ref. */
void qp_quantize(const float *x, qp_qtensor *q, const qp_qopts *o, qp_qstats *st);
/* The scalar reference every fast path is tested against. */
void qp_quantize_ref(const float *x, qp_qtensor *q, const qp_qopts *o, qp_qstats *st);
/* y (rows x cols) = decoded q. */
void qp_dequantize(const qp_qtensor *q, float *y);

/* Fused quantize-dequantize: y = dequantize(quantize(x)) exactly, without the
 * packed copy. y may equal x. */
void qp_qdq(qp_fmt fmt, const float *x, float *y, int64_t rows, int64_t cols,
            const qp_qopts *o, qp_qstats *st);
void qp_qdq_ref(qp_fmt fmt, const float *x, float *y, int64_t rows, int64_t cols,
                const qp_qopts *o, qp_qstats *st);

/* The magnitude a per-tensor scale maps amax onto: elem_max for FP8,
 * 6*448 for NVFP4 (element max times block-scale max); 0 without a tensor scale. */
float qp_tensor_scale_range(qp_fmt fmt);

/* Per-tensor amax over finite values (max is order-independent, so this is
 * deterministic with any vector width). */
float qp_amax(const float *x, int64_t n);

/* Which vector path runs: "avx512", "avx2" or "scalar". The environment
 * variable QP_SIMD=scalar|avx2|avx512 caps it (for tests and benchmarks). */
const char *qp_simd_name(void);

#ifdef __cplusplus
}
#endif
#endif
