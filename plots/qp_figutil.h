/* qp_figutil.h — pieces several figure kinds share.
 *
 * Owns: grouping runs by recipe for legends (one key entry per recipe, in
 * the order recipes first appear), the per-run colour/label word lists
 * handed to gnuplot, and word lists built piece by piece. */
#ifndef QP_FIGUTIL_H
#define QP_FIGUTIL_H

#include <stddef.h>

#include "qp_gnuplot.h"
#include "qp_runread.h"

#define QP_LABEL_LEN 96

/* A growing list of words for qp_gpv_words; an allocation failure is
 * remembered (oom) rather than reported at every add. */
typedef struct {
    char **w;
    int n, cap, oom;
} qp_words;

/* The extent of what a figure plots. gnuplot warns "empty x range" (and
 * qplot treats every warning as an error) when autoscaling meets a single
 * value, e.g. a run that has logged one step so far: the x range is
 * therefore always given (xlo, xhi: the data's, widened when it is one
 * point) and the y range only when it is one value (ylo, yhi); otherwise y
 * is left to gnuplot's autoscaling, which picks nicer ends, except on a
 * log axis (autoscaled to whole decades). On a log axis only positive
 * values count. */
typedef struct {
    double xlo, xhi, ylo, yhi, xpos, ypos; /* xpos/ypos: least positive x/y */
} qp_range;

void qp_range_init(qp_range *r);
void qp_range_add(qp_range *r, double x, double y); /* non-finite values are ignored */
void qp_range_vars(const qp_range *r, qp_gpvars *v, int logx, int logy);

void qp_words_add(qp_words *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void qp_words_free(qp_words *l);

/* Key title of run i when runs of one recipe share a key entry: the recipe
 * with "(k seeds)" / "(k runs)" on the first run of that recipe, "" (no
 * entry) on the others. */
void qp_group_title(const qp_run *const *runs, int n, int i, char *out, size_t len);

/* Sets NAME_colors (recipe colour of each run) and, if labels_name is not
 * NULL, labels_name (qp_run_label of each run) or group titles (grouped). */
int qp_run_words(const qp_run *const *runs, int n, qp_gpvars *v, const char *colors_name, const char *labels_name,
                 int grouped);

/* The first root attribute (besides those that say how or where a run was
 * computed or what it logged: recipe, seed, data_seed, host, threads, ...)
 * on which a and b differ, NULL if none: NULL means the same experiment.
 * across_seeds: also ignore the initial weights' hash (runs of other seeds). */
const char *qp_config_diff(const qp_run *a, const qp_run *b, int across_seeds);

/* A noise-floor twin: trained with a data seed other than its seed. */
int qp_run_is_twin(const qp_run *r);

#endif
