/* qp_h5read.c — HDF5 dataset walker (see qp_h5read.h). */
#include "qp_h5err.h"
#include "qp_h5read.h"
#include "qp_h5open.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <hdf5.h>

typedef struct {
    const char *path;
    const qp_read_opts *opts;
    qp_tensor_list *out;
    char *err;
    size_t errlen;
} walk;

/* Which dtype a float type is, from its bit fields rather than its size, so
 * that a 16-bit bfloat16 is not taken for an IEEE half. */
static qp_dtype classify(hid_t t)
{
    size_t spos, epos, esize, mpos, msize;
    if (H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) < 0) return QP_DTYPE_FLOAT_OTHER;
    const size_t size = H5Tget_size(t), prec = H5Tget_precision(t);
    const int off = H5Tget_offset(t);
    if (off != 0 || prec != size * 8 || spos != prec - 1 || mpos != 0) return QP_DTYPE_FLOAT_OTHER;
    const H5T_order_t order = H5Tget_order(t);
    if (order != H5T_ORDER_LE && order != H5T_ORDER_BE) return QP_DTYPE_FLOAT_OTHER;
    if (size == 2 && esize == 5 && msize == 10 && epos == 10) return QP_DTYPE_F16;
    if (size == 2 && esize == 8 && msize == 7 && epos == 7) return QP_DTYPE_BF16;
    if (size == 4 && esize == 8 && msize == 23 && epos == 23) return QP_DTYPE_F32;
    if (size == 8 && esize == 11 && msize == 52 && epos == 52) return QP_DTYPE_F64;
    return QP_DTYPE_FLOAT_OTHER;
}

static const char *class_name(H5T_class_t c)
{
    switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_ARRAY: return "array";
    case H5T_VLEN: return "variable-length";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_REFERENCE: return "reference";
    default: return "other";
    }
}

/* Read the whole dataset as float32 into *data (numel elements). */
static int read_data(hid_t ds, hid_t ftype, qp_dtype dt, int64_t numel, float *data)
{
    int rc = -1;
    if (dt == QP_DTYPE_F16 || dt == QP_DTYPE_BF16) {
        /* The file type with little-endian order: HDF5 only swaps bytes, and
         * the widening is ours, exact to the bit (NaN payloads included). */
        uint8_t *raw = malloc((size_t)numel * 2);
        hid_t mt = H5Tcopy(ftype);
        if (raw && mt >= 0 && H5Tset_order(mt, H5T_ORDER_LE) >= 0 &&
            H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw) >= 0) {
            qp_convert_to_f32(dt, raw, numel, data);
            rc = 0;
        }
        if (mt >= 0) H5Tclose(mt);
        free(raw);
    } else if (dt == QP_DTYPE_F32) {
        rc = H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0 ? 0 : -1;
    } else {
        /* Through double, so the narrowing to float is C's round-to-nearest
         * (overflow to Inf) rather than HDF5's conversion exceptions. */
        double *d = malloc((size_t)numel * sizeof *d);
        if (d && H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d) >= 0) {
            for (int64_t i = 0; i < numel; i++) data[i] = (float)d[i];
            rc = 0;
        }
        free(d);
    }
    return rc;
}

static int visit_dataset(walk *w, hid_t loc, const char *rel)
{
    char nb[256];
    char *full = malloc(strlen(rel) + 2);
    if (!full) {
        snprintf(w->err, w->errlen, "%s: out of memory", w->path);
        return -1;
    }
    full[0] = '/';
    strcpy(full + 1, rel);
    qp_escape_name(full, nb, sizeof nb);
    if (w->opts && w->opts->want && !w->opts->want(full, w->opts->user)) {
        free(full);
        return 0;
    }

    int rc = -1;
    hid_t ds = H5Dopen2(loc, rel, H5P_DEFAULT), ft = -1, sp = -1;
    if (ds < 0) {
        snprintf(w->err, w->errlen, "%s: dataset '%s': cannot open", w->path, nb);
        free(full);
        return -1;
    }
    ft = H5Dget_type(ds);
    sp = H5Dget_space(ds);
    if (ft < 0 || sp < 0) {
        snprintf(w->err, w->errlen, "%s: dataset '%s': cannot read its type or shape", w->path, nb);
        goto done;
    }
    const H5T_class_t cls = H5Tget_class(ft);
    if (cls != H5T_FLOAT) {
        qp_read_note(w->opts, "%s: dataset '%s' is not floating point (%s), skipped", w->path, nb,
                     class_name(cls));
        rc = 0;
        goto done;
    }
    const H5S_class_t scls = H5Sget_simple_extent_type(sp);
    if (scls == H5S_NULL) {
        qp_read_note(w->opts, "%s: dataset '%s' has no dataspace, skipped", w->path, nb);
        rc = 0;
        goto done;
    }
    const int rank = H5Sget_simple_extent_ndims(sp);
    if (rank < 0) {
        snprintf(w->err, w->errlen, "%s: dataset '%s': cannot read its shape", w->path, nb);
        goto done;
    }
    if (rank > QP_TENSOR_MAX_DIMS) {
        snprintf(w->err, w->errlen, "%s: dataset '%s': rank %d exceeds %d", w->path, nb, rank,
                 QP_TENSOR_MAX_DIMS);
        goto done;
    }
    hsize_t dims[QP_TENSOR_MAX_DIMS];
    int64_t shape[QP_TENSOR_MAX_DIMS], numel;
    H5Sget_simple_extent_dims(sp, dims, NULL);
    for (int i = 0; i < rank; i++) shape[i] = dims[i] > (hsize_t)INT64_MAX ? -1 : (int64_t)dims[i];
    if (qp_shape_numel(rank, shape, &numel) != 0) {
        snprintf(w->err, w->errlen, "%s: dataset '%s': shape product overflows 64 bits", w->path, nb);
        goto done;
    }
    const qp_dtype dt = classify(ft);
    float *data = NULL;
    if (numel > 0 && !qp_h5_data_present(ds, (unsigned long long)numel, H5Tget_size(ft), 1ull << 26)) {
        snprintf(w->err, w->errlen, "%s: dataset '%s': declares %lld elements but the file does not hold them",
                 w->path, nb, (long long)numel);
        goto done;
    }
    if (numel > 0) {
        data = malloc((size_t)numel * sizeof *data);
        if (!data) {
            snprintf(w->err, w->errlen, "%s: dataset '%s': out of memory for %lld elements", w->path, nb,
                     (long long)numel);
            goto done;
        }
        if (read_data(ds, ft, dt, numel, data) != 0) {
            snprintf(w->err, w->errlen, "%s: dataset '%s': cannot read data (corrupt, or a filter HDF5 lacks)",
                     w->path, nb);
            free(data);
            goto done;
        }
    }
    char lerr[QP_ERR_LEN];
    if (qp_tensor_list_add(w->out, full, dt, rank, shape, data, lerr, sizeof lerr)) {
        snprintf(w->err, w->errlen, "%s: %s", w->path, lerr);
        goto done;
    }
    rc = 0;
done:
    if (sp >= 0) H5Sclose(sp);
    if (ft >= 0) H5Tclose(ft);
    H5Dclose(ds);
    free(full);
    return rc;
}

#if H5_VERSION_GE(1, 12, 0)
static herr_t visit_cb(hid_t loc, const char *name, const H5O_info2_t *info, void *op)
#else
static herr_t visit_cb(hid_t loc, const char *name, const H5O_info_t *info, void *op)
#endif
{
    if (info->type != H5O_TYPE_DATASET) return 0;
    return visit_dataset(op, loc, name) == 0 ? 0 : -1;
}

int qp_h5_is_hdf5(const char *path)
{
    qp_h5_quiet();
    return H5Fis_hdf5(path) > 0;
}

int qp_h5_read(const char *path, const qp_read_opts *opts, qp_tensor_list *out,
               char *err, size_t errlen)
{
    /* A library default that prints a stack per failure would bury the one
     * line that matters. */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (qp_h5_check_file(path, err, errlen)) return -1;
    const hid_t f = (hid_t)qp_h5_open_read(path, 0);
    if (f < 0) {
        snprintf(err, errlen, "%s: cannot open HDF5 file (corrupt?)", path);
        return -1;
    }
    const size_t n0 = out->n;
    walk w = {path, opts, out, err, errlen};
    err[0] = '\0';
#if H5_VERSION_GE(1, 12, 0)
    herr_t r = H5Ovisit3(f, H5_INDEX_NAME, H5_ITER_INC, visit_cb, &w, H5O_INFO_BASIC);
#else
    herr_t r = H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, visit_cb, &w, H5O_INFO_BASIC);
#endif
    H5Fclose(f);
    if (r < 0) {
        if (!err[0]) snprintf(err, errlen, "%s: cannot walk the HDF5 file (corrupt?)", path);
        for (size_t i = n0; i < out->n; i++) {
            free(out->t[i].name);
            free(out->t[i].data);
        }
        out->n = n0;
        return -1;
    }
    return 0;
}
