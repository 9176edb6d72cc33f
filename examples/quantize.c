/* quantize.c — libqpquant from outside qprec: quantize a vector to NVFP4
 * and MXFP8 and print what the packed tensor holds.
 *
 * Shows the public API (<qprec/...>, installed under include/qprec) end to
 * end: a format by name, packed storage (qp_qtensor_alloc), quantization
 * (qp_quantize), the codes and block scales in their documented layout
 * (qp_quant.h: FP4 two to a byte, low nibble first; one UE4M3 scale byte per
 * 16 NVFP4 elements under an FP32 tensor scale; one E8M0 byte per 32 MXFP8
 * elements), and the decoding of them with the element and scale codecs of
 * qp_format.h. The hand decoding must equal qp_dequantize bit for bit; the
 * program says so and exits 1 if not.
 *
 * Build: with pkg-config (Makefile), or find_package(qprec) (CMakeLists.txt).
 * Run: ./quantize  (no arguments; the output depends on nothing else) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qprec/qp_format.h>
#include <qprec/qp_metrics.h>
#include <qprec/qp_quant.h>
#include <qprec/qp_version.h>

#define N 64

/* element i's code: FP4 codes are nibbles, everything else a byte here */
static unsigned code_at(const qp_qtensor *q, int i)
{
    if (qp_formats[q->fmt].elem_bits == 4) return (q->codes[i / 2] >> (4 * (i % 2))) & 0xFu;
    return q->codes[i];
}

/* the element codec and the block-scale codec of the two formats shown */
static float decode_elem(qp_fmt fmt, unsigned code)
{
    return fmt == QP_FMT_NVFP4 ? qp_e2m1_to_f32((uint8_t)code) : qp_e4m3_to_f32((uint8_t)code);
}
static float decode_scale(qp_fmt fmt, uint8_t code)
{
    return fmt == QP_FMT_NVFP4 ? qp_ue4m3_to_f32(code) : qp_e8m0_to_f32(code);
}

static int show(const char *name, const float *x)
{
    const qp_format_traits *t = qp_format_by_name(name);
    qp_qtensor q;
    if (!t || qp_qtensor_alloc(&q, t->fmt, 1, N) != 0) {
        fprintf(stderr, "quantize: cannot set up %s\n", name);
        return -1;
    }
    qp_qopts o;
    memset(&o, 0, sizeof o); /* round to nearest, current scaling */
    qp_qstats st;
    if (qp_quantize(x, &q, &o, &st) != 0) {
        fprintf(stderr, "quantize: %s failed\n", name);
        qp_qtensor_free(&q);
        return -1;
    }
    float y[N], hand[N];
    qp_dequantize(&q, y);

    printf("%s: %s\n", t->name, t->description);
    printf("  amax %.9g, tensor decode scale %a (%.9g), %lld block scales of %d elements\n", st.amax,
           q.scale_inv, q.scale_inv, (long long)st.n_blocks, t->block_cols);
    for (int b = 0; b < N / t->block_cols; b++) {
        const uint8_t s = q.scales[b];
        printf("  block %d: scale 0x%02x = %-10.9g codes", b, s, decode_scale(t->fmt, s));
        for (int i = b * t->block_cols; i < (b + 1) * t->block_cols; i++) {
            const unsigned c = code_at(&q, i);
            printf(t->elem_bits == 4 ? " %x" : " %02x", c);
            /* code x block scale x tensor scale, qp_quant.h's "dec" */
            hand[i] = decode_elem(t->fmt, c) * decode_scale(t->fmt, s) * q.scale_inv;
        }
        printf("\n");
    }
    printf("  x[0..7]  ");
    for (int i = 0; i < 8; i++) printf(" %9.5f", x[i]);
    printf("\n  decoded  ");
    for (int i = 0; i < 8; i++) printf(" %9.5f", y[i]);
    printf("\n");
    qp_metrics m;
    qp_metrics_compute(x, y, N, &st, &m);
    printf("  rel_l2 %.6f, snr %.2f dB, saturated %lld\n", m.rel_l2, m.snr_db, (long long)st.n_sat);
    const int same = memcmp(hand, y, sizeof y) == 0;
    printf("  codes x scales decoded by hand %s qp_dequantize\n", same ? "equal" : "DIFFER FROM");
    qp_qtensor_free(&q);
    return same ? 0 : -1;
}

int main(void)
{
    /* a small activation-like vector: a spread of values, one outlier in
     * the second 16-block, made from integers so every C library agrees */
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)((i * 37) % 29 - 14) * 0.0625f + (float)(i % 5) * 0.01f;
    x[21] = 11.5f;
    printf("qprec %s: %d values quantized by libqpquant\n", qp_version(), N);
    const int rc = show("nvfp4", x) | show("mxfp8", x);
    return rc ? 1 : 0;
}
