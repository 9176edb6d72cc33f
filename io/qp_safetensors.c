/* qp_safetensors.c — safetensors parse, read and write (see qp_safetensors.h). */
#include "qp_safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qp_json.h"

typedef struct {
    const char *name;
    int bits;        /* per element */
    int convert;     /* 1: read as float32, 0: validated, then skipped */
    qp_dtype dtype;  /* when convert */
} dtype_info;

static const dtype_info DTYPES[] = {
    {"F32", 32, 1, QP_DTYPE_F32},    {"F16", 16, 1, QP_DTYPE_F16},
    {"BF16", 16, 1, QP_DTYPE_BF16},  {"F64", 64, 1, QP_DTYPE_F64},
    {"BOOL", 8, 0, 0},               {"U8", 8, 0, 0},
    {"I8", 8, 0, 0},                 {"U16", 16, 0, 0},
    {"I16", 16, 0, 0},               {"U32", 32, 0, 0},
    {"I32", 32, 0, 0},               {"U64", 64, 0, 0},
    {"I64", 64, 0, 0},               {"F8_E4M3", 8, 0, 0},
    {"F8_E5M2", 8, 0, 0},            {"F8_E8M0", 8, 0, 0},
    {"F6_E2M3", 6, 0, 0},            {"F6_E3M2", 6, 0, 0},
    {"F4", 4, 0, 0},                 {"C64", 64, 0, 0},
};

static const dtype_info *dtype_lookup(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
        if (strlen(DTYPES[i].name) == len && memcmp(DTYPES[i].name, s, len) == 0)
            return &DTYPES[i];
    return NULL;
}

/* A validated tensor entry, before conversion. */
typedef struct {
    const qp_json *entry;
    const dtype_info *dt;
    int ndim;
    int64_t shape[QP_TENSOR_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end;
} st_entry;

typedef struct {
    const char *label;
    char *err;
    size_t errlen;
} ctx;

__attribute__((format(printf, 3, 4)))
static int fail_at(const ctx *c, size_t off, const char *fmt, ...)
{
    char msg[QP_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s: byte %zu: %s", c->label, off, msg);
    return -1;
}

static const char *esc(const char *name, char *buf, size_t n)
{
    return qp_escape_name(name, buf, n);
}

/* hdr: offset of the JSON header in the file, added to every JSON offset. */
static int check_shape(const ctx *c, size_t hdr, const char *name, const qp_json *v, st_entry *e)
{
    char nb[128];
    if (v->type != QP_JSON_ARRAY)
        return fail_at(c, hdr + v->offset, "tensor '%s': \"shape\" must be an array, found %s",
                       esc(name, nb, sizeof nb), qp_json_type_name(v->type));
    if (v->n > QP_TENSOR_MAX_DIMS)
        return fail_at(c, hdr + v->offset, "tensor '%s': rank %zu exceeds %d",
                       esc(name, nb, sizeof nb), v->n, QP_TENSOR_MAX_DIMS);
    e->ndim = (int)v->n;
    for (size_t i = 0; i < v->n; i++) {
        const qp_json *d = &v->items[i];
        uint64_t u;
        if (d->type != QP_JSON_NUMBER)
            return fail_at(c, hdr + d->offset, "tensor '%s': shape dimension must be an integer, found %s",
                           esc(name, nb, sizeof nb), qp_json_type_name(d->type));
        const int r = qp_json_u64(d, &u);
        if (r == -1)
            return fail_at(c, hdr + d->offset, "tensor '%s': shape dimension %s is not an integer",
                           esc(name, nb, sizeof nb), d->str);
        if (r == -2)
            return fail_at(c, hdr + d->offset, "tensor '%s': negative shape dimension %s",
                           esc(name, nb, sizeof nb), d->str);
        if (r == -3 || u > (uint64_t)INT64_MAX)
            return fail_at(c, hdr + d->offset, "tensor '%s': shape dimension %s too large",
                           esc(name, nb, sizeof nb), d->str);
        e->shape[i] = (int64_t)u;
    }
    if (qp_shape_numel(e->ndim, e->shape, &e->numel) != 0)
        return fail_at(c, hdr + v->offset, "tensor '%s': shape product overflows 64 bits",
                       esc(name, nb, sizeof nb));
    return 0;
}

static int check_offsets(const ctx *c, size_t hdr, const char *name, const qp_json *v,
                         size_t data_len, st_entry *e)
{
    char nb[128];
    if (v->type != QP_JSON_ARRAY || v->n != 2)
        return fail_at(c, hdr + v->offset, "tensor '%s': \"data_offsets\" must be an array of 2 integers",
                       esc(name, nb, sizeof nb));
    uint64_t o[2];
    for (int i = 0; i < 2; i++) {
        const qp_json *d = &v->items[i];
        const int r = d->type == QP_JSON_NUMBER ? qp_json_u64(d, &o[i]) : -1;
        if (r == -1)
            return fail_at(c, hdr + d->offset, "tensor '%s': data offset is not an integer",
                           esc(name, nb, sizeof nb));
        if (r == -2)
            return fail_at(c, hdr + d->offset, "tensor '%s': negative data offset %s",
                           esc(name, nb, sizeof nb), d->str);
        if (r == -3)
            return fail_at(c, hdr + d->offset, "tensor '%s': data offset %s too large",
                           esc(name, nb, sizeof nb), d->str);
    }
    if (o[0] > o[1])
        return fail_at(c, hdr + v->offset, "tensor '%s': data_offsets begin %llu > end %llu",
                       esc(name, nb, sizeof nb), (unsigned long long)o[0], (unsigned long long)o[1]);
    if (o[1] > data_len)
        return fail_at(c, hdr + v->offset, "tensor '%s': data_offsets [%llu, %llu] past end of data (%zu bytes)",
                       esc(name, nb, sizeof nb), (unsigned long long)o[0], (unsigned long long)o[1], data_len);
    /* bytes = ceil(numel * bits / 8); numel <= INT64_MAX and bits <= 64 */
    unsigned __int128 need = ((unsigned __int128)(uint64_t)e->numel * (unsigned)e->dt->bits + 7) / 8;
    if (need != o[1] - o[0]) {
        char shape[160];
        size_t k = 0;
        shape[k++] = '[';
        for (int i = 0; i < e->ndim && k < sizeof shape - 24; i++)
            k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld", i ? ", " : "", (long long)e->shape[i]);
        snprintf(shape + k, sizeof shape - k, "]");
        if (need > (unsigned __int128)UINT64_MAX)
            return fail_at(c, hdr + v->offset, "tensor '%s': shape %s of %s needs more than 2^64 bytes",
                           esc(name, nb, sizeof nb), shape, e->dt->name);
        return fail_at(c, hdr + v->offset,
                       "tensor '%s': data_offsets span %llu bytes, but shape %s of %s needs %llu",
                       esc(name, nb, sizeof nb), (unsigned long long)(o[1] - o[0]), shape,
                       e->dt->name, (unsigned long long)need);
    }
    e->begin = o[0];
    e->end = o[1];
    return 0;
}

static int check_entry(const ctx *c, size_t hdr, const qp_json *m, size_t data_len, st_entry *e)
{
    char nb[128];
    const char *name = m->key;
    memset(e, 0, sizeof *e);
    e->entry = m;
    if (m->type != QP_JSON_OBJECT)
        return fail_at(c, hdr + m->offset, "tensor '%s': entry must be an object, found %s",
                       esc(name, nb, sizeof nb), qp_json_type_name(m->type));
    const qp_json *dtype = NULL, *shape = NULL, *offs = NULL;
    for (size_t i = 0; i < m->n; i++) {
        const qp_json *k = &m->items[i];
        const qp_json **slot = !strcmp(k->key, "dtype") ? &dtype
                             : !strcmp(k->key, "shape") ? &shape
                             : !strcmp(k->key, "data_offsets") ? &offs : NULL;
        if (!slot || strlen(k->key) != k->key_len) {
            char kb[64];
            return fail_at(c, hdr + k->key_offset, "tensor '%s': unexpected key '%s'",
                           esc(name, nb, sizeof nb), esc(k->key, kb, sizeof kb));
        }
        if (*slot)
            return fail_at(c, hdr + k->key_offset, "tensor '%s': duplicate key '%s'",
                           esc(name, nb, sizeof nb), k->key);
        *slot = k;
    }
    const char *missing = !dtype ? "dtype" : !shape ? "shape" : !offs ? "data_offsets" : NULL;
    if (missing)
        return fail_at(c, hdr + m->offset, "tensor '%s': missing \"%s\"", esc(name, nb, sizeof nb), missing);
    if (dtype->type != QP_JSON_STRING)
        return fail_at(c, hdr + dtype->offset, "tensor '%s': \"dtype\" must be a string, found %s",
                       esc(name, nb, sizeof nb), qp_json_type_name(dtype->type));
    e->dt = dtype_lookup(dtype->str, dtype->len);
    if (!e->dt) {
        char db[64];
        return fail_at(c, hdr + dtype->offset, "tensor '%s': unknown dtype '%s'",
                       esc(name, nb, sizeof nb), esc(dtype->str, db, sizeof db));
    }
    if (check_shape(c, hdr, name, shape, e)) return -1;
    return check_offsets(c, hdr, name, offs, data_len, e);
}

static int check_metadata(const ctx *c, size_t hdr, const qp_json *m)
{
    if (m->type != QP_JSON_OBJECT)
        return fail_at(c, hdr + m->offset, "\"__metadata__\" must be an object, found %s",
                       qp_json_type_name(m->type));
    for (size_t i = 0; i < m->n; i++) {
        const qp_json *v = &m->items[i];
        char kb[64];
        if (v->type != QP_JSON_STRING)
            return fail_at(c, hdr + v->offset, "metadata '%s' must be a string, found %s",
                           esc(v->key, kb, sizeof kb), qp_json_type_name(v->type));
        if (strlen(v->key) != v->key_len || strlen(v->str) != v->len)
            return fail_at(c, hdr + v->key_offset, "metadata '%s' contains a NUL character",
                           esc(v->key, kb, sizeof kb));
    }
    return 0;
}

static int cmp_member(const void *a, const void *b)
{
    const qp_json *x = *(const qp_json *const *)a, *y = *(const qp_json *const *)b;
    const int r = strcmp(x->key, y->key);
    if (r) return r;
    return x->key_offset < y->key_offset ? -1 : x->key_offset > y->key_offset;
}

/* Duplicate names, reported at the first repeat in file order. */
static int check_duplicates(const ctx *c, size_t hdr, const qp_json *root)
{
    if (root->n < 2) return 0;
    const qp_json **v = malloc(root->n * sizeof *v);
    if (!v) {
        snprintf(c->err, c->errlen, "%s: out of memory", c->label);
        return -1;
    }
    for (size_t i = 0; i < root->n; i++) v[i] = &root->items[i];
    qsort(v, root->n, sizeof *v, cmp_member);
    const qp_json *dup = NULL;
    for (size_t i = 1; i < root->n; i++)
        if (!strcmp(v[i]->key, v[i - 1]->key) && (!dup || v[i]->key_offset < dup->key_offset)) dup = v[i];
    free(v);
    if (dup) {
        char nb[128];
        return fail_at(c, hdr + dup->key_offset, "duplicate tensor name '%s'", esc(dup->key, nb, sizeof nb));
    }
    return 0;
}

int qp_safetensors_parse(const uint8_t *buf, size_t len, const char *label,
                         const qp_read_opts *opts, qp_tensor_list *out,
                         char *err, size_t errlen)
{
    const ctx c = {label, err, errlen};
    if (len < 8)
        return fail_at(&c, 0, "truncated file: %zu bytes, shorter than the 8-byte header length", len);
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--) n = n << 8 | buf[k];
    if (n > len - 8)
        return fail_at(&c, 0, "header length %llu runs past end of file (%zu bytes follow the length field)",
                       (unsigned long long)n, len - 8);
    if (n > QP_ST_MAX_HEADER)
        return fail_at(&c, 0, "header length %llu exceeds the %u-byte limit", (unsigned long long)n,
                       QP_ST_MAX_HEADER);
    const size_t hdr = 8;
    const uint8_t *data = buf + hdr + n;
    const size_t data_len = len - hdr - (size_t)n;

    char jerr[256];
    size_t joff = 0;
    qp_json *root = qp_json_parse((const char *)buf + hdr, (size_t)n, &joff, jerr, sizeof jerr);
    if (!root) return fail_at(&c, hdr + joff, "invalid JSON header: %s", jerr);

    int rc = -1;
    const size_t n0 = out->n, m0 = out->n_meta;
    st_entry *ents = NULL;
    size_t ne = 0;
    const qp_json *meta = NULL;
    if (root->type != QP_JSON_OBJECT) {
        fail_at(&c, hdr + root->offset, "header must be an object, found %s", qp_json_type_name(root->type));
        goto done;
    }
    if (check_duplicates(&c, hdr, root)) goto done;
    ents = malloc((root->n ? root->n : 1) * sizeof *ents);
    if (!ents) {
        snprintf(err, errlen, "%s: out of memory", label);
        goto done;
    }
    for (size_t i = 0; i < root->n; i++) {
        const qp_json *m = &root->items[i];
        if (strlen(m->key) != m->key_len) {
            fail_at(&c, hdr + m->key_offset, "tensor name contains a NUL character");
            goto done;
        }
        if (!strcmp(m->key, "__metadata__")) {
            if (check_metadata(&c, hdr, m)) goto done;
            meta = m;
            continue;
        }
        if (check_entry(&c, hdr, m, data_len, &ents[ne])) goto done;
        ne++;
    }

    /* The header is sound: only now convert. */
    for (size_t i = 0; i < ne; i++) {
        const st_entry *e = &ents[i];
        const char *name = e->entry->key;
        char nb[128], lerr[QP_ERR_LEN];
        if (opts && opts->want && !opts->want(name, opts->user)) continue;
        if (!e->dt->convert) {
            qp_read_note(opts, "%s: tensor '%s': dtype %s is not read, skipped", label,
                         esc(name, nb, sizeof nb), e->dt->name);
            continue;
        }
        float *f = NULL;
        if (e->numel > 0) {
            f = malloc((size_t)e->numel * sizeof *f);
            if (!f) {
                snprintf(err, errlen, "%s: tensor '%s': out of memory for %lld elements", label,
                         esc(name, nb, sizeof nb), (long long)e->numel);
                goto done;
            }
            qp_convert_to_f32(e->dt->dtype, data + e->begin, e->numel, f);
        }
        if (qp_tensor_list_add(out, name, e->dt->dtype, e->ndim, e->shape, f, lerr, sizeof lerr)) {
            snprintf(err, errlen, "%s: %s", label, lerr);
            goto done;
        }
    }
    if (meta) {
        for (size_t i = 0; i < meta->n; i++) {
            char lerr[QP_ERR_LEN];
            if (qp_tensor_list_add_meta(out, meta->items[i].key, meta->items[i].str, lerr, sizeof lerr)) {
                snprintf(err, errlen, "%s: %s", label, lerr);
                goto done;
            }
        }
    }
    rc = 0;
done:
    if (rc != 0) { /* leave out as it was */
        for (size_t i = n0; i < out->n; i++) {
            free(out->t[i].name);
            free(out->t[i].data);
        }
        out->n = n0;
        for (size_t i = m0; i < out->n_meta; i++) {
            free(out->meta[i].key);
            free(out->meta[i].value);
        }
        out->n_meta = m0;
    }
    free(ents);
    qp_json_free(root);
    return rc;
}

int qp_safetensors_read(const char *path, const qp_read_opts *opts, qp_tensor_list *out,
                        char *err, size_t errlen)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    const size_t len = (size_t)st.st_size;
    if (len == 0) { /* mmap refuses length 0; the parser reports it as truncated */
        close(fd);
        static const uint8_t none[1];
        return qp_safetensors_parse(none, 0, path, opts, out, err, errlen);
    }
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map file: %s", path, strerror(map_errno));
        return -1;
    }
    const int rc = qp_safetensors_parse(map, len, path, opts, out, err, errlen);
    munmap(map, len);
    return rc;
}

/* --- writer --- */

typedef struct {
    char *s;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t k)
{
    if (b->oom) return;
    if (b->n + k + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + k + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, k);
    b->n += k;
    b->s[b->n] = '\0';
}

__attribute__((format(printf, 2, 3)))
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    sb_put(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

static void sb_json_string(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            const char e[2] = {'\\', (char)ch};
            sb_put(b, e, 2);
        } else if (ch < 0x20) {
            sb_printf(b, "\\u%04x", ch);
        } else {
            sb_put(b, s, 1);
        }
    }
    sb_put(b, "\"", 1);
}

int qp_safetensors_write(const char *path, const qp_st_tensor *t, size_t n,
                         const char *const *metadata, char *err, size_t errlen)
{
    sbuf h = {0};
    uint64_t off = 0;
    sb_put(&h, "{", 1);
    if (metadata && metadata[0]) {
        sb_put(&h, "\"__metadata__\":{", 16);
        for (size_t i = 0; metadata[i]; i += 2) {
            if (!metadata[i + 1]) {
                snprintf(err, errlen, "%s: metadata key '%s' has no value", path, metadata[i]);
                free(h.s);
                return -1;
            }
            if (i) sb_put(&h, ",", 1);
            sb_json_string(&h, metadata[i]);
            sb_put(&h, ":", 1);
            sb_json_string(&h, metadata[i + 1]);
        }
        sb_put(&h, "}", 1);
    }
    for (size_t i = 0; i < n; i++) {
        const dtype_info *dt = dtype_lookup(t[i].dtype, strlen(t[i].dtype));
        int64_t numel;
        if (!dt || t[i].ndim < 0 || t[i].ndim > QP_TENSOR_MAX_DIMS ||
            qp_shape_numel(t[i].ndim, t[i].shape, &numel) != 0 ||
            ((unsigned __int128)(uint64_t)numel * (unsigned)dt->bits + 7) / 8 != t[i].nbytes) {
            snprintf(err, errlen, "%s: tensor '%s': bad dtype, shape or byte count", path, t[i].name);
            free(h.s);
            return -1;
        }
        if (i || (metadata && metadata[0])) sb_put(&h, ",", 1);
        sb_json_string(&h, t[i].name);
        sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", dt->name);
        for (int d = 0; d < t[i].ndim; d++) sb_printf(&h, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
        sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                  (unsigned long long)(off + t[i].nbytes));
        off += t[i].nbytes;
    }
    sb_put(&h, "}", 1);
    while (!h.oom && h.n % 8) sb_put(&h, " ", 1); /* keep the data 8-byte aligned */
    if (h.oom) {
        snprintf(err, errlen, "%s: out of memory", path);
        free(h.s);
        return -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(h.s);
        return -1;
    }
    uint8_t len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (uint8_t)((uint64_t)h.n >> (8 * k));
    int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(h.s, 1, h.n, f) == h.n;
    for (size_t i = 0; ok && i < n; i++) /* an empty tensor may have no data pointer at all */
        ok = t[i].nbytes == 0 || fwrite(t[i].data, 1, t[i].nbytes, f) == t[i].nbytes;
    const int saved = errno;
    if (fclose(f) != 0) ok = 0;
    free(h.s);
    if (!ok) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(saved ? saved : errno));
        return -1;
    }
    return 0;
}
