/* qp_fig.c — the table of figure kinds (see qp_fig.h). */
#include "qp_fig.h"

#include <math.h>
#include <string.h>

const qp_fig_kind QP_FIG_KINDS[] = {
    {"loss", 0, qp_fig_loss},
    {"gap", 0, qp_fig_gap},
    {"qerr", QP_RUN_QERR, qp_fig_qerr},
    {"events", QP_RUN_EVENTS, qp_fig_events},
    {"throughput", 0, qp_fig_throughput},
};
const int QP_FIG_NKINDS = (int)(sizeof QP_FIG_KINDS / sizeof *QP_FIG_KINDS);

const qp_fig_kind *qp_fig_find(const char *name)
{
    for (int i = 0; i < QP_FIG_NKINDS; i++)
        if (!strcmp(QP_FIG_KINDS[i].name, name)) return &QP_FIG_KINDS[i];
    return NULL;
}

void qp_fig_num(FILE *f, double x)
{
    /* gnuplot reads "NaN" as a missing point; it cannot draw an infinity */
    if (isfinite(x))
        fprintf(f, "%.9g", x);
    else
        fputs("NaN", f);
}
