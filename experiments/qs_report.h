/* qs_report.h — writing the summary: DIR/summary.h5, .csv and .md.
 *
 * Owns: the summary files' columns and formats. summary.h5 holds the tables
 * /runs and /recipes (written with io/qp_h5table.h: float64, int64 and
 * NUL-padded string columns) and the experiment's settings as attributes;
 * /noise (the noise twins' groups, same columns as /recipes);
 * summary.csv is /runs (numbers with 10 significant digits, nan for none);
 * summary.md has both tables for people. Each file is written beside its
 * final name and renamed into place, so a reader never sees half of one. */
#ifndef QS_REPORT_H
#define QS_REPORT_H

#include <stddef.h>

#include "qs_summary.h"

int qs_report_write(const qs_summary *s, const char *dir, char *err, size_t errlen);
/* A group's gap as people read it: "+4.79% [+4.51, +5.07] resolved",
 * "+0.12% [-0.80, +1.04] unresolved", "+0.10% (1 seed: no interval)". */
void qs_report_gap_text(const qs_group *G, char *buf, size_t len);

#endif
