/* qp_h5read.h — read every floating-point dataset of an HDF5 file.
 *
 * Owns: the HDF5 side of tensor input. The file's objects are walked in name
 * order (H5Ovisit); each dataset whose type class is float becomes a tensor
 * named by its full path ("/group/weight"), any rank up to 8 (a scalar is
 * 1 x 1). IEEE half (and a bfloat16 layout) are widened exactly from their
 * bits, float32 is read as is, float64 is rounded to nearest, other float
 * layouts are converted by HDF5. Other datasets (integers, strings,
 * compounds) and empty (null-dataspace) ones are skipped with a note.
 * HDF5's own error-stack printing is switched off: failures are one line,
 * "PATH: not an HDF5 file", "PATH: dataset '/x': cannot read data", ... */
#ifndef QP_H5READ_H
#define QP_H5READ_H

#include <stddef.h>

#include "qp_tensor_file.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Appends the datasets to out; on failure out is unchanged. */
int qp_h5_read(const char *path, const qp_read_opts *opts, qp_tensor_list *out,
               char *err, size_t errlen);

/* 1 if path is an HDF5 file, 0 if it is not (or cannot be read). */
int qp_h5_is_hdf5(const char *path);

#ifdef __cplusplus
}
#endif
#endif
