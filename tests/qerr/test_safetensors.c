/* test_safetensors.c — the safetensors reader and writer (io/qp_safetensors.h)
 * and the 16-bit float codecs it relies on (io/qp_tensor_file.h).
 *
 * Good files go through the writer and back; bad files are built byte by
 * byte, and each must fail with its own message fragment at its own byte
 * offset, leaving the tensor list untouched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qp_safetensors.h"
#include "qp_tensor_file.h"
#include "qp_test.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* An image: 8-byte length of hdr, hdr, then data_len bytes 0, 1, 2, ... */
static uint8_t *image(const char *hdr, size_t hdr_len, size_t data_len, size_t *len)
{
    *len = 8 + hdr_len + data_len;
    uint8_t *b = malloc(*len);
    for (int k = 0; k < 8; k++) b[k] = (uint8_t)((uint64_t)hdr_len >> (8 * k));
    memcpy(b + 8, hdr, hdr_len);
    for (size_t i = 0; i < data_len; i++) b[8 + hdr_len + i] = (uint8_t)i;
    return b;
}

/* --- 16-bit codecs, exhaustively, against an arithmetic definition --- */

static void codecs(void)
{
    int bad_widen = 0, bad_round_trip = 0, bad_mid = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        const int e = (h >> 10) & 31, m = h & 1023;
        const double sign = (h & 0x8000) ? -1.0 : 1.0;
        const float f = qp_f16_bits_to_f32((uint16_t)h);
        if (e == 31) {
            /* Inf or NaN: payload moved up 13 bits, as numpy does */
            const uint32_t want = ((h & 0x8000u) << 16) | 0x7F800000u | ((uint32_t)m << 13);
            bad_widen += bits(f) != want;
            continue;
        }
        const double v = sign * (e ? ldexp(1024 + m, e - 25) : ldexp(m, -24));
        bad_widen += bits(f) != bits((float)v);
        bad_round_trip += qp_f32_to_f16_bits(f) != h;
        /* The midpoint to the next magnitude is a tie: it rounds to the even code. */
        if ((h & 0x7FFF) < 0x7BFF) {
            const float next = qp_f16_bits_to_f32((uint16_t)(h + 1));
            const float mid = (float)(((double)f + (double)next) / 2);
            const uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
            bad_mid += qp_f32_to_f16_bits(mid) != even;
        }
    }
    CHECK(bad_widen == 0, "%d F16 patterns widen wrongly", bad_widen);
    CHECK(bad_round_trip == 0, "%d F16 values do not round-trip", bad_round_trip);
    CHECK(bad_mid == 0, "%d F16 midpoints not rounded to even", bad_mid);
    CHECK(qp_f32_to_f16_bits(65519.996f) == 0x7BFF, "just below the overflow tie");
    CHECK(qp_f32_to_f16_bits(65520.0f) == 0x7C00, "65520 ties to Inf");
    CHECK(qp_f32_to_f16_bits(-1e9f) == 0xFC00, "overflow to -Inf");
    CHECK((qp_f32_to_f16_bits(from_bits(0x7F800001u)) & 0x7FFF) > 0x7C00, "NaN with a low payload stays NaN");
    CHECK(qp_f32_to_f16_bits(ldexpf(1.0f, -25)) == 0, "2^-25 ties to 0");
    CHECK(qp_f32_to_f16_bits(ldexpf(1.5f, -25)) == 1, "1.5*2^-25 rounds up to the smallest subnormal");

    int bad_bf = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        const float f = qp_bf16_bits_to_f32((uint16_t)b);
        bad_bf += bits(f) != b << 16;
        if ((b & 0x7F80) != 0x7F80) bad_bf += qp_f32_to_bf16_bits(f) != b;
    }
    CHECK(bad_bf == 0, "%d BF16 patterns wrong", bad_bf);
    CHECK(qp_f32_to_bf16_bits(from_bits(0x3F808000u)) == 0x3F80, "tie to even (down)");
    CHECK(qp_f32_to_bf16_bits(from_bits(0x3F818000u)) == 0x3F82, "tie to even (up)");
    CHECK(qp_f32_to_bf16_bits(from_bits(0x7F800001u)) == 0x7FC0, "NaN stays NaN");
}

/* --- good files --- */

static int notes;
static void count_note(const char *msg, void *user)
{
    (void)user;
    notes++;
    CHECK(strstr(msg, "dtype I64 is not read") && !strchr(msg, '\n'), "note '%s'", msg);
}

static int want_not_b(const char *name, void *user)
{
    (void)user;
    return strcmp(name, "b") != 0;
}

static void good_files(void)
{
    const char *path = "test_safetensors_good.safetensors";
    float w[6] = {1.0f, -2.5f, 3.25f, 0.0f, -0.0f, 1e-3f};
    uint16_t h[4], bf[4];
    const float hv[4] = {0.5f, -65504.0f, 5.96046448e-8f /* smallest subnormal */, 1.0f / 3};
    for (int i = 0; i < 4; i++) {
        h[i] = qp_f32_to_f16_bits(hv[i]);
        bf[i] = qp_f32_to_bf16_bits(hv[i]);
    }
    double d[2] = {1.0 / 3, 1e300};
    int64_t iv[3] = {1, 2, 3};
    const int64_t s_w[3] = {1, 2, 3}, s_h[1] = {4}, s_bf[2] = {2, 2}, s_d[1] = {2}, s_i[1] = {3}, s_e[2] = {0, 5};
    const qp_st_tensor t[] = {
        {"layers.0.w \"q\"", "F32", 3, s_w, w, sizeof w},
        {"h", "F16", 1, s_h, h, sizeof h},
        {"b", "BF16", 2, s_bf, bf, sizeof bf},
        {"scalar", "F32", 0, NULL, w, 4},
        {"d", "F64", 1, s_d, d, sizeof d},
        {"ids", "I64", 1, s_i, iv, sizeof iv},
        {"empty", "F32", 2, s_e, NULL, 0},
    };
    const char *meta[] = {"format", "pt", "note", "caf\xc3\xa9\n", NULL};
    char err[QP_ERR_LEN];
    CHECK(qp_safetensors_write(path, t, sizeof t / sizeof *t, meta, err, sizeof err) == 0, "write: %s", err);

    qp_tensor_list l;
    qp_tensor_list_init(&l);
    qp_read_opts ro = {NULL, count_note, NULL};
    notes = 0;
    CHECK(qp_safetensors_read(path, &ro, &l, err, sizeof err) == 0, "read: %s", err);
    CHECK(notes == 1, "%d notes", notes);
    CHECK(l.n == 6, "%zu tensors (I64 skipped)", l.n);
    if (l.n == 6) {
        const qp_tensor *x = &l.t[0];
        CHECK(!strcmp(x->name, "layers.0.w \"q\"") && x->dtype == QP_DTYPE_F32 && x->ndim == 3 &&
              x->rows == 2 && x->cols == 3 && x->numel == 6, "F32 tensor header");
        CHECK(memcmp(x->data, w, sizeof w) == 0, "F32 data");
        x = &l.t[1];
        CHECK(x->dtype == QP_DTYPE_F16 && x->rows == 1 && x->cols == 4, "F16 header");
        for (int i = 0; i < 4; i++)
            CHECK(bits(x->data[i]) == bits(qp_f16_bits_to_f32(h[i])), "F16 value %d", i);
        CHECK(x->data[2] == ldexpf(1.0f, -24), "F16 subnormal exact");
        x = &l.t[2];
        CHECK(x->dtype == QP_DTYPE_BF16 && x->rows == 2 && x->cols == 2, "BF16 header");
        for (int i = 0; i < 4; i++) CHECK(bits(x->data[i]) == (uint32_t)bf[i] << 16, "BF16 value %d", i);
        x = &l.t[3];
        CHECK(x->ndim == 0 && x->rows == 1 && x->cols == 1 && x->data[0] == 1.0f, "0-d tensor is 1 x 1");
        x = &l.t[4];
        CHECK(x->dtype == QP_DTYPE_F64 && x->data[0] == (float)(1.0 / 3) && isinf(x->data[1]),
              "F64 rounded, overflow to Inf");
        x = &l.t[5];
        CHECK(!strcmp(x->name, "empty") && x->numel == 0 && x->data == NULL && x->rows == 0 && x->cols == 5,
              "empty tensor");
    }
    CHECK(l.n_meta == 2 && !strcmp(l.meta[0].key, "format") && !strcmp(l.meta[1].value, "caf\xc3\xa9\n"),
          "metadata");
    qp_tensor_list_free(&l);

    /* A filter keeps "b" out without a note; I64 still gets its note. */
    qp_tensor_list_init(&l);
    ro.want = want_not_b;
    notes = 0;
    CHECK(qp_safetensors_read(path, &ro, &l, err, sizeof err) == 0, "filtered read: %s", err);
    int has_b = 0;
    for (size_t i = 0; i < l.n; i++) has_b |= !strcmp(l.t[i].name, "b");
    CHECK(l.n == 5 && !has_b && notes == 1, "filter: %zu tensors, notes %d", l.n, notes);
    qp_tensor_list_free(&l);
    unlink(path);

    /* Hand-written: whitespace, padding, overlapping offsets, key order. */
    const char *hdr = " { \"__metadata__\" : { } ,\n \"a\" : { \"data_offsets\" : [ 0 , 8 ] , "
                      "\"shape\" : [ 2 ] , \"dtype\" : \"F32\" } , \"b\":{\"dtype\":\"BF16\",\"shape\":[2,2],"
                      "\"data_offsets\":[0,8]}}        ";
    size_t len;
    uint8_t *img = image(hdr, strlen(hdr), 8, &len);
    qp_tensor_list_init(&l);
    CHECK(qp_safetensors_parse(img, len, "mem", NULL, &l, err, sizeof err) == 0, "hand-written: %s", err);
    CHECK(l.n == 2 && !strcmp(l.t[0].name, "a") && !strcmp(l.t[1].name, "b") && l.t[1].rows == 2,
          "header order kept");
    if (l.n == 2) {
        CHECK(bits(l.t[0].data[0]) == 0x03020100u, "little-endian F32 from unaligned data");
        CHECK(bits(l.t[1].data[0]) == 0x01000000u && bits(l.t[1].data[3]) == 0x07060000u, "BF16 overlapping a");
    }
    qp_tensor_list_free(&l);
    free(img);

    /* Header of zero tensors. */
    img = image("{}", 2, 0, &len);
    qp_tensor_list_init(&l);
    CHECK(qp_safetensors_parse(img, len, "mem", NULL, &l, err, sizeof err) == 0 && l.n == 0, "empty header");
    qp_tensor_list_free(&l);
    free(img);

    /* The writer refuses a byte count that does not match the shape. */
    CHECK(qp_safetensors_write(path, &t[0], 1, NULL, err, sizeof err) == 0, "write one");
    qp_st_tensor wrong = t[0];
    wrong.nbytes = 20;
    CHECK(qp_safetensors_write(path, &wrong, 1, NULL, err, sizeof err) == -1 && strstr(err, "byte count"),
          "writer checks sizes: %s", err);
    unlink(path);
    CHECK(qp_safetensors_read("no/such/file.safetensors", NULL, &l, err, sizeof err) == -1 &&
              strstr(err, "no/such/file.safetensors: No such file or directory"),
          "missing file: %s", err);
}

/* --- bad files --- */

typedef struct {
    const char *hdr;
    size_t data_len;
    const char *frag;
    const char *at;   /* offset = 8 + first occurrence of at in hdr + plus */
    size_t plus;
} bad_case;

#define T(name_dtype_shape_offs) "{\"w\":{" name_dtype_shape_offs "}}"

static void bad_headers(void)
{
    static const bad_case bad[] = {
        /* JSON */
        {"", 0, "invalid JSON header: unexpected end of input", NULL, 0},
        {"{\"w\":{\"dtype\":\"F32\",}}", 0, "invalid JSON header: expected a string key", ",}", 1},
        {"{\"w\" {}}", 0, "invalid JSON header: expected ':' after object key", " {", 1},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]}}", 4, "expected a value, found ']'",
         ",]", 1},
        {"{\"w\":{\"dtype\":\"F3", 0, "invalid JSON header: unterminated string", "\"F3", 0},
        {"{\"w\":{\"dtype\":\"F32\"", 0, "expected ',' or '}' in object, found end of input", NULL, 19},
        {"{\"w\":{}} x", 0, "trailing 'x' after the JSON value", "x", 0},
        {"{\"a\x01\":1}", 0, "control character 0x01 in string", "\x01", 0},
        {"{\"\xfe\":1}", 0, "invalid UTF-8 in string", "\xfe", 0},
        {"{\"w\":{\"shape\":[01]}}", 0, "leading zero in number", "1]", 0},
        /* schema */
        {"[]", 0, "header must be an object, found array", "[", 0},
        {"{\"w\":[1]}", 0, "tensor 'w': entry must be an object, found array", "[", 0},
        {T("\"dtype\":\"F31\",\"shape\":[1],\"data_offsets\":[0,4]"), 4, "tensor 'w': unknown dtype 'F31'",
         "\"F31\"", 0},
        {T("\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]"), 4, "\"dtype\" must be a string, found number",
         "32", 0},
        {T("\"dtype\":\"F32\",\"shape\":[1]"), 4, "tensor 'w': missing \"data_offsets\"", "{\"d", 0},
        {T("\"shape\":[1],\"data_offsets\":[0,4]"), 4, "tensor 'w': missing \"dtype\"", "{\"s", 0},
        {T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1"), 4,
         "tensor 'w': unexpected key 'extra'", "\"extra\"", 0},
        {T("\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4,
         "duplicate key 'dtype'", ",\"dtype\"", 1},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "duplicate tensor name 'w'",
         ",\"w\"", 1},
        {"{\"w\\u0000x\":{}}", 0, "tensor name contains a NUL character", "\"w", 0},
        {"{\"__metadata__\":[]}", 0, "\"__metadata__\" must be an object, found array", "[", 0},
        {"{\"__metadata__\":{\"k\":1}}", 0, "metadata 'k' must be a string, found number", "1", 0},
        /* shape */
        {T("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]"), 4, "negative shape dimension -1", "-1", 0},
        {T("\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]"), 8, "shape dimension 2.0 is not an integer",
         "2.0", 0},
        {T("\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]"), 8,
         "shape dimension must be an integer, found string", "\"2\"", 0},
        {T("\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]"), 4,
         "shape dimension 99999999999999999999 too large", "999", 0},
        {T("\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,4]"), 4,
         "shape dimension 9223372036854775808 too large", "922", 0},
        {T("\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]"), 4,
         "shape product overflows 64 bits", "[4", 0},
        {T("\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]"), 4, "rank 9 exceeds 8",
         "[1", 0},
        {T("\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,4]"), 4, "\"shape\" must be an array, found object",
         "{}", 0},
        {T("\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776,0],\"data_offsets\":[0,4]"), 4,
         "data_offsets span 4 bytes, but shape [1099511627776, 1099511627776, 0] of F32 needs 0", "[0,", 0},
        {T("\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,4]"), 4,
         "needs more than 2^64 bytes", "[0,", 0},
        /* data_offsets */
        {T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]"), 4,
         "tensor 'w': data_offsets [0, 8] past end of data (4 bytes)", "[0,", 0},
        {T("\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]"), 8,
         "data_offsets span 8 bytes, but shape [3] of F32 needs 12", "[0,", 0},
        {T("\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,6]"), 8,
         "data_offsets span 6 bytes, but shape [2, 2] of BF16 needs 8", "[0,", 0},
        {T("\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,4]"), 8,
         "data_offsets span 4 bytes, but shape [1] of I64 needs 8", "[0,", 0},
        {T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]"), 8, "data_offsets begin 8 > end 4", "[8,", 0},
        {T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]"), 8, "negative data offset -4", "-4", 0},
        {T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]"), 8,
         "\"data_offsets\" must be an array of 2 integers", "[0]", 0},
        {T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]"), 8,
         "data offset 18446744073709551616 too large", "184", 0},
        {T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,null]"), 8, "data offset is not an integer",
         "null", 0},
    };
    qp_tensor_list l;
    qp_tensor_list_init(&l);
    /* A tensor already in the list must survive every failure. */
    float *keep = malloc(sizeof(float));
    keep[0] = 42.0f;
    const int64_t one = 1;
    char err[QP_ERR_LEN];
    qp_tensor_list_add(&l, "keep", QP_DTYPE_F32, 1, &one, keep, err, sizeof err);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const bad_case *c = &bad[i];
        size_t len;
        uint8_t *img = image(c->hdr, strlen(c->hdr), c->data_len, &len);
        char want[QP_ERR_LEN];
        const size_t off = 8 + (c->at ? (size_t)(strstr(c->hdr, c->at) - c->hdr) : 0) + c->plus;
        snprintf(want, sizeof want, "bad.safetensors: byte %zu: ", off);
        err[0] = '\0';
        const int rc = qp_safetensors_parse(img, len, "bad.safetensors", NULL, &l, err, sizeof err);
        CHECK(rc == -1, "case %zu accepted: %s", i, c->hdr);
        CHECK(strncmp(err, want, strlen(want)) == 0, "case %zu: '%s' does not start with '%s'", i, err, want);
        CHECK(strstr(err, c->frag) != NULL, "case %zu: '%s' lacks '%s'", i, err, c->frag);
        CHECK(!strchr(err, '\n'), "case %zu: multi-line message", i);
        CHECK(l.n == 1 && l.n_meta == 0 && l.t[0].data[0] == 42.0f, "case %zu: list changed", i);
        free(img);
    }

    /* File-level defects. */
    static const struct {
        uint8_t bytes[24];
        size_t len;
        const char *frag;
    } file_bad[] = {
        {{0}, 0, "bad.safetensors: byte 0: truncated file: 0 bytes, shorter than the 8-byte header length"},
        {{2, 0, 0, 0, 0}, 5, "bad.safetensors: byte 0: truncated file: 5 bytes"},
        {{100, 0, 0, 0, 0, 0, 0, 0, '{', '}'}, 10,
         "bad.safetensors: byte 0: header length 100 runs past end of file (2 bytes follow the length field)"},
        {{0, 0, 0, 0, 0, 0, 0, 0x80, '{', '}'}, 10, "bad.safetensors: byte 0: header length 9223372036854775808 runs past"},
        {{3, 0, 0, 0, 0, 0, 0, 0, '{', '}'}, 10, "bad.safetensors: byte 0: header length 3 runs past end of file"},
    };
    for (size_t i = 0; i < sizeof file_bad / sizeof *file_bad; i++) {
        err[0] = '\0';
        const int rc = qp_safetensors_parse(file_bad[i].bytes, file_bad[i].len, "bad.safetensors", NULL, &l, err,
                                            sizeof err);
        CHECK(rc == -1 && strstr(err, file_bad[i].frag) == err, "file case %zu: '%s'", i, err);
        CHECK(l.n == 1, "file case %zu: list changed", i);
    }
    qp_tensor_list_free(&l);
}

int main(void)
{
    codecs();
    good_files();
    bad_headers();
    return qp_test_finish("test_safetensors");
}
