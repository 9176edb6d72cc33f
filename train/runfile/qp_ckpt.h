/* qp_ckpt.h — checkpoints: named float tensors and scalar attributes in an
 * HDF5 file, written atomically and verified on read.
 *
 * Owns: the checkpoint file format and its integrity. Writing goes to
 * PATH.tmp, which is flushed, fsync'ed and renamed over PATH; the previous
 * PATH is first renamed to PATH.prev, so a kill at any moment leaves at least
 * one whole checkpoint. Every tensor carries a CRC-32 of its bytes and the
 * file a "complete" attribute written last; qp_ckpt_open rejects a file
 * whose marker or checksums are wrong, and qp_ckpt_open_latest falls back to
 * PATH.prev. Tensors are float32 datasets (any shape), so `qerr` reads a
 * checkpoint like any HDF5 file. */
#ifndef QP_CKPT_H
#define QP_CKPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The root attribute a checkpoint's writer sets last (the number of
 * tensors): what tells a checkpoint from any other HDF5 file, e.g. for
 * qplot, which leaves checkpoints found among run files out. */
#define QP_CKPT_MARKER "complete"

typedef struct {
    const char *name;      /* dataset path, e.g. "params/wte" (groups created) */
    const float *data;
    int ndim;              /* 1..4 */
    int64_t shape[4];
} qp_ckpt_tensor;

typedef struct {
    const char *name;
    int is_string;
    int64_t i64;           /* when !is_string */
    const char *str;       /* when is_string */
} qp_ckpt_attr;

/* Write a checkpoint atomically (see above). Returns 0, or -1 with err. */
int qp_ckpt_write(const char *path, const qp_ckpt_tensor *tensors, int ntensors, const qp_ckpt_attr *attrs,
                  int nattrs, char *err, size_t errlen);

typedef struct qp_ckpt qp_ckpt;
/* Open and verify one file (marker and every checksum). NULL + err if it is
 * missing, torn or corrupt. */
qp_ckpt *qp_ckpt_open(const char *path, char *err, size_t errlen);
/* PATH if it verifies, else PATH.prev; *used_path says which. */
qp_ckpt *qp_ckpt_open_latest(const char *path, const char **used_path, char *err, size_t errlen);
/* Read tensor `name` into dst, which holds exactly n floats (the stored
 * element count must equal n). */
int qp_ckpt_read(qp_ckpt *c, const char *name, float *dst, int64_t n, char *err, size_t errlen);
int qp_ckpt_attr_i64(qp_ckpt *c, const char *name, int64_t *v, char *err, size_t errlen);
/* 1 if the checkpoint has root attribute `name` (of any type), else 0. */
int qp_ckpt_has_attr(qp_ckpt *c, const char *name);
/* Copies at most len-1 bytes and a NUL into dst. */
int qp_ckpt_attr_str(qp_ckpt *c, const char *name, char *dst, size_t len, char *err, size_t errlen);
void qp_ckpt_close(qp_ckpt *c);

#ifdef __cplusplus
}
#endif
#endif
