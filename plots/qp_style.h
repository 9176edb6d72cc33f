/* qp_style.h — what identifies a run in a figure: its colour and its label.
 *
 * Owns: the recipe -> colour table. Colours are Okabe & Ito's colour-blind-
 * safe palette (plus its grey), fixed per recipe name so every figure of a
 * write-up shows a recipe in the same colour whatever else is plotted with
 * it. A name outside the table (an ablation such as "nvfp4-rht") gets a
 * colour from a hash of the name: stable across figures, though two such
 * names may share one. */
#ifndef QP_STYLE_H
#define QP_STYLE_H

#include <stddef.h>

#include "qp_runread.h"

/* "#RRGGBB" */
const char *qp_recipe_color(const char *recipe);

/* Label of run i among runs[0..n): the recipe, with " s<seed>" when another
 * run has the same recipe, and the file name instead of the seed when that
 * is still ambiguous. Quotes are replaced by '_' so a label can sit inside
 * a gnuplot string. */
void qp_run_label(const qp_run *const *runs, int n, int i, char *out, size_t len);

#endif
