/* qp_gnuplot.h — run one gnuplot script and judge the result.
 *
 * Owns: how qplot talks to gnuplot. Data reaches a script only as variables
 * given with -e ("datafile='...'; out='...'; term='...'; ..."), built with
 * qp_gpvars, so every script can also be run by hand with the same line.
 * gnuplot runs with -d (no ~/.gnuplot: a user's init file must not change a
 * figure), stdin and stdout on /dev/null, in its own process group (a ^C
 * meant for qplot --follow must not kill a half-written figure), with the
 * default signal mask. It succeeded only if it exited 0 AND wrote nothing
 * on stderr: gnuplot reports "warning: Skipping data file with no valid
 * points" and friends there and still exits 0, and a figure drawn over a
 * warning is usually wrong. The executable is $QP_GNUPLOT, else "gnuplot"
 * from PATH. */
#ifndef QP_GNUPLOT_H
#define QP_GNUPLOT_H

#include <stddef.h>

/* A growing "name=value; ..." list. Allocation failure is remembered and
 * reported by qp_gnuplot_run. */
typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} qp_gpvars;

void qp_gpv_init(qp_gpvars *v);
void qp_gpv_free(qp_gpvars *v);
/* name='value' (a quote inside is doubled, gnuplot's escape in '...'). */
void qp_gpv_str(qp_gpvars *v, const char *name, const char *value);
void qp_gpv_num(qp_gpvars *v, const char *name, double value);  /* always a float: 1 -> 1.0 */
void qp_gpv_int(qp_gpvars *v, const char *name, long long value); /* loop bounds, flags */
/* name='"w1" "w2" ...': a list for gnuplot's word(name, i) / words(name);
 * a word may hold spaces; a double quote in it becomes '_'. */
void qp_gpv_words(qp_gpvars *v, const char *name, const char *const *words, int n);

/* Run gnuplot -d -e VARS SCRIPT. Returns 0, or -1 with one line in err:
 * the first message gnuplot printed (prefixed with the script's name), or
 * why it could not run or how it died. */
int qp_gnuplot_run(const char *script, const qp_gpvars *vars, char *err, size_t errlen);

#endif
