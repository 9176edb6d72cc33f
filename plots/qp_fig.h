/* qp_fig.h — the figure kinds: what each one extracts from the runs.
 *
 * Owns: the list of kinds and the contract between a kind's C half and its
 * gnuplot half (plots/KIND.gp). A kind's write() turns loaded runs into one
 * plain-text data file (gnuplot "index" blocks, two blank lines apart; a
 * missing value is NaN) and adds the variables its script reads; qp_draw
 * adds the ones every script reads (datafile, out, term, plotsdir). The
 * comment above each write() in fig_KIND.c is the data file's layout.
 * A write() that finds nothing to draw fails with one line naming the run
 * (never an empty figure). The first comment of each block names its
 * series and columns ("# SERIES: col col ..."): the figure's CSV twin
 * takes its header from there (qp_figcsv.h). */
#ifndef QP_FIG_H
#define QP_FIG_H

#include <stdio.h>

#include "qp_gnuplot.h"
#include "qp_runread.h"

typedef struct {
    double smooth;        /* EMA factor of training-loss curves, in [0, 1); 0 = raw */
    int logx, logy;       /* loss: logarithmic axes */
    const char *baseline; /* gap: the reference recipe */
} qp_fig_opts;

typedef int (*qp_fig_write_fn)(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v,
                               char *err, size_t errlen);

typedef struct {
    const char *name; /* also the script's name: plots/<name>.gp */
    unsigned load;    /* QP_RUN_* parts of a run file it reads */
    qp_fig_write_fn write;
} qp_fig_kind;

extern const qp_fig_kind QP_FIG_KINDS[];
extern const int QP_FIG_NKINDS;

const qp_fig_kind *qp_fig_find(const char *name);
/* "loss, gap, ...": every kind's name, for messages. */
const char *qp_fig_names(void);

int qp_fig_loss(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                size_t errlen);
int qp_fig_gap(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
               size_t errlen);
int qp_fig_qerr(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                size_t errlen);
int qp_fig_events(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                  size_t errlen);
int qp_fig_recalib(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                   size_t errlen);
int qp_fig_outliers(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                    size_t errlen);
int qp_fig_bscales(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                   size_t errlen);
int qp_fig_throughput(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                      size_t errlen);

/* A number for a data file: NaN for anything non-finite. */
void qp_fig_num(FILE *f, double x);

#endif
