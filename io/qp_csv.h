/* qp_csv.h — the one rule for a CSV field, for every CSV qprec writes
 * (qsweep's summaries, qerr's reports, qplot's figure data).
 *
 * Owns: quoting and number spelling. A text field is written as it is
 * unless it holds a comma, a double quote, CR or LF, or starts or ends with
 * a blank (which readers that trim would lose); then it is quoted, its
 * quotes doubled (RFC 4180). A number is written to round-trip (%.17g);
 * NaN, "not applicable", is an empty field, infinities inf and -inf. */
#ifndef QP_CSV_H
#define QP_CSV_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

void qp_csv_str(FILE *f, const char *s);
void qp_csv_real(FILE *f, double x);

#ifdef __cplusplus
}
#endif
#endif
