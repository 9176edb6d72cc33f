/* qp_json.h — a small strict JSON (RFC 8259) parser into a tree.
 *
 * Owns: the JSON grammar for the safetensors header, nothing more. Strict
 * means: one value, optionally surrounded by whitespace (space, tab, CR, LF);
 * no comments, trailing commas, NaN, leading zeros, single quotes or raw
 * control characters; strings must be valid UTF-8 and \u escapes must pair
 * surrogates. Every node records the byte offset where it starts, so a caller
 * can point at the exact spot of a schema error. Nesting is limited to
 * QP_JSON_MAX_DEPTH so hostile input cannot exhaust the stack. Duplicate
 * object keys are kept (the caller decides whether they are an error). */
#ifndef QP_JSON_H
#define QP_JSON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QP_JSON_MAX_DEPTH 64 /* arrays/objects nested in each other */

typedef enum {
    QP_JSON_NULL,
    QP_JSON_FALSE,
    QP_JSON_TRUE,
    QP_JSON_NUMBER,
    QP_JSON_STRING,
    QP_JSON_ARRAY,
    QP_JSON_OBJECT
} qp_json_type;

typedef struct qp_json qp_json;
struct qp_json {
    qp_json_type type;
    size_t offset;      /* of the value's first byte in the parsed text */
    /* STRING: the decoded UTF-8 (NUL-terminated; len excludes the NUL and may
     * count embedded NULs from \u0000). NUMBER: the literal as written. */
    char *str;
    size_t len;
    /* ARRAY / OBJECT: n children; an object's children carry their key. */
    qp_json *items;
    size_t n;
    char *key;          /* member of an object: decoded key, else NULL */
    size_t key_len;
    size_t key_offset;  /* of the key's opening quote */
};

/* Parse text[0..len). Returns the root (free with qp_json_free), or NULL with
 * a one-line message in err and the offending byte's offset in *err_offset. */
qp_json *qp_json_parse(const char *text, size_t len, size_t *err_offset, char *err, size_t errlen);
void qp_json_free(qp_json *root);

/* An object's member called key (first match), or NULL. */
const qp_json *qp_json_get(const qp_json *obj, const char *key);

/* A NUMBER node as an unsigned 64-bit integer. Returns 0, or
 *   -1 if it is not written as an integer (fraction or exponent),
 *   -2 if it is negative, -3 if it exceeds UINT64_MAX. */
int qp_json_u64(const qp_json *num, uint64_t *v);

const char *qp_json_type_name(qp_json_type t);

/* Length of the valid UTF-8 sequence at s[0] (avail bytes readable), or 0 if
 * there is none (overlong forms, surrogates and > U+10FFFF rejected). */
size_t qp_utf8_seq_len(const unsigned char *s, size_t avail);

#ifdef __cplusplus
}
#endif
#endif
