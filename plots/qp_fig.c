/* qp_fig.c — the table of figure kinds (see qp_fig.h). */
#include "qp_fig.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const qp_fig_kind QP_FIG_KINDS[] = {
    {"loss", 0, qp_fig_loss},
    {"gap", 0, qp_fig_gap},
    {"qerr", QP_RUN_QERR, qp_fig_qerr},
    {"events", QP_RUN_EVENTS, qp_fig_events},
    {"throughput", 0, qp_fig_throughput},
    {"recalib", QP_RUN_EVENTS, qp_fig_recalib},
    {"outliers", QP_RUN_OUTLIERS, qp_fig_outliers},
    {"bscales", QP_RUN_BSCALES, qp_fig_bscales},
};
const int QP_FIG_NKINDS = (int)(sizeof QP_FIG_KINDS / sizeof *QP_FIG_KINDS);

const qp_fig_kind *qp_fig_find(const char *name)
{
    for (int i = 0; i < QP_FIG_NKINDS; i++)
        if (!strcmp(QP_FIG_KINDS[i].name, name)) return &QP_FIG_KINDS[i];
    return NULL;
}

const char *qp_fig_names(void)
{
    static char names[512];
    if (!names[0])
        for (int i = 0; i < QP_FIG_NKINDS; i++) {
            const size_t n = strlen(names);
            snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", QP_FIG_KINDS[i].name);
        }
    return names;
}

void qp_fig_num(FILE *f, double x)
{
    /* gnuplot reads "NaN" as a missing point; it cannot draw an infinity */
    if (isfinite(x))
        fprintf(f, "%.9g", x);
    else
        fputs("NaN", f);
}
