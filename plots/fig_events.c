/* fig_events.c — recalibration events over steps, by layer and kind.
 *
 * One panel per run (stacked, sharing the step axis). x = the step of the
 * event, y = its layer, spread within the layer's band by GEMM and operand
 * so simultaneous events stay apart: 21 slots, bottom to top qkv x, w, dy,
 * attproj x, w, dy, fc ..., fcproj ..., gate ..., up ..., down ... (the
 * GPT's and the Llama's GEMMs). Kind: point type and colour.
 *
 * Data file, per run i: index i: step  y  kind   (kind 1..5 = scale_change,
 *   overflow, underflow, nonfinite, any other name; a single "NaN NaN 0"
 *   row when the run has no event)
 * Variables: n, titles (panel labels with the event count), kindtitles
 * (the kind names, "" for kinds no run has: no key entry), xmin, xmax,
 * ymin, ymax, height. */
#include <stdlib.h>
#include <string.h>

#include "qp_fig.h"
#include "qp_figutil.h"
#include "qp_style.h"

static const char *const KINDS[] = {"scale_change", "overflow", "underflow", "nonfinite", "other"};
static const char *const SHOWN[] = {"scale change", "overflow", "underflow", "non-finite", "other"};
#define NKINDS 5
static const char *const GEMMS[] = {"qkv", "attproj", "fc", "fcproj", "gate", "up", "down"}; /* GPT, then Llama MLP */
static const char *const OPERANDS[] = {"x", "w", "dy"};
#define NGEMMS (int)(sizeof GEMMS / sizeof *GEMMS)
#define NSLOTS (NGEMMS * 3)

static int index_of(const char *s, const char *const *list, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, list[i])) return i;
    return -1;
}

static double jitter_y(const qp_event_rec *e)
{
    int g = index_of(e->gemm, GEMMS, NGEMMS), op = index_of(e->operand, OPERANDS, 3);
    double slot = g < 0 || op < 0 ? (NSLOTS - 1) / 2.0 : g * 3 + op; /* unknown names sit in the middle */
    return (double)e->layer - 0.4 + 0.8 * (slot + 0.5) / NSLOTS;
}

int qp_fig_events(const qp_run *const *runs, int n, const qp_fig_opts *o, FILE *data, qp_gpvars *v, char *err,
                  size_t errlen)
{
    (void)o;
    char (*titles)[2 * QP_LABEL_LEN] = calloc((size_t)n, sizeof *titles);
    const char **tp = calloc((size_t)n, sizeof *tp);
    if (!titles || !tp) {
        free(titles);
        free(tp);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int present[NKINDS] = {0};
    long long ymin = 0, ymax = 0;
    int64_t xmin = runs[0]->step[0], xmax = runs[0]->step[runs[0]->n_train - 1];
    for (int i = 0; i < n; i++) {
        const qp_run *r = runs[i];
        const char *layers = qp_run_attr(r, "layers");
        long long L = layers ? atoll(layers) : 0;
        if (L - 1 > ymax) ymax = L - 1;
        if (r->step[0] < xmin) xmin = r->step[0];
        if (r->step[r->n_train - 1] > xmax) xmax = r->step[r->n_train - 1];
        fprintf(data, "# %s: step y kind(1..5)\n", r->path);
        if (!r->n_events) fputs("NaN NaN 0\n", data);
        for (size_t k = 0; k < r->n_events; k++) {
            const qp_event_rec *e = &r->events[k];
            int kind = index_of(e->kind, KINDS, NKINDS - 1);
            if (kind < 0) kind = NKINDS - 1;
            present[kind] = 1;
            if (e->layer < ymin) ymin = e->layer;
            if (e->layer > ymax) ymax = e->layer;
            if (e->step > xmax) xmax = e->step;
            fprintf(data, "%lld %.4f %d\n", (long long)e->step, jitter_y(e), kind + 1);
        }
        fputs("\n\n", data);
        char label[QP_LABEL_LEN];
        qp_run_label(runs, n, i, label, sizeof label);
        if (r->n_events)
            snprintf(titles[i], sizeof *titles, "%s: %zu event%s", label, r->n_events, r->n_events == 1 ? "" : "s");
        else
            snprintf(titles[i], sizeof *titles, "%s: no recalibration events", label);
        tp[i] = titles[i];
    }
    const char *kt[NKINDS];
    for (int k = 0; k < NKINDS; k++) kt[k] = present[k] ? SHOWN[k] : "";
    if (xmax == xmin) xmax = xmin + 1;
    /* a margin so events at the first and last step clear the axes */
    double pad = 0.02 * (double)(xmax - xmin);
    double height = n == 1 ? 2.6 : 0.9 + 1.25 * n;
    if (height > 10) height = 10;

    qp_gpv_int(v, "n", n);
    qp_gpv_words(v, "titles", tp, n);
    qp_gpv_words(v, "kindtitles", kt, NKINDS);
    qp_gpv_num(v, "xmin", (double)xmin - pad);
    qp_gpv_num(v, "xmax", (double)xmax + pad);
    qp_gpv_num(v, "ymin", (double)ymin - 0.5);
    qp_gpv_num(v, "ymax", (double)ymax + 0.5);
    qp_gpv_num(v, "height", height);
    free(titles);
    free(tp);
    return 0;
}
