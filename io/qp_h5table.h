/* qp_h5table.h — append-only HDF5 tables: a 1-D compound dataset, one
 * record per row, chunked and unlimited so rows can be added for as long as
 * the file is open (qerr writes one at once; the trainer appends per step).
 *
 * Owns: the on-disk layout of every qprec table. Columns are float64, int64
 * or fixed-width strings (NUL-padded, width = the most bytes a value may
 * have; a longer value is an error, never silently cut). Rows are buffered
 * and written a chunk at a time; qp_h5table_flush() writes what is buffered
 * and flushes the file, so a reader (h5py) sees every appended row. String
 * attributes are variable-length UTF-8, which h5py returns as str.
 * All functions switch HDF5's error-stack printing off and report one line. */
#ifndef QP_H5TABLE_H
#define QP_H5TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { QP_H5COL_F64, QP_H5COL_I64, QP_H5COL_STR } qp_h5col_type;

typedef struct {
    const char *name;
    qp_h5col_type type;
    size_t width;          /* QP_H5COL_STR: bytes (>= 1); ignored otherwise */
} qp_h5col;

/* One cell of a row, read according to its column's type. */
typedef union {
    double f64;
    int64_t i64;
    const char *str;
} qp_h5cell;

typedef struct qp_h5table qp_h5table;

/* Create (truncate) / close an HDF5 file; create returns < 0 on failure. */
hid_t qp_h5file_create(const char *path, char *err, size_t errlen);
int qp_h5file_close(hid_t file, char *err, size_t errlen);

/* A string attribute on any object (file, group, dataset); replaces an
 * existing one of that name. */
int qp_h5_set_attr_str(hid_t obj, const char *name, const char *value, char *err, size_t errlen);

/* Create a table at path under loc (intermediate groups are created).
 * chunk_rows: rows per chunk and per buffered write (0: 1024). */
qp_h5table *qp_h5table_create(hid_t loc, const char *path, const qp_h5col *cols, int ncols,
                              size_t chunk_rows, char *err, size_t errlen);
int qp_h5table_set_attr(qp_h5table *t, const char *name, const char *value, char *err, size_t errlen);
/* row holds ncols cells in column order. */
int qp_h5table_append(qp_h5table *t, const qp_h5cell *row, char *err, size_t errlen);
int qp_h5table_flush(qp_h5table *t, char *err, size_t errlen);
/* Rows appended so far (written or buffered). */
int64_t qp_h5table_rows(const qp_h5table *t);
/* Flush and free; t is gone even when this fails. */
int qp_h5table_close(qp_h5table *t, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
