/* test_format.c — element and scale codecs: known values, every code's round
 * trip, ties and saturation, E8M0/UE4M3 scales, unbiased stochastic rounding,
 * and the Philox generator against its published known-answer vectors. */
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "qp_format.h"
#include "qp_rng.h"
#include "qp_test.h"

static void test_known_values(void)
{
    CHECK(qp_e4m3_to_f32(0x7E) == 448.0f, "e4m3 max");
    CHECK(qp_e4m3_to_f32(0x01) == ldexpf(1, -9), "e4m3 min subnormal");
    CHECK(qp_e4m3_to_f32(0x08) == ldexpf(1, -6), "e4m3 min normal");
    CHECK(qp_e4m3_to_f32(0x38) == 1.0f, "e4m3 one");
    CHECK(isnan(qp_e4m3_to_f32(0x7F)) && isnan(qp_e4m3_to_f32(0xFF)), "e4m3 NaN codes");
    CHECK(qp_e5m2_to_f32(0x7B) == 57344.0f, "e5m2 max");
    CHECK(isinf(qp_e5m2_to_f32(0x7C)) && isnan(qp_e5m2_to_f32(0x7D)), "e5m2 inf/nan");
    CHECK(qp_e5m2_to_f32(0x01) == ldexpf(1, -16), "e5m2 min subnormal");
    static const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    for (int c = 0; c < 8; c++) {
        CHECK(qp_e2m1_to_f32((uint8_t)c) == e2m1[c], "e2m1 %d", c);
        CHECK(qp_e2m1_to_f32((uint8_t)(c | 8)) == -e2m1[c], "e2m1 -%d", c);
        CHECK(qp_e2m1_to_f32((uint8_t)(c | 0xF0)) == e2m1[c], "e2m1 ignores high nibble");
    }
    CHECK(qp_bf16_to_f32(0x3F80) == 1.0f, "bf16 one");
}

static void test_round_trip(void)
{
    for (int c = 0; c < 256; c++) {
        const float v4 = qp_e4m3_to_f32((uint8_t)c), v5 = qp_e5m2_to_f32((uint8_t)c);
        if (!isnan(v4)) CHECK(qp_f32_to_e4m3(v4) == c, "e4m3 code %02x", c);
        if (isfinite(v5)) CHECK(qp_f32_to_e5m2(v5) == c, "e5m2 code %02x", c);
    }
    for (int c = 0; c < 16; c++) CHECK(qp_f32_to_e2m1(qp_e2m1_to_f32((uint8_t)c)) == c, "e2m1 code %x", c);
    for (uint32_t c = 0; c < 65536; c++) {
        const float v = qp_bf16_to_f32((uint16_t)c);
        if (!isnan(v)) CHECK(qp_f32_to_bf16(v) == c, "bf16 code %04x", c);
    }
}

static void test_rounding_edges(void)
{
    /* Ties go to even; saturation instead of overflow; NaN as the oracle. */
    CHECK(qp_f32_to_e4m3(ldexpf(1, -10)) == 0x00, "e4m3 half min subnormal ties to 0");
    CHECK(qp_f32_to_e4m3(nextafterf(ldexpf(1, -10), 1)) == 0x01, "e4m3 above the tie");
    CHECK(qp_f32_to_e4m3(-ldexpf(1, -12)) == 0x80, "e4m3 underflow keeps the sign");
    CHECK(qp_f32_to_e4m3(1.0625f) == 0x38, "e4m3 1+1/16 ties down to 1");
    CHECK(qp_f32_to_e4m3(1.1875f) == 0x3A, "e4m3 1+3/16 ties up to 1.25");
    CHECK(qp_f32_to_e4m3(464.0f) == 0x7E, "e4m3 464 -> 448");
    CHECK(qp_f32_to_e4m3(1e30f) == 0x7E && qp_f32_to_e4m3(-INFINITY) == 0xFE, "e4m3 saturates");
    CHECK(qp_f32_to_e4m3(NAN) == 0x7F && qp_f32_to_e4m3(-NAN) == 0x7F, "e4m3 NaN");
    CHECK(qp_f32_to_e5m2(61440.0f) == 0x7B && qp_f32_to_e5m2(INFINITY) == 0x7B, "e5m2 saturates");
    CHECK(qp_f32_to_e2m1(0.25f) == 0 && qp_f32_to_e2m1(0.26f) == 1, "e2m1 around 0.25");
    CHECK(qp_f32_to_e2m1(0.75f) == 2 && qp_f32_to_e2m1(2.5f) == 4, "e2m1 ties to even");
    CHECK(qp_f32_to_e2m1(5.0f) == 6 && qp_f32_to_e2m1(5.01f) == 7, "e2m1 5 ties to 4");
    CHECK(qp_f32_to_e2m1(-7.0f) == 0xF && qp_f32_to_e2m1(NAN) == 0x7, "e2m1 saturation and NaN");
    CHECK(qp_f32_to_bf16(NAN) == 0x7FFF && qp_f32_to_bf16(FLT_MAX) == 0x7F80, "bf16 NaN and overflow to inf");
    CHECK(qp_f32_to_bf16(1.0f + ldexpf(1, -8)) == 0x3F80, "bf16 tie to even");
    CHECK(qp_floor_log2(ldexpf(1, -149)) == -149 && qp_floor_log2(0.75f) == -1 && qp_floor_log2(FLT_MAX) == 127,
          "floor_log2");
}

static void test_scale_codecs(void)
{
    CHECK(qp_f32_to_e8m0(1.0f) == 127 && qp_f32_to_e8m0(0.75f) == 126 && qp_f32_to_e8m0(1.99f) == 127,
          "e8m0 rounds down");
    CHECK(qp_f32_to_e8m0(FLT_MAX) == 254 && qp_f32_to_e8m0(ldexpf(1, -127)) == 0, "e8m0 range");
    CHECK(qp_f32_to_e8m0(ldexpf(1, -140)) == 0 && qp_f32_to_e8m0(0.0f) == 0 && qp_f32_to_e8m0(-4.0f) == 0,
          "e8m0 clamps below");
    CHECK(qp_f32_to_e8m0(INFINITY) == 0xFF && qp_f32_to_e8m0(NAN) == 0xFF, "e8m0 NaN");
    CHECK(isnan(qp_e8m0_to_f32(0xFF)) && qp_e8m0_to_f32(0) == ldexpf(1, -127) && qp_e8m0_to_f32(254) == ldexpf(1, 127),
          "e8m0 decode");
    CHECK(qp_e8m0_from_exp(-300) == 0 && qp_e8m0_from_exp(300) == 254 && qp_e8m0_from_exp(0) == 127, "e8m0 clamp");
    CHECK(qp_f32_to_ue4m3(-3.0f) == qp_f32_to_ue4m3(3.0f) && qp_f32_to_ue4m3(500.0f) == 0x7E, "ue4m3");
    CHECK(qp_f32_to_ue4m3(NAN) == 0x7F && qp_ue4m3_to_f32(0xB8) == 1.0f, "ue4m3 NaN, sign bit ignored");
}

/* Mean of stochastic rounding over many draws (qp_sr_word's words at the
 * width the quantizers give element type e, qp_sr_bits) equals the input. */
static void check_sr_mean(const char *name, qp_elem e, float x, uint32_t (*enc)(float, uint32_t),
                          float (*dec)(uint32_t))
{
    const int bits = qp_sr_bits(e);
    const int N = 200000;
    double sum = 0.0;
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < N; i++) {
        const float v = dec(enc(x, qp_sr_word(12345, 7, (uint64_t)i, bits)));
        sum += v;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    const double mean = sum / N, gap = (double)hi - (double)lo;
    /* Standard error of the mean is at most gap/(2 sqrt N); allow 5 of them. */
    CHECK(fabs(mean - x) <= 5.0 * gap / (2.0 * sqrt((double)N)) + 1e-12 * fabs(x),
          "%s SR mean %.9g for x=%.9g (neighbours %.9g, %.9g)", name, mean, x, lo, hi);
    CHECK(lo <= x && x <= hi, "%s SR brackets x=%g: %g %g", name, x, lo, hi);
}

static uint32_t enc_e4m3(float x, uint32_t r) { return qp_f32_to_e4m3_sr(x, r); }
static uint32_t enc_e5m2(float x, uint32_t r) { return qp_f32_to_e5m2_sr(x, r); }
static uint32_t enc_e2m1(float x, uint32_t r) { return qp_f32_to_e2m1_sr(x, r); }
static uint32_t enc_bf16(float x, uint32_t r) { return qp_f32_to_bf16_sr(x, r); }
static float dec_e4m3(uint32_t c) { return qp_e4m3_to_f32((uint8_t)c); }
static float dec_e5m2(uint32_t c) { return qp_e5m2_to_f32((uint8_t)c); }
static float dec_e2m1(uint32_t c) { return qp_e2m1_to_f32((uint8_t)c); }
static float dec_bf16(uint32_t c) { return qp_bf16_to_f32((uint16_t)c); }
static uint32_t enc_e2m3(float x, uint32_t r) { return qp_f32_to_e2m3_sr(x, r); }
static uint32_t enc_e3m2(float x, uint32_t r) { return qp_f32_to_e3m2_sr(x, r); }
static float dec_e2m3(uint32_t c) { return qp_e2m3_to_f32((uint8_t)c); }
static float dec_e3m2(uint32_t c) { return qp_e3m2_to_f32((uint8_t)c); }

/* The FP6 elements of OCP MX v1.0 (E2M3: bias 1, max 7.5, min subnormal
 * 0.125; E3M2: bias 3, max 28, min subnormal 0.0625), and the round-up E8M0. */
static void test_fp6_and_e8m0_ceil(void)
{
    CHECK(qp_e2m3_to_f32(0x1F) == 7.5f && qp_e2m3_to_f32(0x01) == 0.125f && qp_e2m3_to_f32(0x08) == 1.0f,
          "e2m3 max / min subnormal / one");
    CHECK(qp_e3m2_to_f32(0x1F) == 28.0f && qp_e3m2_to_f32(0x01) == 0.0625f && qp_e3m2_to_f32(0x0C) == 1.0f,
          "e3m2 max / min subnormal / one");
    CHECK(qp_e2m3_to_f32(0x21) == -0.125f && qp_e3m2_to_f32(0x3F) == -28.0f && qp_e2m3_to_f32(0xC8) == 1.0f,
          "fp6 sign in bit 5, bits above ignored");
    for (int c = 0; c < 64; c++) {
        CHECK(qp_f32_to_e2m3(qp_e2m3_to_f32((uint8_t)c)) == c, "e2m3 code %02x", c);
        CHECK(qp_f32_to_e3m2(qp_e3m2_to_f32((uint8_t)c)) == c, "e3m2 code %02x", c);
    }
    CHECK(qp_f32_to_e2m3(7.75f) == 0x1F && qp_f32_to_e2m3(-INFINITY) == 0x3F && qp_f32_to_e2m3(NAN) == 0x1F,
          "e2m3 saturates, NaN -> +max");
    CHECK(qp_f32_to_e3m2(30.0f) == 0x1F && qp_f32_to_e3m2(-1e30f) == 0x3F && qp_f32_to_e3m2(NAN) == 0x1F,
          "e3m2 saturates, NaN -> +max");
    CHECK(qp_f32_to_e2m3(0.0625f) == 0 && qp_f32_to_e2m3(0.1875f) == 2 && qp_f32_to_e2m3(-0.01f) == 0x20,
          "e2m3 subnormal ties to even, underflow keeps the sign");
    CHECK(qp_f32_to_e3m2(1.125f) == 0x0C && qp_f32_to_e3m2(1.375f) == 0x0E, "e3m2 ties to even");
    const float x6[] = {0.3f, -2.71f, 7.3f, 0.07f, 5.55f};
    for (unsigned i = 0; i < sizeof x6 / sizeof x6[0]; i++) check_sr_mean("e2m3", QP_ELEM_E2M3, x6[i], enc_e2m3, dec_e2m3);
    const float x7[] = {0.3f, -21.0f, 0.04f, 13.3f};
    for (unsigned i = 0; i < sizeof x7 / sizeof x7[0]; i++) check_sr_mean("e3m2", QP_ELEM_E3M2, x7[i], enc_e3m2, dec_e3m2);
    CHECK(qp_f32_to_e2m3_sr(100.0f, 0) == 0x1F && qp_f32_to_e3m2_sr(NAN, 5) == 0x1F, "fp6 SR saturates, NaN");

    CHECK(qp_f32_to_e8m0_ceil(1.0f) == 127 && qp_f32_to_e8m0_ceil(1.0000001f) == 128 &&
              qp_f32_to_e8m0_ceil(0.75f) == 127 && qp_f32_to_e8m0_ceil(0.5f) == 126,
          "e8m0 ceil: powers of two stay, others round up");
    CHECK(qp_f32_to_e8m0_ceil(ldexpf(1.0f, -127)) == 0 && qp_f32_to_e8m0_ceil(ldexpf(1.5f, -127)) == 1 &&
              qp_f32_to_e8m0_ceil(1e-45f) == 0 && qp_f32_to_e8m0_ceil(0.0f) == 0,
          "e8m0 ceil at the bottom: 2^-127 is code 0, above it code 1");
    CHECK(qp_f32_to_e8m0_ceil(FLT_MAX) == 0xFE && qp_f32_to_e8m0_ceil(INFINITY) == 0xFF &&
              qp_f32_to_e8m0_ceil(NAN) == 0xFF && qp_f32_to_e8m0_ceil(-3.0f) == 0,
          "e8m0 ceil saturates at 2^127, NaN/Inf -> 0xFF, x <= 0 -> 0");
    for (int e = -126; e < 127; e++) {
        const float p2 = ldexpf(1.0f, e);
        CHECK(qp_f32_to_e8m0_ceil(p2) == qp_f32_to_e8m0(p2) && qp_f32_to_e8m0_ceil(nextafterf(p2, 0)) == e + 127 &&
                  qp_f32_to_e8m0_ceil(nextafterf(p2, INFINITY)) == e + 128,
              "e8m0 floor/ceil around 2^%d", e);
    }
}

static void test_stochastic_rounding(void)
{
    const float xs[] = {0.3f, -0.3f, 1.1f, 2.7f, 5.2f, -4.4f, 0.01f, 0.2f};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) check_sr_mean("e2m1", QP_ELEM_E2M1, xs[i], enc_e2m1, dec_e2m1);
    const float x8[] = {1.03f, -300.7f, 0.0011f, 3e-3f, 100.1f, ldexpf(1.3f, -9)};
    for (unsigned i = 0; i < sizeof x8 / sizeof x8[0]; i++) {
        check_sr_mean("e4m3", QP_ELEM_E4M3, x8[i], enc_e4m3, dec_e4m3);
        check_sr_mean("e5m2", QP_ELEM_E5M2, x8[i], enc_e5m2, dec_e5m2);
    }
    check_sr_mean("e5m2", QP_ELEM_E5M2, ldexpf(1.37f, -16), enc_e5m2, dec_e5m2);
    check_sr_mean("bf16", QP_ELEM_BF16, 1.00123f, enc_bf16, dec_bf16);
    check_sr_mean("bf16", QP_ELEM_BF16, -3.3e-39f, enc_bf16, dec_bf16);
    /* Representable values and saturation are left alone. */
    CHECK(qp_f32_to_e2m1_sr(1.5f, 0) == 3 && qp_f32_to_e2m1_sr(7.0f, 0) == 7, "e2m1 SR exact/saturate");
    CHECK(qp_f32_to_e4m3_sr(448.0f, 0) == 0x7E && qp_f32_to_e4m3_sr(1e9f, 0) == 0x7E, "e4m3 SR saturates");
    CHECK(qp_f32_to_e4m3_sr(NAN, 0) == 0x7F && qp_f32_to_e2m1_sr(NAN, 0) == 0x7, "SR NaN as RN");
    CHECK(qp_f32_to_e4m3_sr(-0.0f, 0) == 0x80, "SR keeps -0");
    CHECK(qp_f32_to_e2m1_sr(1.25f, 0) == 3 && qp_f32_to_e2m1_sr(1.25f, 0xFFFFFFFFu) == 2, "SR extremes");
}

/* Over all 2^bits values of an element's field, x rounds up for exactly
 * ceil(frac * 2^bits - 1/2) of them (frac: x's position between its two
 * neighbours, computed here in double); an exact value never moves. */
static void check_sr_counts(const char *name, float x, int bits, uint32_t (*enc)(float, uint32_t),
                            float (*dec)(uint32_t))
{
    /* the neighbours: word 2^32-1 never rounds up, word 0 does for any frac > 0 */
    const float down = dec(enc(x, 0xFFFFFFFFu)), up = dec(enc(x, 0));
    const uint32_t n = 1u << bits;
    uint32_t ups = 0, strays = 0;
    for (uint32_t field = 0; field < n; field++) {
        const float v = dec(enc(x, qp_sr_word_of(field, 0, bits)));
        ups += v == up && up != down;
        strays += v != up && v != down;
    }
    const double frac = up == down ? 0.0 : ((double)x - (double)down) / ((double)up - (double)down);
    const uint32_t want = (uint32_t)ceil(frac * n - 0.5);
    CHECK(strays == 0 && ups == want, "%s SR at %d bits of x=%.9g (frac %.6f): %u of %u fields up, want %u", name, bits,
          x, frac, ups, n, want);
}

static void test_sr_words(void)
{
    /* The rule's probability, exhaustively over each codec's field. */
    const float x4[] = {1.25f, 1.2509765625f, 1.2529296875f, 1.251953125f, 1.0f + 1.0f / 1024, 5.999f, 0.26f, -2.3f};
    for (unsigned i = 0; i < sizeof x4 / sizeof x4[0]; i++) check_sr_counts("e2m1", x4[i], 8, enc_e2m1, dec_e2m1);
    const float x8[] = {1.03f, -300.7f, 0.0011f, 1.0f + 1.0f / 16 + 1.0f / 4096, 448.0f, 1.0f + 1.0f / 8 - 1e-6f};
    for (unsigned i = 0; i < sizeof x8 / sizeof x8[0]; i++) {
        check_sr_counts("e4m3", x8[i], 8, enc_e4m3, dec_e4m3);
        check_sr_counts("e5m2", x8[i], 8, enc_e5m2, dec_e5m2);
    }
    const float xb[] = {1.00123f, -3.3e-39f, 1.0f + 1.0f / 256 + 1.0f / 65536 / 256, 3.0f};
    for (unsigned i = 0; i < sizeof xb / sizeof xb[0]; i++) check_sr_counts("bf16", xb[i], 16, enc_bf16, dec_bf16);

    /* Which bits an element takes: against Random123's known answer for
     * philox(key 0, counter 0), whose four words serve elements 0-15 at 8
     * bits (low byte first) and 0-7 at 16 bits (low half first). */
    const uint32_t kat[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
    for (int g = 0; g < 16; g++) {
        const uint32_t byte = (kat[g / 4] >> (8 * (g % 4))) & 0xFFu;
        CHECK(qp_sr_word(0, 0, (uint64_t)g, 8) == (byte << 24 | 0x00800000u), "8-bit SR word of element %d: %08x", g,
              qp_sr_word(0, 0, (uint64_t)g, 8));
    }
    for (int g = 0; g < 8; g++) {
        const uint32_t half = (kat[g / 2] >> (16 * (g % 2))) & 0xFFFFu;
        CHECK(qp_sr_word(0, 0, (uint64_t)g, 16) == (half << 16 | 0x00008000u), "16-bit SR word of element %d", g);
    }
    uint32_t r[4];
    qp_philox4x32(0, 1, 0, r);
    CHECK(qp_sr_word(0, 0, 16, 8) >> 24 == (r[0] & 0xFFu) && qp_sr_word(0, 0, 8, 16) >> 16 == (r[0] & 0xFFFFu),
          "element 16 (8-bit) and 8 (16-bit) start counter 1");
    /* The run form agrees with the indexed one at any start. */
    for (int bits = 8; bits <= 16; bits += 8) {
        qp_rng_run g;
        qp_rng_run_init(&g, 77, 3);
        int bad = 0;
        for (uint64_t i = 5; i < 300; i += 1 + i % 3) bad += qp_rng_run_sr_word(&g, i, bits) != qp_sr_word(77, 3, i, bits);
        CHECK(bad == 0, "qp_rng_run_sr_word at %d bits: %d differ", bits, bad);
    }
    CHECK(qp_sr_bits(QP_ELEM_BF16) == 16 && qp_sr_bits(QP_ELEM_E4M3) == 8 && qp_sr_bits(QP_ELEM_E2M1) == 8 &&
              qp_sr_bits(QP_ELEM_E3M2) == 8,
          "SR bits per codec");
}

static void test_philox(void)
{
    /* Known-answer vectors of Philox-4x32-10 (Random123 kat_vectors). */
    uint32_t r[4];
    qp_philox4x32(0, 0, 0, r);
    CHECK(r[0] == 0x6627e8d5u && r[1] == 0xe169c58du && r[2] == 0xbc57ac4cu && r[3] == 0x9b00dbd8u,
          "philox zero: %08x %08x %08x %08x", r[0], r[1], r[2], r[3]);
    qp_philox4x32(0xffffffffffffffffull, 0xffffffffffffffffull, 0xffffffffffffffffull, r);
    CHECK(r[0] == 0x408f276du && r[1] == 0x41c83b0eu && r[2] == 0xa20bc7c6u && r[3] == 0x6d5451fdu,
          "philox ones: %08x %08x %08x %08x", r[0], r[1], r[2], r[3]);
    qp_philox4x32(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull, r);
    CHECK(r[0] == 0xd16cfe09u && r[1] == 0x94fdccebu && r[2] == 0x5001e420u && r[3] == 0x24126ea1u,
          "philox pi: %08x %08x %08x %08x", r[0], r[1], r[2], r[3]);
    CHECK(qp_rng_u32(5, 9, 6) == (qp_philox4x32(5, 1, 9, r), r[2]), "rng word indexing");
}

int main(void)
{
    test_known_values();
    test_round_trip();
    test_rounding_edges();
    test_scale_codecs();
    test_stochastic_rounding();
    test_philox();
    test_sr_words();
    test_fp6_and_e8m0_ceil();
    return qp_test_finish("test_format");
}
