/* qs_report.h — writing the summary: DIR/summary.h5, .csv and .md.
 *
 * Owns: the summary files' columns and formats. summary.h5 holds the tables
 * /runs and /recipes (written with io/qp_h5table.h: float64, int64 and
 * NUL-padded string columns) and the experiment's settings as attributes;
 * summary.csv is /runs (numbers with 10 significant digits, nan for none);
 * summary.md has both tables for people. Each file is written beside its
 * final name and renamed into place, so a reader never sees half of one. */
#ifndef QS_REPORT_H
#define QS_REPORT_H

#include <stddef.h>

#include "qs_summary.h"

int qs_report_write(const qs_summary *s, const char *dir, char *err, size_t errlen);

#endif
