/* test_json.c — the strict JSON parser (io/qp_json.h): what it accepts, how
 * it decodes, and the offset and message of each rejection. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_json.h"
#include "qp_test.h"

static qp_json *parse(const char *s, size_t *off, char *err)
{
    return qp_json_parse(s, strlen(s), off, err, 256);
}

static void accepts(void)
{
    static const char *good[] = {
        "{}", "[]", " \t\r\n{ } \n", "0", "-0", "1.5e-3", "-12E+4", "1e9", "true", "false", "null",
        "\"\"", "[1,[2,[3]],{\"a\":{}}]", "{\"a\":1,\"a\":2}", "\"\\u00e9\\ud83d\\ude00\"",
        "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        size_t off;
        char err[256];
        qp_json *j = parse(good[i], &off, err);
        CHECK(j != NULL, "rejected %s: %s", good[i], j ? "" : err);
        qp_json_free(j);
    }
}

static void decodes(void)
{
    size_t off;
    char err[256];
    const char *doc = "{\"k\\\"ey\": \"a\\n\\u00e9\\ud83d\\ude00\\/\", \"n\": [0, 18446744073709551615, "
                      "18446744073709551616, -3, 2.0, 1e2], \"z\": \"\\u0000x\"}";
    qp_json *j = parse(doc, &off, err);
    CHECK(j && j->type == QP_JSON_OBJECT && j->n == 3, "object of 3");
    if (!j) return;
    CHECK(j->offset == 0, "root offset %zu", j->offset);
    const qp_json *k = &j->items[0];
    CHECK(!strcmp(k->key, "k\"ey") && k->key_offset == 1, "key '%s' at %zu", k->key, k->key_offset);
    CHECK(k->type == QP_JSON_STRING && !strcmp(k->str, "a\n\xc3\xa9\xf0\x9f\x98\x80/"), "string '%s'", k->str);
    CHECK(k->offset == (size_t)(strstr(doc, "\"a\\n") - doc), "value offset %zu", k->offset);
    const qp_json *n = qp_json_get(j, "n");
    CHECK(n && n->type == QP_JSON_ARRAY && n->n == 6, "array of 6");
    uint64_t v = 7;
    CHECK(qp_json_u64(&n->items[0], &v) == 0 && v == 0, "0 -> %llu", (unsigned long long)v);
    CHECK(qp_json_u64(&n->items[1], &v) == 0 && v == UINT64_MAX, "max u64");
    CHECK(qp_json_u64(&n->items[2], &v) == -3, "2^64 overflows");
    CHECK(qp_json_u64(&n->items[3], &v) == -2, "negative");
    CHECK(qp_json_u64(&n->items[4], &v) == -1, "2.0 is not an integer");
    CHECK(qp_json_u64(&n->items[5], &v) == -1, "1e2 is not an integer");
    const qp_json *z = qp_json_get(j, "z");
    CHECK(z && z->len == 2 && z->str[0] == '\0' && z->str[1] == 'x', "embedded NUL kept, len %zu", z ? z->len : 0);
    CHECK(qp_json_get(j, "missing") == NULL, "missing key");
    qp_json_free(j);
}

/* Each rejection: the message fragment and the offset, given as the first
 * occurrence of `at` in the document plus `plus` (at == NULL: offset plus). */
typedef struct {
    const char *doc;
    const char *frag;
    const char *at;
    size_t plus;
} bad_case;

static void rejects(void)
{
    static const bad_case bad[] = {
        {"", "unexpected end of input, expected a value", NULL, 0},
        {"   ", "unexpected end of input, expected a value", NULL, 3},
        {"{", "expected a string key in object, found end of input", NULL, 1},
        {"{\"a\"}", "expected ':' after object key, found '}'", "}", 0},
        {"{\"a\":1,}", "expected a string key in object, found '}'", ",}", 1},
        {"{\"a\":1 \"b\":2}", "expected ',' or '}' in object, found '\"'", " \"b", 1},
        {"[1,]", "expected a value, found ']'", "]", 0},
        {"[1 2]", "expected ',' or ']' in array, found '2'", " 2", 1},
        {"{'a':1}", "expected a string key in object, found '''", "'", 0},
        {"[\"abc", "unterminated string", "\"", 0},
        {"\"ab\\", "unterminated string", NULL, 0},
        {"\"a\nb\"", "control character 0x0a in string", "\n", 0},
        {"\"a\\qb\"", "invalid escape '\\q'", "\\q", 0},
        {"\"a\\u12g4\"", "invalid hex digit in \\u escape", "g", 0},
        {"\"\\ud800\"", "unpaired high surrogate", "\\u", 0},
        {"\"\\udc00\"", "unpaired low surrogate", "\\u", 0},
        {"\"\\ud800\\u0041\"", "high surrogate not followed by a low one", "\\u0041", 0},
        {"\"a\xff\"", "invalid UTF-8 in string", "\xff", 0},
        {"\"\xc0\xaf\"", "invalid UTF-8 in string", "\xc0", 0},      /* overlong '/' */
        {"\"\xed\xa0\x80\"", "invalid UTF-8 in string", "\xed", 0},  /* encoded surrogate */
        {"\"\xf4\x90\x80\x80\"", "invalid UTF-8 in string", "\xf4", 0}, /* > U+10FFFF */
        {"[01]", "leading zero in number", "1", 0},
        {"[-]", "expected a digit in number", "]", 0},
        {"[1.]", "expected a digit after '.' in number", "]", 0},
        {"[1e]", "expected a digit in exponent", "]", 0},
        {"[+1]", "expected a value, found '+'", "+", 0},
        {"[NaN]", "expected a value, found 'N'", "N", 0},
        {"[tru]", "invalid literal (expected true)", "t", 0},
        {"{} x", "trailing 'x' after the JSON value", "x", 0},
        {"{}\x00", "trailing byte 0x00 after the JSON value", NULL, 2},
        {"{/*c*/}", "expected a string key in object, found '/'", "/", 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const bad_case *c = &bad[i];
        const size_t len = c->frag[0] && strstr(c->frag, "byte 0x00") ? 3 : strlen(c->doc);
        size_t off = 12345;
        char err[256] = "";
        qp_json *j = qp_json_parse(c->doc, len, &off, err, sizeof err);
        const size_t want = (c->at ? (size_t)(strstr(c->doc, c->at) - c->doc) : 0) + c->plus;
        CHECK(j == NULL, "accepted case %zu", i);
        CHECK(strstr(err, c->frag) != NULL, "case %zu: message '%s' lacks '%s'", i, err, c->frag);
        CHECK(off == want, "case %zu: offset %zu, want %zu (%s)", i, off, want, err);
        CHECK(!strchr(err, '\n'), "case %zu: message has a newline", i);
        qp_json_free(j);
    }
}

static void depth_limit(void)
{
    char deep[2 * QP_JSON_MAX_DEPTH + 8];
    size_t n = 0, off;
    char err[256];
    for (int i = 0; i <= QP_JSON_MAX_DEPTH; i++) deep[n++] = '[';
    for (int i = 0; i <= QP_JSON_MAX_DEPTH; i++) deep[n++] = ']';
    qp_json *j = qp_json_parse(deep, n, &off, err, sizeof err);
    CHECK(j == NULL && strstr(err, "nesting deeper than") && off == QP_JSON_MAX_DEPTH,
          "depth %d accepted or wrong offset %zu", QP_JSON_MAX_DEPTH + 1, off);
    qp_json_free(j);
    n = 0;
    for (int i = 0; i < QP_JSON_MAX_DEPTH; i++) deep[n++] = '[';
    deep[n++] = '1'; /* a scalar inside the deepest container is fine */
    for (int i = 0; i < QP_JSON_MAX_DEPTH; i++) deep[n++] = ']';
    j = qp_json_parse(deep, n, &off, err, sizeof err);
    CHECK(j != NULL, "depth %d rejected: %s", QP_JSON_MAX_DEPTH, j ? "" : err);
    qp_json_free(j);
}

int main(void)
{
    accepts();
    decodes();
    rejects();
    depth_limit();
    return qp_test_finish("test_json");
}
