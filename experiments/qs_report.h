/* qs_report.h — writing the summary: DIR/summary.h5, .csv and .md.
 *
 * Owns: the summary files' columns and formats. summary.h5 holds the tables
 * /runs and /recipes (written with io/qp_h5table.h: float64, int64 and
 * NUL-padded string columns) and the experiment's settings as attributes;
 * /noise (the noise twins' groups, same columns as /recipes);
 * /attribution (qs_summary.h's attribution table; empty without
 * [sweep] attribute) and the attribute "attribute" (none, blocks);
 * /contrast (qs_summary.h's contrast table; empty without [sweep]
 * contrast) and the attribute "contrast" (the axis, or none);
 * summary.csv is /runs (numbers with 10 significant digits, nan for none),
 * summary_attribution.csv /attribution (with attribute = blocks),
 * summary_contrast.csv /contrast (with contrast = AXIS);
 * summary.md has both tables for people. Each file is written beside its
 * final name and renamed into place, so a reader never sees half of one. */
#ifndef QS_REPORT_H
#define QS_REPORT_H

#include <stddef.h>

#include "qs_summary.h"

int qs_report_write(const qs_summary *s, const char *dir, char *err, size_t errlen);
/* A group's gap as people read it: "+4.79% [+4.51, +5.07] resolved",
 * "+0.12% [-0.80, +1.04] unresolved", "+0.10% (1 seed: no interval)";
 * the baseline recipe's own group (s not NULL) reads "0 (the baseline)":
 * its gap is 0 by definition, not an unresolved measurement. */
void qs_report_gap_text(const qs_summary *s, const qs_group *G, char *buf, size_t len);
/* 1 if G is a group of the baseline recipe's runs (not noise twins, not
 * attribution runs): the reference every other gap is measured against. */
int qs_report_is_baseline(const qs_summary *s, const qs_group *G);
/* A mean and its interval: "+4.79% [+4.51, +5.07] resolved" (verdict 1;
 * 0 leaves the word out), "+0.10% (1 seed: no interval)", "–" for none;
 * decimals digits after the point, unit after the mean. */
void qs_report_ci_text(const qs_ci *c, int decimals, const char *unit, int verdict, char *buf, size_t len);
/* A contrast row as people read it: each side's gap in % ("+0.24 [-0.11,
 * +0.59]"), the difference in % with its verdict ("+2.00 [+1.75, +2.25]
 * resolved") and in nats. */
typedef struct {
    char gap_a[96], gap_b[96], diff_pct[96], diff_nats[96];
} qs_contrast_text;
void qs_report_contrast_text(const qs_contrast_row *C, qs_contrast_text *x);
/* A block's share of the gap: "+33.4% [+20.1, +46.0] resolved",
 * "+30.0% [unbounded: the full gap is unresolved]", "0 (kept in the
 * baseline's format)". */
void qs_report_share_text(const qs_attr_row *A, char *buf, size_t len);

#endif
