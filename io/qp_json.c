/* qp_json.c — strict recursive-descent JSON parser (see qp_json.h). */
#include "qp_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const unsigned char *s;
    size_t len, pos;
    size_t err_off;
    char *err;
    size_t errlen;
    int failed;
} parser;

__attribute__((format(printf, 3, 4)))
static void fail(parser *p, size_t off, const char *fmt, ...)
{
    if (p->failed) return; /* keep the first, innermost error */
    p->failed = 1;
    p->err_off = off;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
}

static void describe_byte(const parser *p, size_t off, char *buf, size_t n)
{
    if (off >= p->len) snprintf(buf, n, "end of input");
    else if (p->s[off] >= 0x20 && p->s[off] < 0x7F) snprintf(buf, n, "'%c'", p->s[off]);
    else snprintf(buf, n, "byte 0x%02x", p->s[off]);
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        const unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static void node_free(qp_json *n)
{
    free(n->str);
    free(n->key);
    for (size_t i = 0; i < n->n; i++) node_free(&n->items[i]);
    free(n->items);
}

void qp_json_free(qp_json *root)
{
    if (!root) return;
    node_free(root);
    free(root);
}

size_t qp_utf8_seq_len(const unsigned char *s, size_t avail)
{
    if (avail == 0) return 0;
    const unsigned char c = s[0];
    unsigned char lo = 0x80, hi = 0xBF;
    size_t n;
    if (c < 0x80) return 1;
    else if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (avail < n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return n;
}

static size_t utf8_put(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int hex4(parser *p, size_t at, uint32_t *v)
{
    *v = 0;
    for (size_t i = 0; i < 4; i++) {
        if (at + i >= p->len) {
            fail(p, p->len, "unexpected end of input in \\u escape");
            return -1;
        }
        const unsigned char c = p->s[at + i];
        uint32_t d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else {
            fail(p, at + i, "invalid hex digit in \\u escape");
            return -1;
        }
        *v = *v << 4 | d;
    }
    return 0;
}

/* Parse a string at p->pos (which holds '"'); the decoded text is never
 * longer than the raw one, so one allocation of the raw length suffices. */
static int parse_string(parser *p, char **out, size_t *outlen)
{
    const size_t start = p->pos++;
    size_t end = p->pos;
    while (end < p->len && p->s[end] != '"') end += (p->s[end] == '\\') ? 2 : 1;
    char *buf = malloc((end > p->len ? p->len : end) - start + 1);
    if (!buf) {
        fail(p, start, "out of memory");
        return -1;
    }
    size_t o = 0;
    for (;;) {
        if (p->pos >= p->len) {
            fail(p, start, "unterminated string");
            goto bad;
        }
        const unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) {
            fail(p, p->pos, "control character 0x%02x in string", c);
            goto bad;
        }
        if (c != '\\') {
            const size_t k = qp_utf8_seq_len(p->s + p->pos, p->len - p->pos);
            if (k == 0) {
                fail(p, p->pos, "invalid UTF-8 in string");
                goto bad;
            }
            memcpy(buf + o, p->s + p->pos, k);
            o += k;
            p->pos += k;
            continue;
        }
        const size_t esc = p->pos;
        if (esc + 1 >= p->len) {
            fail(p, start, "unterminated string");
            goto bad;
        }
        const unsigned char e = p->s[esc + 1];
        p->pos += 2;
        switch (e) {
        case '"': buf[o++] = '"'; break;
        case '\\': buf[o++] = '\\'; break;
        case '/': buf[o++] = '/'; break;
        case 'b': buf[o++] = '\b'; break;
        case 'f': buf[o++] = '\f'; break;
        case 'n': buf[o++] = '\n'; break;
        case 'r': buf[o++] = '\r'; break;
        case 't': buf[o++] = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (hex4(p, p->pos, &cp)) goto bad;
            p->pos += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                fail(p, esc, "unpaired low surrogate in \\u escape");
                goto bad;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (p->pos + 1 >= p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
                    fail(p, esc, "unpaired high surrogate in \\u escape");
                    goto bad;
                }
                if (hex4(p, p->pos + 2, &lo)) goto bad;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    fail(p, p->pos, "high surrogate not followed by a low one");
                    goto bad;
                }
                p->pos += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            /* 6 or 12 escape bytes always cover the 1..4 UTF-8 bytes. */
            o += utf8_put(buf + o, cp);
            break;
        }
        default:
            fail(p, esc, "invalid escape '\\%c'", e >= 0x20 && e < 0x7F ? e : '?');
            goto bad;
        }
    }
    buf[o] = '\0';
    *out = buf;
    *outlen = o;
    return 0;
bad:
    free(buf);
    return -1;
}

static int parse_number(parser *p, qp_json *n)
{
    const size_t start = p->pos;
    size_t i = p->pos;
    if (i < p->len && p->s[i] == '-') i++;
    if (i >= p->len || p->s[i] < '0' || p->s[i] > '9') {
        fail(p, i, "expected a digit in number");
        return -1;
    }
    if (p->s[i] == '0') {
        i++;
        if (i < p->len && p->s[i] >= '0' && p->s[i] <= '9') {
            fail(p, i, "leading zero in number");
            return -1;
        }
    } else {
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9') i++;
    }
    if (i < p->len && p->s[i] == '.') {
        i++;
        if (i >= p->len || p->s[i] < '0' || p->s[i] > '9') {
            fail(p, i, "expected a digit after '.' in number");
            return -1;
        }
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9') i++;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-')) i++;
        if (i >= p->len || p->s[i] < '0' || p->s[i] > '9') {
            fail(p, i, "expected a digit in exponent");
            return -1;
        }
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9') i++;
    }
    n->type = QP_JSON_NUMBER;
    n->len = i - start;
    n->str = malloc(n->len + 1);
    if (!n->str) {
        fail(p, start, "out of memory");
        return -1;
    }
    memcpy(n->str, p->s + start, n->len);
    n->str[n->len] = '\0';
    p->pos = i;
    return 0;
}

static int parse_value(parser *p, qp_json *n, int depth);

/* Grow a child array by one zeroed slot. */
static qp_json *push_child(parser *p, qp_json *n, size_t *cap)
{
    if (n->n == *cap) {
        size_t c = *cap ? 2 * *cap : 4;
        qp_json *items = realloc(n->items, c * sizeof *items);
        if (!items) {
            fail(p, p->pos, "out of memory");
            return NULL;
        }
        n->items = items;
        *cap = c;
    }
    qp_json *c = &n->items[n->n++];
    memset(c, 0, sizeof *c);
    return c;
}

static int parse_array(parser *p, qp_json *n, int depth)
{
    size_t cap = 0;
    char what[32];
    n->type = QP_JSON_ARRAY;
    p->pos++; /* '[' */
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ']') {
        p->pos++;
        return 0;
    }
    for (;;) {
        qp_json *c = push_child(p, n, &cap);
        if (!c || parse_value(p, c, depth + 1)) return -1;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == ']') {
            p->pos++;
            return 0;
        }
        describe_byte(p, p->pos, what, sizeof what);
        fail(p, p->pos, "expected ',' or ']' in array, found %s", what);
        return -1;
    }
}

static int parse_object(parser *p, qp_json *n, int depth)
{
    size_t cap = 0;
    char what[32];
    n->type = QP_JSON_OBJECT;
    p->pos++; /* '{' */
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != '"') {
            describe_byte(p, p->pos, what, sizeof what);
            fail(p, p->pos, "expected a string key in object, found %s", what);
            return -1;
        }
        qp_json *c = push_child(p, n, &cap);
        if (!c) return -1;
        c->key_offset = p->pos;
        if (parse_string(p, &c->key, &c->key_len)) return -1;
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != ':') {
            describe_byte(p, p->pos, what, sizeof what);
            fail(p, p->pos, "expected ':' after object key, found %s", what);
            return -1;
        }
        p->pos++;
        if (parse_value(p, c, depth + 1)) return -1;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == '}') {
            p->pos++;
            return 0;
        }
        describe_byte(p, p->pos, what, sizeof what);
        fail(p, p->pos, "expected ',' or '}' in object, found %s", what);
        return -1;
    }
}

static int parse_literal(parser *p, qp_json *n, const char *word, qp_json_type t)
{
    const size_t k = strlen(word);
    if (p->len - p->pos < k || memcmp(p->s + p->pos, word, k) != 0) {
        fail(p, p->pos, "invalid literal (expected %s)", word);
        return -1;
    }
    n->type = t;
    p->pos += k;
    return 0;
}

static int parse_value(parser *p, qp_json *n, int depth)
{
    char what[32];
    skip_ws(p);
    n->offset = p->pos;
    if (p->pos >= p->len) {
        fail(p, p->pos, "unexpected end of input, expected a value");
        return -1;
    }
    const unsigned char c = p->s[p->pos];
    if ((c == '{' || c == '[') && depth >= QP_JSON_MAX_DEPTH) {
        fail(p, p->pos, "nesting deeper than %d", QP_JSON_MAX_DEPTH);
        return -1;
    }
    switch (c) {
    case '{': return parse_object(p, n, depth);
    case '[': return parse_array(p, n, depth);
    case '"':
        n->type = QP_JSON_STRING;
        return parse_string(p, &n->str, &n->len);
    case 't': return parse_literal(p, n, "true", QP_JSON_TRUE);
    case 'f': return parse_literal(p, n, "false", QP_JSON_FALSE);
    case 'n': return parse_literal(p, n, "null", QP_JSON_NULL);
    default:
        if (p->s[p->pos] == '-' || (p->s[p->pos] >= '0' && p->s[p->pos] <= '9'))
            return parse_number(p, n);
        describe_byte(p, p->pos, what, sizeof what);
        fail(p, p->pos, "expected a value, found %s", what);
        return -1;
    }
}

qp_json *qp_json_parse(const char *text, size_t len, size_t *err_offset, char *err, size_t errlen)
{
    parser p = {(const unsigned char *)text, len, 0, 0, err, errlen, 0};
    qp_json *root = calloc(1, sizeof *root);
    if (!root) {
        snprintf(err, errlen, "out of memory");
        *err_offset = 0;
        return NULL;
    }
    if (parse_value(&p, root, 0) == 0) {
        skip_ws(&p);
        if (p.pos < p.len) {
            char what[32];
            describe_byte(&p, p.pos, what, sizeof what);
            fail(&p, p.pos, "trailing %s after the JSON value", what);
        }
    }
    if (p.failed) {
        *err_offset = p.err_off;
        qp_json_free(root);
        return NULL;
    }
    return root;
}

const qp_json *qp_json_get(const qp_json *obj, const char *key)
{
    if (!obj || obj->type != QP_JSON_OBJECT) return NULL;
    const size_t k = strlen(key);
    for (size_t i = 0; i < obj->n; i++)
        if (obj->items[i].key_len == k && memcmp(obj->items[i].key, key, k) == 0)
            return &obj->items[i];
    return NULL;
}

int qp_json_u64(const qp_json *num, uint64_t *v)
{
    const char *s = num->str;
    if (num->type != QP_JSON_NUMBER) return -1;
    if (strpbrk(s, ".eE")) return -1;
    if (s[0] == '-') return -2;
    uint64_t x = 0;
    for (; *s; s++) {
        if (__builtin_mul_overflow(x, 10u, &x) || __builtin_add_overflow(x, (uint64_t)(*s - '0'), &x))
            return -3;
    }
    *v = x;
    return 0;
}

const char *qp_json_type_name(qp_json_type t)
{
    switch (t) {
    case QP_JSON_NULL: return "null";
    case QP_JSON_FALSE:
    case QP_JSON_TRUE: return "boolean";
    case QP_JSON_NUMBER: return "number";
    case QP_JSON_STRING: return "string";
    case QP_JSON_ARRAY: return "array";
    case QP_JSON_OBJECT: return "object";
    }
    return "?";
}
