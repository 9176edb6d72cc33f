/* qp_draw.h — draw one figure file from loaded runs.
 *
 * Owns: the path from runs to a finished figure file: the terminal chosen
 * by the output's extension, the data file (in the scratch directory, or
 * next to the figure with keep_data: loss.png -> loss.dat), the scripts'
 * directory (QP_PLOTS_DIR from the environment, else the source tree's
 * plots/ compiled in), and replacing the figure atomically: gnuplot writes
 * a hidden temporary next to it that is renamed over the figure only when
 * gnuplot succeeded, so a viewer (or qplot --follow's next round) never
 * sees half a file and a failed redraw leaves the last good one. */
#ifndef QP_DRAW_H
#define QP_DRAW_H

#include <stddef.h>

#include "qp_fig.h"

/* gnuplot terminal for a file name by its extension (.png, .svg, .pdf, in
 * any case), NULL for anything else. */
const char *qp_term_for(const char *path);

/* Directory holding the KIND.gp scripts. */
const char *qp_plots_dir(void);

/* Draw kind from runs[0..n) into out. scratch: a directory for the data
 * file when !keep_data. Returns 0, or -1 with one line in err. */
int qp_draw(const qp_fig_kind *kind, const qp_run *const *runs, int n, const qp_fig_opts *o, const char *out,
            const char *scratch, int keep_data, char *err, size_t errlen);

#endif
