/* qp_style.c — colours and labels (see qp_style.h). */
#include "qp_style.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The published recipes first; bf16 (the usual baseline) gets blue, the FP8
 * family the warm colours, the FP4 family green/purple/black. Yellow is kept
 * out of the table: a thin yellow line is hard to see on white. */
static const struct {
    const char *recipe, *color;
} TABLE[] = {
    {"fp32", "#999999"},   {"bf16", "#0072B2"},        {"fp8", "#E69F00"},  {"fp8-current", "#D55E00"},
    {"mxfp8", "#56B4E9"},  {"nvfp4", "#009E73"},       {"nvfp4-naive", "#CC79A7"}, {"mxfp4", "#000000"},
};

static const char *const HASHED[] = {"#E69F00", "#56B4E9", "#009E73", "#F0E442",
                                     "#0072B2", "#D55E00", "#CC79A7", "#000000"};

const char *qp_recipe_color(const char *recipe)
{
    for (size_t i = 0; i < sizeof TABLE / sizeof *TABLE; i++)
        if (!strcmp(TABLE[i].recipe, recipe)) return TABLE[i].color;
    uint32_t h = 2166136261u; /* FNV-1a: any stable hash will do */
    for (const unsigned char *p = (const unsigned char *)recipe; *p; p++) h = (h ^ *p) * 16777619u;
    return HASHED[h % (sizeof HASHED / sizeof *HASHED)];
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void qp_run_label(const qp_run *const *runs, int n, int i, char *out, size_t len)
{
    const qp_run *r = runs[i];
    int same_recipe = 0, same_seed = 0;
    for (int j = 0; j < n; j++) {
        if (j == i || strcmp(runs[j]->recipe, r->recipe)) continue;
        same_recipe = 1;
        if (runs[j]->seed == r->seed) same_seed = 1;
    }
    if (!same_recipe)
        snprintf(out, len, "%s", r->recipe);
    else if (!same_seed && r->seed >= 0)
        snprintf(out, len, "%s s%lld", r->recipe, r->seed);
    else {
        const char *b = base_name(r->path);
        size_t m = strlen(b);
        if (m > 3 && !strcmp(b + m - 3, ".h5")) m -= 3;
        snprintf(out, len, "%s %.*s", r->recipe, (int)m, b);
    }
    for (char *p = out; *p; p++)
        if (*p == '\'' || *p == '"') *p = '_';
}
