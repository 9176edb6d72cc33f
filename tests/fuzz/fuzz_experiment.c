/* fuzz_experiment.c — libFuzzer target for qsweep's experiment files
 * (experiments/qs_ini.c through qs_ini_parse, its option checks qs_opts.c
 * and the trainer's recipe parser), then grid expansion (qs_grid.c).
 *
 * Contract checked on every input: a rejected file gives one line
 * "FILE:LINE: message" (or "FILE: ...") and leaves the experiment empty; an
 * accepted one has a canonical form that parses again to the same canonical
 * form, a contrast names an axis it may contrast, and its grid either
 * expands (every run has a name and a command ending in the flags qsweep
 * adds) or is refused with one line. Any breach aborts. Replayed over the corpus by fuzz_replay.c in the ordinary build. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qs_grid.h"
#include "qs_ini.h"

#define NAME "/tmp/qp-fuzz-experiment.ini" /* its folder must exist: relative data resolves there */

static void check_err(const char *err, const char *prefix)
{
    if (strncmp(err, prefix, strlen(prefix)) != 0 || strchr(err, '\n') || !err[strlen(prefix)]) abort();
}

static void check_empty(const qs_experiment *e)
{
    if (e->nbase || e->naxes || e->base || e->axes) abort();
}

static void check_grid(const qs_experiment *e)
{
    long long total = 1;
    for (int a = 0; a < e->naxes; a++) {
        if (e->axes[a].nvalues < 1) abort();
        total *= e->axes[a].nvalues;
        if (total > 2000) return; /* a big grid costs time (argv per run), not coverage */
    }
    qs_plan p;
    char err[1024];
    err[0] = '\0';
    if (qs_grid_expand(e, "qtrain", "/tmp/qp-fuzz/sweep", 2, &p, err, sizeof err)) {
        if (p.runs || p.n) abort();
        if (!err[0] || strchr(err, '\n')) abort();
        return;
    }
    /* the grid: every combination no exclude line matches (the corpus's
     * triangular grids), none that one matches */
    long long kept = 0;
    int vi[64];
    for (long long k = 0; k < total && e->naxes <= 64; k++) {
        long long rest = k;
        for (int a = e->naxes - 1; a >= 0; a--) vi[a] = (int)(rest % e->axes[a].nvalues), rest /= e->axes[a].nvalues;
        int excluded = 0;
        for (int x = 0; x < e->nexcl; x++) {
            int all = 1;
            for (int c = 0; c < e->excl[x].n; c++) all &= vi[e->excl[x].axis[c]] == e->excl[x].value[c];
            excluded |= all;
        }
        kept += !excluded;
    }
    if ((e->naxes <= 64 && p.ngrid != kept) || p.ngrid > total || p.n < p.ngrid) abort();
    for (int i = 0; i < p.ngrid; i++)
        for (int x = 0; x < e->nexcl; x++) {
            int all = 1;
            for (int c = 0; c < e->excl[x].n; c++) all &= p.runs[i].vi[e->excl[x].axis[c]] == e->excl[x].value[c];
            if (all) abort();
        }
    for (int i = 0; i < p.n; i++) {
        const qs_run *r = &p.runs[i];
        /* after the grid: noise twins and attribution runs, each of a grid run */
        const int of = r->twin_of >= 0 ? r->twin_of : r->attr_of;
        if ((i < p.ngrid) != (of < 0) || of >= p.ngrid || (r->attr_of >= 0) != (r->block >= 0)) abort();
        if (r->block >= r->layers || r->layers < 1) abort();
        if (!r->name[0] || strlen(r->name) > 200 || strchr(r->name, '/')) abort();
        if (r->argc < 8 || !r->argv || r->argv[r->argc] || strcmp(r->argv[r->argc - 1], "2")) abort();
    }
    qs_grid_free(&p);
}

static void one(const uint8_t *data, size_t size, const char *override)
{
    qs_experiment e;
    char err[2048];
    err[0] = '\0';
    if (qs_ini_parse(NAME, (const char *)data, size, override, 0, &e, err, sizeof err)) {
        check_err(err, NAME ":");
        check_empty(&e);
        return;
    }
    if (e.nbase < 1 || !qs_ini_base(&e, "data") || qs_ini_base(&e, "data")[0] != '/') abort();
    if (e.threads_per_run < 0 || e.threads_per_run > 1024) abort();
    if (!isnan(e.target_loss) && !(e.target_loss > 0)) abort();
    /* contrast: a grid axis of two values or more, neither seed nor recipe */
    if (e.contrast[0]) {
        const int ax = qs_ini_axis(&e, e.contrast);
        if (ax < 0 || e.axes[ax].nvalues < 2 || !strcmp(e.contrast, "seed") || !strcmp(e.contrast, "recipe")) abort();
    }
    size_t ident = 0;
    char *canon = qs_ini_canonical(&e, &ident);
    if (!canon || ident > strlen(canon)) abort();
    /* the canonical file must read back to itself */
    qs_experiment e2;
    if (qs_ini_parse(NAME, canon, strlen(canon), NULL, 0, &e2, err, sizeof err)) {
        fprintf(stderr, "canonical form rejected: %s\n---\n%s---\n", err, canon);
        abort();
    }
    size_t ident2 = 0;
    char *canon2 = qs_ini_canonical(&e2, &ident2);
    if (!canon2 || strcmp(canon, canon2) || ident != ident2) {
        fprintf(stderr, "canonical form changed:\n%s---\n%s---\n", canon, canon2 ? canon2 : "(null)");
        abort();
    }
    free(canon2);
    qs_ini_free(&e2);
    free(canon);
    check_grid(&e);
    qs_ini_free(&e);
    check_empty(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size, NULL);
    one(data, size, "/tmp/qp-fuzz/override.txt");
    return 0;
}
