/* qp_recipe.c — recipe names to per-operand plans (see qp_recipe.h). */
#include "qp_recipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *pass_names[QP_PASS_COUNT] = {"fprop", "dgrad", "wgrad"};
static const char *operand_names[QP_OPND_COUNT] = {"x", "w", "dy"};

const char *qp_pass_name(qp_pass p) { return (unsigned)p < QP_PASS_COUNT ? pass_names[p] : "?"; }
const char *qp_operand_name(qp_operand o) { return (unsigned)o < QP_OPND_COUNT ? operand_names[o] : "?"; }

typedef struct {
    const char *name;
    qp_fmt x, w, dy;
    bool sr_dy, rht;
    qp_scaling_mode scaling;
    int bf16_last_default; /* -2: about 15% of the blocks, at least 1 */
} base_recipe;

static const base_recipe bases[] = {
    {"fp32", QP_FMT_FP32, QP_FMT_FP32, QP_FMT_FP32, false, false, QP_SCALING_CURRENT, 0},
    {"bf16", QP_FMT_BF16, QP_FMT_BF16, QP_FMT_BF16, false, false, QP_SCALING_CURRENT, 0},
    {"fp8", QP_FMT_FP8_E4M3, QP_FMT_FP8_E4M3, QP_FMT_FP8_E5M2, false, false, QP_SCALING_DELAYED, 0},
    {"fp8-current", QP_FMT_FP8_E4M3, QP_FMT_FP8_E4M3, QP_FMT_FP8_E5M2, false, false, QP_SCALING_CURRENT, 0},
    {"mxfp8", QP_FMT_MXFP8, QP_FMT_MXFP8, QP_FMT_MXFP8, false, false, QP_SCALING_CURRENT, 0},
    {"nvfp4", QP_FMT_NVFP4, QP_FMT_NVFP4_2D, QP_FMT_NVFP4, true, true, QP_SCALING_CURRENT, -2},
    {"nvfp4-naive", QP_FMT_NVFP4, QP_FMT_NVFP4, QP_FMT_NVFP4, false, false, QP_SCALING_CURRENT, 0},
    {"mxfp4", QP_FMT_MXFP4, QP_FMT_MXFP4, QP_FMT_MXFP4, false, false, QP_SCALING_CURRENT, 0},
};
#define NBASES ((int)(sizeof bases / sizeof bases[0]))

const char *qp_recipe_names(void)
{
    return "fp32, bf16, fp8, fp8-current, mxfp8, nvfp4, nvfp4-naive, mxfp4; modifiers: nvfp4-rht, nvfp4-sr, "
           "nvfp4-2d, bf16-last=N, bf16-first=N";
}

static int parse_count(const char *s, int *out)
{
    char *end;
    const long v = strtol(s, &end, 10);
    if (!*s || *end || v < 0 || v > 100000) return -1;
    *out = (int)v;
    return 0;
}

int qp_recipe_parse(const char *spec, qp_recipe *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->bf16_first = r->bf16_last = -1;
    r->history_len = 1024;
    r->algo = QP_AMAX_MAX;
    if (!spec || !*spec || strlen(spec) >= sizeof r->spec) {
        snprintf(err, errlen, "recipe: empty or too long; valid: %s", qp_recipe_names());
        return -1;
    }
    snprintf(r->spec, sizeof r->spec, "%s", spec);
    char buf[160];
    snprintf(buf, sizeof buf, "%s", spec);
    const base_recipe *base = NULL;
    bool drop_rht = false, drop_sr = false, drop_2d = false;
    int first_token = 1;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), first_token = 0) {
        const base_recipe *b = NULL;
        for (int i = 0; i < NBASES; i++)
            if (strcmp(tok, bases[i].name) == 0) b = &bases[i];
        if (b) {
            if (!first_token || base) {
                snprintf(err, errlen, "recipe '%s': '%s' must come first and only once", spec, tok);
                return -1;
            }
            base = b;
            continue;
        }
        if (!strcmp(tok, "nvfp4-rht")) drop_rht = true;
        else if (!strcmp(tok, "nvfp4-sr")) drop_sr = true;
        else if (!strcmp(tok, "nvfp4-2d")) drop_2d = true;
        else if (!strncmp(tok, "bf16-last=", 10)) {
            if (parse_count(tok + 10, &r->bf16_last)) {
                snprintf(err, errlen, "recipe '%s': bf16-last takes a count >= 0, not '%s'", spec, tok + 10);
                return -1;
            }
        } else if (!strncmp(tok, "bf16-first=", 11)) {
            if (parse_count(tok + 11, &r->bf16_first)) {
                snprintf(err, errlen, "recipe '%s': bf16-first takes a count >= 0, not '%s'", spec, tok + 11);
                return -1;
            }
        } else {
            snprintf(err, errlen, "unknown recipe or modifier '%s'; valid: %s", tok, qp_recipe_names());
            return -1;
        }
    }
    if (!base) base = &bases[5]; /* modifiers alone: nvfp4 with those changes */
    if ((drop_rht || drop_sr || drop_2d) && strcmp(base->name, "nvfp4") != 0) {
        snprintf(err, errlen, "recipe '%s': nvfp4-rht/-sr/-2d modify the nvfp4 recipe only", spec);
        return -1;
    }
    snprintf(r->base, sizeof r->base, "%s", base->name);
    qp_linear_plan *p = &r->plan;
    p->fmt[QP_OPND_X] = base->x;
    p->fmt[QP_OPND_W] = drop_2d ? QP_FMT_NVFP4 : base->w;
    p->fmt[QP_OPND_DY] = base->dy;
    p->sr[QP_OPND_DY] = base->sr_dy && !drop_sr;
    p->rht_wgrad = base->rht && !drop_rht;
    p->rht_n = p->rht_wgrad ? QK_RHT : 0;
    p->scaling = base->scaling;
    if (r->bf16_last < 0 && base->bf16_last_default == 0) r->bf16_last = 0;
    if (r->bf16_first < 0) r->bf16_first = 0;
    return 0;
}

void qp_recipe_bf16_blocks(const qp_recipe *r, int n_layers, int *first, int *last)
{
    int l = r->bf16_last;
    if (l < 0) { /* the NVFP4 recipe's default: about 15% of the blocks, at least one */
        l = (int)(0.15 * n_layers + 0.5);
        if (l < 1) l = 1;
    }
    *first = r->bf16_first < n_layers ? r->bf16_first : n_layers;
    *last = l < n_layers ? l : n_layers;
}

qp_linear_plan qp_recipe_plan(const qp_recipe *r, int layer, int n_layers)
{
    int first, last;
    qp_recipe_bf16_blocks(r, n_layers, &first, &last);
    qp_linear_plan p = r->plan;
    const int is_quantized = p.fmt[QP_OPND_X] != QP_FMT_FP32 && p.fmt[QP_OPND_X] != QP_FMT_BF16;
    if (is_quantized && (layer < first || layer >= n_layers - last)) {
        memset(&p, 0, sizeof p);
        p.fmt[QP_OPND_X] = p.fmt[QP_OPND_W] = p.fmt[QP_OPND_DY] = QP_FMT_BF16;
        p.scaling = QP_SCALING_CURRENT;
    }
    return p;
}

void qp_recipe_describe(const qp_recipe *r, int n_layers, char *buf, size_t len)
{
    int first, last;
    qp_recipe_bf16_blocks(r, n_layers, &first, &last);
    const qp_linear_plan *p = &r->plan;
    const int tensor_scaled = qp_formats[p->fmt[QP_OPND_X]].tensor_scale ||
                              qp_formats[p->fmt[QP_OPND_W]].tensor_scale || qp_formats[p->fmt[QP_OPND_DY]].tensor_scale;
    snprintf(buf, len, "%s: x %s, w %s, dy %s%s%s%s, BF16 blocks first %d last %d", r->spec,
             qp_formats[p->fmt[QP_OPND_X]].name, qp_formats[p->fmt[QP_OPND_W]].name,
             qp_formats[p->fmt[QP_OPND_DY]].name, p->sr[QP_OPND_DY] ? " (stochastic rounding)" : "",
             p->rht_wgrad ? ", RHT on wgrad" : "",
             !tensor_scaled ? "" : p->scaling == QP_SCALING_DELAYED ? ", delayed scaling" : ", current scaling", first,
             last);
}
