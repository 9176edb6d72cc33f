/* qp_sweep.c — sweep directories for "qplot all" (see qp_sweep.h). */
#include "qp_sweep.h"

#include "qp_figutil.h"
#include "qs_attr.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int qp_sweep_list(const char *dir, char ***paths, char *err, size_t errlen)
{
    *paths = NULL;
    char runs[4096];
    snprintf(runs, sizeof runs, "%s/runs", dir);
    DIR *d = opendir(runs);
    if (!d) {
        snprintf(err, errlen, "%s: %s", runs, strerror(errno));
        return -1;
    }
    char **list = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        if (name[0] == '.' || !ends_with(name, ".h5") || ends_with(name, ".ckpt.h5")) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nl = realloc(list, (size_t)cap * sizeof *nl);
            if (!nl) goto oom;
            list = nl;
        }
        size_t len = strlen(runs) + strlen(name) + 2;
        if (!(list[n] = malloc(len))) goto oom;
        snprintf(list[n], len, "%s/%s", runs, name);
        n++;
    }
    closedir(d);
    if (!n) {
        free(list);
        snprintf(err, errlen, "%s: no run files (*.h5)", runs);
        return -1;
    }
    qsort(list, (size_t)n, sizeof *list, cmp_str);
    *paths = list;
    return n;
oom:
    closedir(d);
    for (int i = 0; i < n; i++) free(list[i]);
    free(list);
    snprintf(err, errlen, "%s: out of memory", runs);
    return -1;
}

/* a run no figure shows: a noise twin or one block of a recipe */
static int aside(const qp_run *r)
{
    return qp_run_is_twin(r) || qs_attr_block(r->recipe) >= 0;
}

int qp_sweep_pick(const char *kind, const qp_run *const *runs, int n, const char *baseline, int *pick, char *err,
                  size_t errlen)
{
    int k = 0;
    if (!strcmp(kind, "qerr")) {
        /* a panel per recipe: its first run that logged errors */
        for (int pass = 0; pass < 2 && !k; pass++)
            for (int i = 0; i < n; i++) {
                if (!runs[i]->n_qerr || aside(runs[i]) || (!pass && !strcmp(runs[i]->recipe, baseline)))
                    continue;
                int seen = 0;
                for (int j = 0; j < k; j++) seen |= !strcmp(runs[pick[j]]->recipe, runs[i]->recipe);
                if (!seen) pick[k++] = i;
                if (pass) break; /* only the baseline logged errors: one panel */
            }
        if (!k) snprintf(err, errlen, "qerr: no run logged quantization errors (/quant/error is empty in all %d)", n);
        return k;
    }
    if (!strcmp(kind, "outliers")) {
        /* a column per recipe: its first run that logged them (the baseline too: any recipe's inputs) */
        for (int i = 0; i < n; i++) {
            if (!runs[i]->n_outliers || qp_run_is_twin(runs[i])) continue;
            int seen = 0;
            for (int j = 0; j < k; j++) seen |= !strcmp(runs[pick[j]]->recipe, runs[i]->recipe);
            if (!seen) pick[k++] = i;
        }
        if (!k) snprintf(err, errlen, "outliers: no run logged outlier statistics (/quant/outliers is empty in all %d)", n);
        return k;
    }
    if (!strcmp(kind, "bscales")) {
        /* a column per recipe: its first run that logged block scales; none
         * (a sweep of formats without block scales): no figure, no error */
        for (int i = 0; i < n; i++) {
            if (!runs[i]->n_bshist || aside(runs[i])) continue;
            int seen = 0;
            for (int j = 0; j < k; j++) seen |= !strcmp(runs[pick[j]]->recipe, runs[i]->recipe);
            if (!seen) pick[k++] = i;
        }
        if (!k && errlen) err[0] = '\0';
        return k;
    }
    if (!strcmp(kind, "events")) {
        for (int i = 0; i < n; i++) {
            if (!runs[i]->n_events || aside(runs[i])) continue;
            int seen = 0;
            for (int j = 0; j < k; j++) seen |= !strcmp(runs[pick[j]]->recipe, runs[i]->recipe);
            if (!seen) pick[k++] = i;
        }
        if (!k) pick[k++] = 0;
        return k;
    }
    /* noise-floor twins would double their recipe's runs */
    for (int i = 0; i < n; i++)
        if (!aside(runs[i])) pick[k++] = i;
    if (!k) snprintf(err, errlen, "%s: every run is a noise-floor twin or an attribution run", kind);
    return k;
}
