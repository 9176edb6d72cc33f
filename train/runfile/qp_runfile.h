/* qp_runfile.h — the one reader of qtrain run files: any column of any
 * dataset, named as the schema names it.
 *
 * Owns: every HDF5 access a tool makes to read a run file (docs/runfile.md).
 * Callers name a dataset by its qp_runset_id and a column by its schema
 * name (qp_runschema.h); where that column lives in the file — a 1-D
 * dataset of a group of series (/train/loss) or a member of a table's
 * compound rows (/quant/error's rel_l2) — is the schema's business, so no
 * caller spells a dataset path. qplot (plots/qp_runread.c), qsweep
 * (experiments/qs_runfile.c) and the tests read through this; the writer is
 * qp_runlog.c.
 *
 * A file is opened read-only with H5F_ACC_SWMR_READ (a run qtrain is still
 * writing, a finished one and one whose writer was killed all open that
 * way; older files without SWMR's format open plainly) and without HDF5's
 * file lock (io/qp_h5open.h: a reader never stands in the writer's way).
 * Every read names its rows [first, first+n), so a caller that asked for a
 * column's length reads exactly that many rows even while the writer
 * appends; while a run is live a group's series may differ in length by a
 * row, and the caller takes the shortest.
 *
 * Versions: the file's schema version (root attribute runfile_schema,
 * absent = 1) is checked on open; a newer one than this build's is refused.
 * A column the schema adds after the file's version is absent from it
 * (qp_runfile_has says 0): the caller does without it.
 *
 * Failures are one line naming the file, without the program name, e.g.
 *   "PATH: No such file or directory", "PATH: not an HDF5 file",
 *   "PATH: a qtrain checkpoint, not a run file",
 *   "PATH: not a qprec run file (no /train)",
 *   "PATH: not a qprec run file (no /train/step)",
 *   "PATH: /train/loss declares 4096 rows but the file does not hold them". */
#ifndef QP_RUNFILE_H
#define QP_RUNFILE_H

#include <stddef.h>
#include <stdint.h>

#include "qp_runschema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qp_runfile qp_runfile;

/* A root attribute as text: strings as they are, numbers printed (qtrain
 * stores strings only; numbers are read so a hand-made file reads too). */
typedef struct {
    char *key, *value;
} qp_runattr;

/* qp_runfile_open's return for a qtrain checkpoint (its root holds the
 * checkpoint marker, qp_ckpt.h, and it has no /train). */
#define QP_RUNFILE_CKPT (-3)

/* Open path: check it is an HDF5 file, open it, read its root attributes,
 * tell a checkpoint apart, check the schema version (tool names the program
 * in that message) and that it has /train. Returns 0 with *out set, or -1
 * (QP_RUNFILE_CKPT for a checkpoint) with err set and *out NULL. */
int qp_runfile_open(qp_runfile **out, const char *path, const char *tool, char *err, size_t errlen);
void qp_runfile_close(qp_runfile *rf);

const char *qp_runfile_path(const qp_runfile *rf);
/* The file's schema version (1 .. QP_RUNFILE_SCHEMA). */
int qp_runfile_version(const qp_runfile *rf);

/* The root attributes, sorted by key. */
int qp_runfile_nattrs(const qp_runfile *rf);
const qp_runattr *qp_runfile_attrs(const qp_runfile *rf);
/* Value of root attribute key, NULL when absent. */
const char *qp_runfile_attr(const qp_runfile *rf, const char *key);
/* Hands the attributes (sorted) to the caller, who frees each key, value
 * and the array; rf then has none. */
qp_runattr *qp_runfile_take_attrs(qp_runfile *rf, int *n);

/* Does the file hold column col of dataset set (col NULL: the dataset
 * itself, a group of series or a table)? 1 or 0; a column the schema adds
 * after the file's version is 0. */
int qp_runfile_has(const qp_runfile *rf, qp_runset_id set, const char *col);

/* Rows column col of set holds (a series: its dataset's length; a table:
 * the table's). -1 with err set when it is absent, not 1-D, or declares
 * more rows than the file holds (so nothing is allocated for a few bytes
 * of header claiming 2^40 rows). */
long long qp_runfile_rows(const qp_runfile *rf, qp_runset_id set, const char *col, char *err, size_t errlen);

/* Rows [first, first+n) of column col of set into out, converted to the
 * memory type (integers and floats convert into each other; a string
 * column reads as n strings of size bytes each, NUL-terminated, cut to
 * size-1). 0, or -1 with err set: a column the schema does not have or of
 * the other kind (number/string), or rows the file cannot give. */
int qp_runfile_read_i64(const qp_runfile *rf, qp_runset_id set, const char *col, size_t first, size_t n,
                        int64_t *out, char *err, size_t errlen);
int qp_runfile_read_u64(const qp_runfile *rf, qp_runset_id set, const char *col, size_t first, size_t n,
                        uint64_t *out, char *err, size_t errlen);
int qp_runfile_read_f64(const qp_runfile *rf, qp_runset_id set, const char *col, size_t first, size_t n,
                        double *out, char *err, size_t errlen);
int qp_runfile_read_str(const qp_runfile *rf, qp_runset_id set, const char *col, size_t first, size_t n,
                        char *out, size_t size, char *err, size_t errlen);

/* Several columns of set at once, into rows of a caller's struct: each
 * bound column's value goes to offset in the struct, as the schema types it
 * (int64: int64_t, uint64: uint64_t, float64: double, a string: size
 * bytes, NUL-terminated, cut to size-1). Rows [first, first+n) land in
 * rows[0..n-1] (rowsize bytes apart). A table is read in one pass. 0, or -1
 * with err set (a column the file lacks fails the read). */
typedef struct {
    const char *column;
    size_t offset;
    size_t size; /* string columns: bytes in the struct */
} qp_runbind;
int qp_runfile_read_rows(const qp_runfile *rf, qp_runset_id set, const qp_runbind *bind, int nbind, size_t rowsize,
                         size_t first, size_t n, void *rows, char *err, size_t errlen);

/* Every row of a table into a fresh array (*rows, *n rows; the caller
 * frees *rows, also after a failure). A table the file does not have reads
 * as no rows (0). 0, or -1 with err set, as qp_runfile_read_rows. */
int qp_runfile_read_table(const qp_runfile *rf, qp_runset_id set, const qp_runbind *bind, int nbind, size_t rowsize,
                          void **rows, size_t *n, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
