/* qp_raw.c — raw float32 reader (see qp_raw.h). */
#include "qp_raw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int parse_dim(const char *s, const char **end, int64_t *v)
{
    int64_t x = 0;
    const char *p = s;
    if (*p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++)
        if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *p - '0', &x)) return -1;
    *end = p;
    *v = x;
    return 0;
}

int qp_raw_parse_spec(const char *spec, int64_t *rows, int64_t *cols, char *err, size_t errlen)
{
    const char *p;
    int64_t r, c, bytes;
    if (strncmp(spec, "f32:", 4) != 0 || parse_dim(spec + 4, &p, &r) || *p != 'x' ||
        parse_dim(p + 1, &p, &c) || *p != '\0' || r <= 0 || c <= 0 ||
        __builtin_mul_overflow(r, c, &bytes) || __builtin_mul_overflow(bytes, 4, &bytes)) {
        snprintf(err, errlen, "bad --raw spec '%s': expected f32:ROWSxCOLS with positive ROWS and COLS", spec);
        return -1;
    }
    *rows = r;
    *cols = c;
    return 0;
}

int qp_raw_read(const char *path, const char *name, int64_t rows, int64_t cols,
                qp_tensor_list *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        fclose(f);
        return -1;
    }
    int64_t n, want;
    if (rows <= 0 || cols <= 0 || __builtin_mul_overflow(rows, cols, &n) || __builtin_mul_overflow(n, 4, &want)) {
        snprintf(err, errlen, "%s: bad raw shape %lldx%lld", path, (long long)rows, (long long)cols);
        fclose(f);
        return -1;
    }
    if ((int64_t)st.st_size != want) {
        snprintf(err, errlen, "%s: size %lld bytes, but f32:%lldx%lld needs %lld", path,
                 (long long)st.st_size, (long long)rows, (long long)cols, (long long)want);
        fclose(f);
        return -1;
    }
    uint8_t *bytes = malloc((size_t)want);
    float *data = malloc((size_t)want);
    if (!bytes || !data) {
        snprintf(err, errlen, "%s: out of memory", path);
        free(bytes);
        free(data);
        fclose(f);
        return -1;
    }
    const size_t got = fread(bytes, 1, (size_t)want, f);
    fclose(f);
    if (got != (size_t)want) {
        snprintf(err, errlen, "%s: read failed after %zu bytes", path, got);
        free(bytes);
        free(data);
        return -1;
    }
    qp_convert_to_f32(QP_DTYPE_F32, bytes, n, data);
    free(bytes);
    const int64_t shape[2] = {rows, cols};
    char lerr[QP_ERR_LEN];
    if (qp_tensor_list_add(out, name, QP_DTYPE_F32, 2, shape, data, lerr, sizeof lerr)) {
        snprintf(err, errlen, "%s: %s", path, lerr);
        return -1;
    }
    return 0;
}
