/* qp_draw.h — draw one figure from loaded runs, with its twins.
 *
 * Owns: the path from runs to finished figure files, the same for every
 * kind: the data file (in the scratch directory, or next to the figure with
 * keep_data: loss.png -> loss.dat), the figure in every format —
 * QP_DRAW_FORMATS: PNG, SVG and PDF, the one the output names first, the
 * others beside it with the same stem (loss.png -> loss.svg, loss.pdf) —
 * and the exact data it was drawn from as CSV (loss.csv, qp_figcsv.h), so a
 * paper can restyle any figure; the terminal chosen by each extension; the
 * scripts' directory (QP_PLOTS_DIR from the environment, else
 * share/qprec/plots beside the executable's bin/, qp_share.h); and
 * replacing each file atomically: gnuplot writes a hidden temporary next
 * to it that is renamed over the figure only when gnuplot succeeded, so a
 * viewer (or qplot --follow's next round) never sees half a file and a
 * failed redraw leaves the last good one. */
#ifndef QP_DRAW_H
#define QP_DRAW_H

#include <stddef.h>

#include "qp_fig.h"

#define QP_DRAW_NFORMATS 3
extern const char *const QP_DRAW_FORMATS[QP_DRAW_NFORMATS]; /* "png", "svg", "pdf" */

/* gnuplot terminal for a file name by its extension (.png, .svg, .pdf, in
 * any case), NULL for anything else. */
const char *qp_term_for(const char *path);

/* Directory holding the KIND.gp scripts. */
const char *qp_plots_dir(void);

/* Draw kind from runs[0..n) into out and its twins (the other formats,
 * STEM.csv). scratch: a directory for the data file when !keep_data.
 * Returns 0, or -1 with one line in err (files drawn before the failure
 * are complete; the others keep their previous version). */
int qp_draw(const qp_fig_kind *kind, const qp_run *const *runs, int n, const qp_fig_opts *o, const char *out,
            const char *scratch, int keep_data, char *err, size_t errlen);

#endif
