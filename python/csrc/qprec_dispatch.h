/* qprec_dispatch.h — the package's dispatch handle (qprec_dispatch.c) as
 * the run-file side (qprec_runfile.c) attaches to it. */
#ifndef QPREC_DISPATCH_H
#define QPREC_DISPATCH_H

#include <stddef.h>

#include "qp_runschema.h"

typedef struct qprec_dispatch qprec_dispatch;

/* Where a dispatch's quantization-error rows and recalibration events go:
 * each returns 0, or -1 with a message (the dispatch then fails with it). */
typedef struct {
    int (*qerr)(void *user, const qp_qerr_row *row, char *err, size_t errlen);
    int (*event)(void *user, const qp_event_row *row, char *err, size_t errlen);
} qprec_row_sink;

/* From now on (rows kept before go where they were going); NULL: nowhere. */
void qprec_dispatch_set_sink(qprec_dispatch *d, const qprec_row_sink *sink, void *user);

#endif
