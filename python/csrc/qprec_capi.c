/* qprec_capi.c — the C side of the Python package: libqpquant's quantizers
 * and metrics behind a few flat functions that ctypes can call with numpy
 * buffers (no Python headers, no compiled extension module).
 *
 * Owns: nothing of the formats. Every rule, layout and size is quant/'s:
 * the format list is qp_formats[] (read here field by field, so a new row
 * appears in qprec.formats() by itself), storage sizes come from
 * qp_row_bytes / qp_scale_shape (which Python calls directly), quantization
 * from qp_quantize / qp_dequantize / qp_qdq, the random Hadamard transform
 * from qp_rht16_kind (rht: 0 none, 1 seeded, 2 Transformer Engine's), the metrics from qp_metrics_for_format, the SR stream of a
 * named tensor from qp_metrics_name_stream: the code qerr runs. The caller
 * (python/qprec/_lib.py) allocates every output, zero-filled, with the sizes
 * those functions give. Return codes: 0, -1 unknown format, -2 RHT asked on
 * cols not a multiple of 16, -3 out of memory. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_hadamard.h"
#include "qp_metrics.h"
#include "qp_quant.h"

#define QPREC_EXPORT __attribute__((visibility("default")))

/* The ABI between this file and _lib.py: bumped when a signature changes. */
QPREC_EXPORT int qprec_abi_version(void) { return 5; }

QPREC_EXPORT int qprec_format_count(void) { return QP_FMT_COUNT; }

static const qp_format_traits *traits(int f)
{
    return f >= 0 && f < QP_FMT_COUNT ? &qp_formats[f] : NULL;
}

QPREC_EXPORT int qprec_format_index(const char *name)
{
    const qp_format_traits *t = qp_format_by_name(name);
    return t ? (int)(t - qp_formats) : -1;
}

QPREC_EXPORT const char *qprec_format_name(int f) { return traits(f) ? traits(f)->name : NULL; }
QPREC_EXPORT const char *qprec_format_description(int f) { return traits(f) ? traits(f)->description : NULL; }

/* Bytes per stored block scale (0: the format has no block scales; FP32
 * block scales take 4). */
static int scale_bytes(const qp_format_traits *t) { return t->scale_bytes; }

/* a rows x cols tensor of format f over the caller's codes and scales (no
 * scales for a format without them); the tensor scales are the caller's to set */
static qp_qtensor view(int f, int64_t rows, int64_t cols, uint8_t *codes, uint8_t *scales)
{
    qp_qtensor q;
    memset(&q, 0, sizeof q);
    q.fmt = (qp_fmt)f;
    q.rows = rows;
    q.cols = cols;
    q.row_bytes = qp_row_bytes((qp_fmt)f, cols);
    qp_scale_shape((qp_fmt)f, rows, cols, &q.scale_rows, &q.scale_cols);
    q.codes = codes;
    q.scales = q.scale_rows ? scales : NULL;
    return q;
}

/* out: elem_bits, block_rows, block_cols, scale_bytes, tensor_scale,
 * row_scaled (the tensor scale is one per row); *elem_max */
QPREC_EXPORT int qprec_format_info(int f, int64_t out[6], double *elem_max)
{
    const qp_format_traits *t = traits(f);
    if (!t) return -1;
    out[0] = t->elem_bits;
    out[1] = t->block_rows;
    out[2] = t->block_cols;
    out[3] = scale_bytes(t);
    out[4] = t->tensor_scale ? 1 : 0;
    out[5] = t->row_scaled ? 1 : 0;
    *elem_max = t->elem_max;
    return 0;
}

QPREC_EXPORT uint64_t qprec_name_stream(const char *name) { return qp_metrics_name_stream(name); }

/* What a quantization saw, in the order of qprec._lib.STATS. */
#define QPREC_NSTATS 12
QPREC_EXPORT int qprec_nstats(void) { return QPREC_NSTATS; }

static void put_stats(const qp_qstats *st, double out[QPREC_NSTATS])
{
    const double v[QPREC_NSTATS] = {(double)st->n,           (double)st->n_nonfinite,  (double)st->n_nonzero,
                                    (double)st->n_sat,       (double)st->n_flushed,    st->amax,
                                    st->scale,               st->scale_inv,            (double)st->n_blocks,
                                    st->block_scale_min,     st->block_scale_max,      st->block_scale_log2_mean};
    memcpy(out, v, sizeof v);
}

static qp_qopts make_opts(int sr, uint64_t sr_seed, uint64_t sr_stream)
{
    qp_qopts o;
    memset(&o, 0, sizeof o);
    o.stochastic = sr != 0;
    o.seed = sr_seed;
    o.stream = sr_stream;
    return o;
}

/* x rotated by the RHT into a new buffer, or x itself without rht. */
static int rotated(const float *x, int64_t rows, int64_t cols, int rht, uint64_t rht_seed, float **own,
                   const float **src)
{
    *own = NULL;
    *src = x;
    if (!rht) return 0;
    if (cols % QK_RHT) return -2;
    const size_t n = (size_t)(rows * cols);
    if (!(*own = malloc((n ? n : 1) * sizeof(float)))) return -3;
    memcpy(*own, x, n * sizeof(float));
    if (qp_rht16_kind(*own, rows, cols, rht, rht_seed)) {
        free(*own);
        *own = NULL;
        return -1;
    }
    *src = *own;
    return 0;
}

/* codes: rows x qp_row_bytes(f, cols); scales: scale_rows x scale_cols x
 * scale_bytes (NULL without block scales); scale_inv: the tensor's decode
 * scale, or for a row-scaled format (nvfp4-row) rows of them, one per row.
 * With rht the input is rotated first (x R, the basis the GEMM sees). */
QPREC_EXPORT int qprec_quantize(int f, const float *x, int64_t rows, int64_t cols, int sr, uint64_t sr_seed,
                                uint64_t sr_stream, int rht, uint64_t rht_seed, uint8_t *codes, uint8_t *scales,
                                float *scale_inv, double stats[QPREC_NSTATS])
{
    if (!traits(f) || rows < 0 || cols < 0) return -1;
    float *own;
    const float *src;
    const int rc = rotated(x, rows, cols, rht, rht_seed, &own, &src);
    if (rc) return rc;
    qp_qtensor q = view(f, rows, cols, codes, scales);
    q.scale_inv = 1.0f;
    q.row_scale_inv = traits(f)->row_scaled ? scale_inv : NULL;
    const qp_qopts o = make_opts(sr, sr_seed, sr_stream);
    qp_qstats st;
    memset(&st, 0, sizeof st);
    qp_quantize(src, &q, &o, &st);
    if (!q.row_scale_inv) *scale_inv = q.scale_inv;
    put_stats(&st, stats);
    free(own);
    return 0;
}

/* scale_inv: qprec_quantize's (one, or one per row). */
QPREC_EXPORT int qprec_dequantize(int f, int64_t rows, int64_t cols, const uint8_t *codes, const uint8_t *scales,
                                  const float *scale_inv, float *y)
{
    if (!traits(f) || rows < 0 || cols < 0) return -1;
    qp_qtensor q = view(f, rows, cols, (uint8_t *)codes, (uint8_t *)scales);
    q.scale_inv = traits(f)->row_scaled ? 1.0f : scale_inv[0];
    q.row_scale_inv = traits(f)->row_scaled ? (float *)scale_inv : NULL;
    qp_dequantize(&q, y);
    return 0;
}

/* y = dequantize(quantize(x)) (of x R with rht); y may be x. */
QPREC_EXPORT int qprec_qdq(int f, const float *x, float *y, int64_t rows, int64_t cols, int sr, uint64_t sr_seed,
                           uint64_t sr_stream, int rht, uint64_t rht_seed, double stats[QPREC_NSTATS])
{
    if (!traits(f) || rows < 0 || cols < 0) return -1;
    float *own;
    const float *src;
    const int rc = rotated(x, rows, cols, rht, rht_seed, &own, &src);
    if (rc) return rc;
    const qp_qopts o = make_opts(sr, sr_seed, sr_stream);
    qp_qstats st;
    memset(&st, 0, sizeof st);
    qp_qdq((qp_fmt)f, src, y, rows, cols, &o, &st);
    put_stats(&st, stats);
    free(own);
    return 0;
}

/* qerr's metrics of one tensor from one quantization (qp_metrics_for_format):
 * out in the order of qprec._lib.METRICS, with qerr's columns' conventions
 * (tools/qerr_cols.c: the block-scale statistics are NaN for a format without
 * block scales); bstats, the per-block scale statistics (qp_metrics.h's
 * qp_bscale_dist and the element fractions), in the order of
 * qprec._lib.BSTATS; hist, the block-scale histogram (qprec_bshist_bins()
 * counts). */
#define QPREC_NMETRICS 13
#define QPREC_NBSTATS 7
QPREC_EXPORT int qprec_nmetrics(void) { return QPREC_NMETRICS; }
QPREC_EXPORT int qprec_nbstats(void) { return QPREC_NBSTATS; }
QPREC_EXPORT int qprec_bshist_bins(void) { return QP_BSHIST_BINS; }
QPREC_EXPORT int qprec_bshist_offset(void) { return QP_BSHIST_OFFSET; }

QPREC_EXPORT int qprec_errors(int f, const float *x, int64_t rows, int64_t cols, int sr, uint64_t sr_seed,
                              uint64_t sr_stream, int rht, uint64_t rht_seed, double out[QPREC_NMETRICS],
                              double bstats[QPREC_NBSTATS], int64_t hist[QP_BSHIST_BINS])
{
    if (!traits(f) || rows < 0 || cols < 0) return -1;
    if (rht && cols % QK_RHT) return -2;
    const qp_qopts o = make_opts(sr, sr_seed, sr_stream);
    qp_metrics m;
    if (qp_metrics_for_format((qp_fmt)f, x, rows, cols, &o, rht, rht_seed, NULL, &m)) return -3;
    const double v[QPREC_NMETRICS] = {m.rel_l2,
                                      m.snr_db,
                                      m.max_abs,
                                      m.cosine,
                                      m.sat_frac,
                                      m.zero_frac,
                                      m.amax,
                                      m.scale,
                                      (double)m.n_blocks,
                                      m.n_blocks ? m.block_scale_min : NAN,
                                      m.n_blocks ? m.block_scale_max : NAN,
                                      m.n_blocks ? m.block_scale_log2_mean : NAN,
                                      (double)m.n_nonfinite};
    memcpy(out, v, sizeof v);
    const qp_bscale_dist d = m.bsd;
    const double b[QPREC_NBSTATS] = {(double)d.n_blocks,    d.log2_std,           d.saturated_frac,
                                     d.underflow_frac,      m.elems_flushed_frac, m.elems_saturated_frac,
                                     d.n_blocks ? d.dynamic_range_max_log2 : NAN};
    memcpy(bstats, b, sizeof b);
    memcpy(hist, d.hist, sizeof d.hist);
    return 0;
}
