/* qp_figcsv.h — a figure's data file as CSV, beside the figure.
 *
 * Owns: turning the plain-text data file a kind's write() produced (the
 * exact numbers gnuplot draws) into FIG.csv, for every kind alike, so a
 * paper can restyle any figure from the data it was drawn from. The data
 * file's layout is gnuplot's: blocks ("index" i) separated by two or more
 * blank lines, fields separated by blanks, a double-quoted field is one
 * field, '#' starts a comment. A block's first comment names it:
 *     # SERIES: col col col      (or "# col col col" without a series)
 * where a column name is one word, parentheses grouping ("smoothed(EMA
 * 0.9)" is one name). The CSV has one header row, index,series and every
 * column name in order of first appearance over all blocks; each data row
 * gives its block's index and series and fills its own columns, leaving the
 * others empty. A block whose comment does not name as many columns as its
 * rows hold (or that has none) gets col1, col2, ... Values are copied as
 * written (NaN stays NaN); fields are quoted as CSV needs (RFC 4180). */
#ifndef QP_FIGCSV_H
#define QP_FIGCSV_H

#include <stddef.h>

/* Write csv (beside it as a temporary, renamed into place) from the data
 * file datafile. Returns 0, or -1 with one line in err. */
int qp_figcsv_write(const char *datafile, const char *csv, char *err, size_t errlen);

#endif
