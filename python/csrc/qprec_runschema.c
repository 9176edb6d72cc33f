/* qprec_runschema.c — the run file's schema (train/runfile/qp_runschema.h) for the
 * Python package, as flat functions ctypes can call.
 *
 * Owns: nothing of the schema. qprec.runfile asks here for every dataset
 * (its name, its path in the file, table or group of series) and every
 * column (name, the HDF5 dataset that holds it, dtype, unit, the schema
 * version that added it, meaning), so python/ holds no second list of
 * dataset paths: the writer (qp_runlog.c), the C reader (qp_runfile.h) and
 * the package all read the one table. Indices are positions in that table
 * for one process's life, never stored: callers look datasets and columns
 * up by name. Out of range: NULL, or -1. */
#include <stdio.h>

#include "qp_runschema.h"

#define QPREC_EXPORT __attribute__((visibility("default")))

static const qp_runcol *col(int s, int c)
{
    if (s < 0 || s >= QP_RS_COUNT || c < 0 || c >= qp_runsets[s].ncols) return NULL;
    return &qp_runsets[s].cols[c];
}

QPREC_EXPORT int qprec_runfile_schema(void) { return QP_RUNFILE_SCHEMA; }
QPREC_EXPORT int qprec_runset_count(void) { return QP_RS_COUNT; }
QPREC_EXPORT const char *qprec_runset_name(int s) { return s >= 0 && s < QP_RS_COUNT ? qp_runsets[s].name : NULL; }
QPREC_EXPORT const char *qprec_runset_path(int s) { return s >= 0 && s < QP_RS_COUNT ? qp_runsets[s].path : NULL; }
QPREC_EXPORT int qprec_runset_table(int s) { return s >= 0 && s < QP_RS_COUNT ? qp_runsets[s].table : -1; }
QPREC_EXPORT int qprec_runset_ncols(int s) { return s >= 0 && s < QP_RS_COUNT ? qp_runsets[s].ncols : -1; }

QPREC_EXPORT const char *qprec_runcol_name(int s, int c) { return col(s, c) ? col(s, c)->name : NULL; }
QPREC_EXPORT const char *qprec_runcol_unit(int s, int c) { return col(s, c) ? col(s, c)->unit : NULL; }
QPREC_EXPORT const char *qprec_runcol_meaning(int s, int c) { return col(s, c) ? col(s, c)->meaning : NULL; }
QPREC_EXPORT int qprec_runcol_since(int s, int c) { return col(s, c) ? col(s, c)->since : -1; }

/* numpy's name of the column's type in the file: int64, uint64, float64, S<width> */
QPREC_EXPORT int qprec_runcol_dtype(int s, int c, char *buf, int len)
{
    const qp_runcol *k = col(s, c);
    if (!k || len < 1) return -1;
    switch (k->kind) {
    case QP_RC_I64: snprintf(buf, (size_t)len, "int64"); break;
    case QP_RC_U64: snprintf(buf, (size_t)len, "uint64"); break;
    case QP_RC_F64: snprintf(buf, (size_t)len, "float64"); break;
    case QP_RC_STR: snprintf(buf, (size_t)len, "S%d", k->width); break;
    }
    return 0;
}

/* The HDF5 dataset that holds the column: a series of its own in its group, or the table */
QPREC_EXPORT int qprec_runcol_dataset(int s, int c, char *buf, int len)
{
    const qp_runcol *k = col(s, c);
    if (!k || len < 1) return -1;
    qp_runcol_dataset((qp_runset_id)s, k->name, buf, (size_t)len);
    return 0;
}
