/* qp_ckpt.c — atomic, verified checkpoint files (see qp_ckpt.h and
 * docs/runfile.md).
 *
 * Integrity rests on three things, each catching what the others cannot:
 * the rename dance (a kill never leaves PATH half written, the previous
 * checkpoint survives as PATH.prev), HDF5's own end-of-file check (a file
 * cut short does not open), and per-tensor CRC-32s with a "complete" marker
 * that holds the tensor count (bit rot, a bad copy, a lost dataset). */
#include "qp_ckpt.h"
#include "qp_h5open.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "qp_h5err.h"

#include "qp_h5table.h" /* qp_h5_set_attr_str */
#include "qp_space.h"

#define MARKER QP_CKPT_MARKER
#define CRC_ATTR "crc32"

struct qp_ckpt {
    hid_t file;
    char *path;
};


/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zlib's crc32(). */
static uint32_t crc_table[256];

static void crc_init(void)
{
    if (crc_table[1]) return;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

/* Over the tensor as stored: little-endian float32 bytes, whatever the host. */
static uint32_t crc_floats(const float *x, int64_t n)
{
    crc_init();
    uint32_t c = 0xFFFFFFFFu;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        for (int k = 0; k < 4; k++, u >>= 8) c = crc_table[(c ^ u) & 0xFF] ^ (c >> 8);
    }
    return c ^ 0xFFFFFFFFu;
}

static char *concat(const char *a, const char *b)
{
    const size_t na = strlen(a), nb = strlen(b);
    char *s = malloc(na + nb + 1);
    if (s) {
        memcpy(s, a, na);
        memcpy(s + na, b, nb + 1);
    }
    return s;
}

/* fsync a file or a directory by name. */
static int sync_path(const char *path, int dir)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
    if (fd < 0) return -1;
    const int rc = fsync(fd);
    const int e = errno;
    close(fd);
    errno = e;
    return rc;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    char *d = strndup(path, (size_t)(slash - path));
    return d;
}

static int64_t count_of(const qp_ckpt_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

static int check_args(const char *path, const qp_ckpt_tensor *t, int nt, const qp_ckpt_attr *a, int na, char *err,
                      size_t errlen)
{
    if (nt < 0 || na < 0 || (nt > 0 && !t) || (na > 0 && !a)) {
        snprintf(err, errlen, "%s: bad tensor or attribute list", path);
        return -1;
    }
    for (int i = 0; i < nt; i++) {
        const char *name = t[i].name ? t[i].name : "(null)";
        if (!t[i].name || !*t[i].name) {
            snprintf(err, errlen, "%s: tensor %d has no name", path, i);
            return -1;
        }
        if (t[i].ndim < 1 || t[i].ndim > 4) {
            snprintf(err, errlen, "%s: tensor '%s': %d dimensions (1 to 4)", path, name, t[i].ndim);
            return -1;
        }
        /* bounded so the element count cannot overflow */
        int64_t n = 1;
        for (int d = 0; d < t[i].ndim; d++) {
            const int64_t s = t[i].shape[d];
            if (s < 0 || (s > 0 && n > ((int64_t)1 << 40) / s)) {
                snprintf(err, errlen, "%s: tensor '%s': bad shape[%d] = %lld", path, name, d, (long long)s);
                return -1;
            }
            n *= s;
        }
        if (count_of(&t[i]) > 0 && !t[i].data) {
            snprintf(err, errlen, "%s: tensor '%s' has no data", path, name);
            return -1;
        }
    }
    for (int i = 0; i < na; i++) {
        if (!a[i].name || !*a[i].name || !strcmp(a[i].name, MARKER) || (a[i].is_string && !a[i].str)) {
            snprintf(err, errlen, "%s: attribute %d: no name, the reserved name '" MARKER "', or no string", path,
                     i);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(a[i].name, a[j].name)) {
                snprintf(err, errlen, "%s: attribute '%s' given twice", path, a[i].name);
                return -1;
            }
    }
    return 0;
}

/* On failure, why holds HDF5's reason (taken before the cleanup clears it). */
static int write_i64_attr(hid_t obj, const char *name, int64_t v, char *why, size_t whylen)
{
    const hid_t sp = H5Screate(H5S_SCALAR);
    const hid_t at = sp >= 0 ? H5Acreate2(obj, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
    const int ok = at >= 0 && H5Awrite(at, H5T_NATIVE_INT64, &v) >= 0;
    if (!ok) qp_h5_why(why, whylen);
    if (at >= 0) H5Aclose(at);
    if (sp >= 0) H5Sclose(sp);
    return ok ? 0 : -1;
}

static int write_tensor(hid_t f, const qp_ckpt_tensor *t, char *why, size_t whylen)
{
    hsize_t dims[4];
    for (int d = 0; d < t->ndim; d++) dims[d] = (hsize_t)t->shape[d];
    const int64_t n = count_of(t);
    const uint32_t crc = crc_floats(t->data, n);
    hid_t sp = -1, lcpl = -1, ds = -1, asp = -1, at = -1;
    int ok = (sp = H5Screate_simple(t->ndim, dims, NULL)) >= 0;
    ok = ok && (lcpl = H5Pcreate(H5P_LINK_CREATE)) >= 0 && H5Pset_create_intermediate_group(lcpl, 1) >= 0;
    ok = ok && (ds = H5Dcreate2(f, t->name, H5T_IEEE_F32LE, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT)) >= 0;
    ok = ok && (n == 0 || H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->data) >= 0);
    ok = ok && (asp = H5Screate(H5S_SCALAR)) >= 0;
    ok = ok && (at = H5Acreate2(ds, CRC_ATTR, H5T_STD_U32LE, asp, H5P_DEFAULT, H5P_DEFAULT)) >= 0;
    ok = ok && H5Awrite(at, H5T_NATIVE_UINT32, &crc) >= 0;
    if (!ok) qp_h5_why(why, whylen);
    if (at >= 0) H5Aclose(at);
    if (asp >= 0) H5Sclose(asp);
    if (ds >= 0) H5Dclose(ds);
    if (lcpl >= 0) H5Pclose(lcpl);
    if (sp >= 0) H5Sclose(sp);
    return ok ? 0 : -1;
}

/* The HDF5 part: every tensor with its checksum, the attributes, a flush,
 * then the marker. SEMI makes H5Fclose fail rather than leave the file open
 * (and unflushed) if some handle were still open. */
static int write_h5(const char *tmp, int fd, int64_t need, const qp_ckpt_tensor *t, int nt, const qp_ckpt_attr *a,
                    int na, char *err, size_t errlen)
{
    char why[256], e[256];
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_SEMI) < 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, qp_h5_why(why, sizeof why));
        if (fapl >= 0) H5Pclose(fapl);
        return -1;
    }
    const hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (f < 0) qp_h5_why(why, sizeof why);
    H5Pclose(fapl);
    if (f < 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, why);
        return -1;
    }
    int rc = 0;
    /* H5Fcreate truncated the file, and with it the room reserved before:
     * take it again before writing (see qp_space.h). */
    if (qp_space_reserve(fd, need, why, sizeof why)) {
        snprintf(err, errlen, "%s: no room for %lld bytes: %s", tmp, (long long)need, why);
        rc = -1;
    }
    for (int i = 0; rc == 0 && i < nt; i++)
        if (write_tensor(f, &t[i], why, sizeof why)) {
            snprintf(err, errlen, "%s: cannot write tensor '%s': %s", tmp, t[i].name, why);
            rc = -1;
        }
    for (int i = 0; rc == 0 && i < na; i++) {
        if (a[i].is_string ? qp_h5_set_attr_str(f, a[i].name, a[i].str, e, sizeof e)
                           : write_i64_attr(f, a[i].name, a[i].i64, why, sizeof why)) {
            snprintf(err, errlen, "%s: cannot write attribute '%s': %s", tmp, a[i].name, a[i].is_string ? e : why);
            rc = -1;
        }
    }
    if (rc == 0 && H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) {
        snprintf(err, errlen, "%s: cannot flush: %s", tmp, qp_h5_why(why, sizeof why));
        rc = -1;
    }
    if (rc == 0 && write_i64_attr(f, MARKER, nt, why, sizeof why)) {
        snprintf(err, errlen, "%s: cannot write the '" MARKER "' marker: %s", tmp, why);
        rc = -1;
    }
    if (H5Fclose(f) < 0 && rc == 0) {
        snprintf(err, errlen, "%s: cannot close: %s", tmp, qp_h5_why(why, sizeof why));
        rc = -1;
    }
    return rc;
}

int qp_ckpt_write(const char *path, const qp_ckpt_tensor *tensors, int ntensors, const qp_ckpt_attr *attrs,
                  int nattrs, char *err, size_t errlen)
{
    qp_h5_quiet();
    if (check_args(path, tensors, ntensors, attrs, nattrs, err, errlen)) return -1;
    char *tmp = concat(path, ".tmp"), *prev = concat(path, ".prev"), *dir = dir_of(path);
    int rc = -1, made_tmp = 0, fd = -1;
    if (!tmp || !prev || !dir) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    /* Creating it ourselves first gives the OS's reason when it cannot be;
     * reserving the room it needs first makes a full disk (or ulimit -f) fail
     * here, before HDF5 writes anything (see qp_space.h). */
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        goto done;
    }
    made_tmp = 1;
    int64_t need = (1 << 20) + (int64_t)ntensors * 4096;
    for (int i = 0; i < ntensors; i++) need += count_of(&tensors[i]) * 4;
    char why[256];
    if (qp_space_reserve(fd, need, why, sizeof why)) {
        snprintf(err, errlen, "%s: no room for a %lld-byte checkpoint: %s; the previous one is kept", path,
                 (long long)need, why);
        goto done;
    }
    if (write_h5(tmp, fd, need, tensors, ntensors, attrs, nattrs, err, errlen)) goto done;
    qp_space_release(fd);
    if (sync_path(tmp, 0) || sync_path(dir, 1)) {
        snprintf(err, errlen, "%s: cannot sync %s: %s", path, tmp, strerror(errno));
        goto done;
    }
    int moved = 0;
    if (rename(path, prev) == 0) {
        moved = 1;
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "%s: cannot rename it to %s: %s", path, prev, strerror(errno));
        goto done;
    }
    if (rename(tmp, path)) {
        snprintf(err, errlen, "%s: cannot rename %s to it: %s", path, tmp, strerror(errno));
        if (moved) rename(prev, path);
        goto done;
    }
    made_tmp = 0;
    if (sync_path(dir, 1)) {
        snprintf(err, errlen, "%s: cannot sync directory %s: %s", path, dir, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    if (fd >= 0) close(fd);
    if (made_tmp) unlink(tmp);
    free(tmp);
    free(prev);
    free(dir);
    return rc;
}

/* ---- reading ---- */

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
    int64_t tensors;
    int failed; /* err holds why */
} verify_ctx;

/* An attribute holds one value (scalar, or a 1-element array)? H5Aread
 * writes every element, so reading an array into one variable overflows it. */
static int one_value(hid_t at)
{
    const hid_t sp = H5Aget_space(at);
    const hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    const int simple = sp >= 0 && H5Sget_simple_extent_type(sp) != H5S_NULL;
    if (sp >= 0) H5Sclose(sp);
    return simple && n == 1;
}

static int read_crc(hid_t ds, uint32_t *crc)
{
    if (H5Aexists(ds, CRC_ATTR) <= 0) return -1;
    const hid_t at = H5Aopen(ds, CRC_ATTR, H5P_DEFAULT);
    const hid_t t = at >= 0 ? H5Aget_type(at) : -1;
    const int ok = t >= 0 && H5Tget_class(t) == H5T_INTEGER && one_value(at) && H5Aread(at, H5T_NATIVE_UINT32, crc) >= 0;
    if (t >= 0) H5Tclose(t);
    if (at >= 0) H5Aclose(at);
    return ok ? 0 : -1;
}

/* Check that dst (n floats just read from tensor `name`) matches its stored
 * checksum. */
static int check_crc(const char *path, hid_t ds, const char *name, const float *dst, int64_t n, char *err,
                     size_t errlen)
{
    uint32_t stored;
    if (read_crc(ds, &stored)) {
        snprintf(err, errlen, "%s: tensor '%s' has no " CRC_ATTR " attribute", path, name);
        return -1;
    }
    const uint32_t got = crc_floats(dst, n);
    if (got != stored) {
        snprintf(err, errlen, "%s: tensor '%s' is corrupt: CRC-32 0x%08x, stored 0x%08x", path, name, (unsigned)got,
                 (unsigned)stored);
        return -1;
    }
    return 0;
}

static int verify_dataset(verify_ctx *v, hid_t ds, const char *name)
{
    char why[256];
    const hid_t t = H5Dget_type(ds), sp = H5Dget_space(ds);
    const hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    const int is_f32 = t >= 0 && H5Tget_class(t) == H5T_FLOAT && H5Tget_size(t) == 4;
    if (t >= 0) H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    if (!is_f32 || n < 0) {
        snprintf(v->err, v->errlen, "%s: '%s' is not a float32 tensor", v->path, name);
        return -1;
    }
    /* a tensor's bytes are all in the file (ours are never compressed or
     * sparse): a shape alone must not make us allocate */
    if (!qp_h5_data_present(ds, (unsigned long long)n, 4, 0)) {
        snprintf(v->err, v->errlen, "%s: tensor '%s' declares %lld elements but the file does not hold them",
                 v->path, name, (long long)n);
        return -1;
    }
    float *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    if (!buf) {
        snprintf(v->err, v->errlen, "%s: tensor '%s': out of memory", v->path, name);
        return -1;
    }
    int rc = 0;
    if (n > 0 && H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        snprintf(v->err, v->errlen, "%s: cannot read tensor '%s': %s", v->path, name, qp_h5_why(why, sizeof why));
        rc = -1;
    }
    if (rc == 0) rc = check_crc(v->path, ds, name, buf, n, v->err, v->errlen);
    free(buf);
    return rc;
}

static herr_t verify_cb(hid_t g, const char *name, const H5L_info_t *info, void *p)
{
    verify_ctx *v = p;
    if (info->type != H5L_TYPE_HARD) return 0;
    const hid_t o = H5Oopen(g, name, H5P_DEFAULT);
    if (o < 0) {
        char why[256];
        snprintf(v->err, v->errlen, "%s: cannot open '%s': %s", v->path, name, qp_h5_why(why, sizeof why));
        v->failed = 1;
        return -1;
    }
    int rc = 0;
    if (H5Iget_type(o) == H5I_DATASET) {
        rc = verify_dataset(v, o, name);
        v->tensors++;
    }
    H5Oclose(o);
    v->failed = rc != 0;
    return rc ? -1 : 0;
}

static int read_marker(hid_t f, int64_t *v)
{
    if (H5Aexists(f, MARKER) <= 0) return -1;
    const hid_t at = H5Aopen(f, MARKER, H5P_DEFAULT);
    const hid_t t = at >= 0 ? H5Aget_type(at) : -1;
    const int ok = t >= 0 && H5Tget_class(t) == H5T_INTEGER && one_value(at) && H5Aread(at, H5T_NATIVE_INT64, v) >= 0;
    if (t >= 0) H5Tclose(t);
    if (at >= 0) H5Aclose(at);
    return ok ? 0 : -1;
}

qp_ckpt *qp_ckpt_open(const char *path, char *err, size_t errlen)
{
    qp_h5_quiet();
    char why[256];
    /* Opening it ourselves first gives the OS's reason when it cannot be read. */
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    close(fd);
    qp_ckpt *c = calloc(1, sizeof *c);
    if (!c || !(c->path = strdup(path))) {
        snprintf(err, errlen, "%s: out of memory", path);
        free(c);
        return NULL;
    }
    if ((c->file = (hid_t)qp_h5_open_read(path, 0)) < 0) {
        snprintf(err, errlen, "%s: not a whole HDF5 file (torn write?): %s", path, qp_h5_why(why, sizeof why));
        goto fail;
    }
    int64_t marker;
    if (read_marker(c->file, &marker)) {
        snprintf(err, errlen, "%s: incomplete checkpoint: no '" MARKER "' marker", path);
        goto fail;
    }
    verify_ctx v = {path, err, errlen, 0, 0};
    if (H5Lvisit(c->file, H5_INDEX_NAME, H5_ITER_INC, verify_cb, &v) < 0) {
        if (!v.failed) snprintf(err, errlen, "%s: cannot list its objects: %s", path, qp_h5_why(why, sizeof why));
        goto fail;
    }
    if (v.tensors != marker) {
        snprintf(err, errlen, "%s: holds %lld tensors, its '" MARKER "' marker says %lld", path,
                 (long long)v.tensors, (long long)marker);
        goto fail;
    }
    return c;
fail:
    qp_ckpt_close(c);
    return NULL;
}

qp_ckpt *qp_ckpt_open_latest(const char *path, const char **used_path, char *err, size_t errlen)
{
    char e1[512], e2[512];
    qp_ckpt *c = qp_ckpt_open(path, e1, sizeof e1);
    if (!c) {
        char *prev = concat(path, ".prev");
        if (!prev) {
            snprintf(err, errlen, "%s: out of memory", path);
            return NULL;
        }
        c = qp_ckpt_open(prev, e2, sizeof e2);
        free(prev);
        if (!c) {
            snprintf(err, errlen, "%s; %s", e1, e2);
            return NULL;
        }
    }
    if (used_path) *used_path = c->path;
    return c;
}

int qp_ckpt_read(qp_ckpt *c, const char *name, float *dst, int64_t n, char *err, size_t errlen)
{
    qp_h5_quiet();
    char why[256];
    const hid_t ds = H5Dopen2(c->file, name, H5P_DEFAULT);
    if (ds < 0) {
        snprintf(err, errlen, "%s: no tensor '%s'", c->path, name);
        return -1;
    }
    const hid_t sp = H5Dget_space(ds);
    const hssize_t have = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (sp >= 0) H5Sclose(sp);
    int rc = 0;
    if (have != n) {
        snprintf(err, errlen, "%s: tensor '%s' has %lld elements, not %lld", c->path, name, (long long)have,
                 (long long)n);
        rc = -1;
    } else if (n > 0 && H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst) < 0) {
        snprintf(err, errlen, "%s: cannot read tensor '%s': %s", c->path, name, qp_h5_why(why, sizeof why));
        rc = -1;
    } else {
        /* open verified it, but the file may have changed since */
        rc = check_crc(c->path, ds, name, dst, n, err, errlen);
    }
    H5Dclose(ds);
    return rc;
}

/* The root attribute `name`, opened, with its type; -1 and err if missing. */
static hid_t open_attr(qp_ckpt *c, const char *name, hid_t *type, char *err, size_t errlen)
{
    qp_h5_quiet();
    if (!name || H5Aexists(c->file, name) <= 0) {
        snprintf(err, errlen, "%s: no attribute '%s'", c->path, name ? name : "(null)");
        return -1;
    }
    const hid_t at = H5Aopen(c->file, name, H5P_DEFAULT);
    if (at < 0 || (*type = H5Aget_type(at)) < 0) {
        char why[256];
        snprintf(err, errlen, "%s: cannot open attribute '%s': %s", c->path, name, qp_h5_why(why, sizeof why));
        if (at >= 0) H5Aclose(at);
        return -1;
    }
    return at;
}

int qp_ckpt_has_attr(qp_ckpt *c, const char *name)
{
    qp_h5_quiet();
    return name && H5Aexists(c->file, name) > 0;
}

int qp_ckpt_attr_i64(qp_ckpt *c, const char *name, int64_t *v, char *err, size_t errlen)
{
    hid_t t;
    const hid_t at = open_attr(c, name, &t, err, errlen);
    if (at < 0) return -1;
    int rc = 0;
    if (H5Tget_class(t) != H5T_INTEGER || !one_value(at)) {
        snprintf(err, errlen, "%s: attribute '%s' is not an integer scalar", c->path, name);
        rc = -1;
    } else if (H5Aread(at, H5T_NATIVE_INT64, v) < 0) {
        char why[256];
        snprintf(err, errlen, "%s: cannot read attribute '%s': %s", c->path, name, qp_h5_why(why, sizeof why));
        rc = -1;
    }
    H5Tclose(t);
    H5Aclose(at);
    return rc;
}

int qp_ckpt_attr_str(qp_ckpt *c, const char *name, char *dst, size_t len, char *err, size_t errlen)
{
    hid_t t;
    const hid_t at = open_attr(c, name, &t, err, errlen);
    if (at < 0) return -1;
    int rc = -1;
    hid_t mt = -1;
    char *s = NULL;
    if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) <= 0 || !one_value(at)) {
        snprintf(err, errlen, "%s: attribute '%s' is not a (variable-length) string scalar", c->path, name);
    } else if ((mt = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 ||
               H5Tset_cset(mt, H5Tget_cset(t)) < 0 || H5Aread(at, mt, &s) < 0) {
        char why[256];
        snprintf(err, errlen, "%s: cannot read attribute '%s': %s", c->path, name, qp_h5_why(why, sizeof why));
    } else {
        if (len > 0) snprintf(dst, len, "%s", s ? s : "");
        rc = 0;
    }
    if (s) H5free_memory(s);
    if (mt >= 0) H5Tclose(mt);
    H5Tclose(t);
    H5Aclose(at);
    return rc;
}

void qp_ckpt_close(qp_ckpt *c)
{
    if (!c) return;
    if (c->file > 0) H5Fclose(c->file);
    free(c->path);
    free(c);
}
