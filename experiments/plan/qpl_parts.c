/* qpl_parts.c — parts and their recipes (see qpl_parts.h). */
#include "qpl_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_recipe.h"

/* The plans of recipe spec at the model (malloc'd), or NULL with err. */
static qp_linear_plan *plans(const char *spec, int L, unsigned gemms, char *err, size_t errlen)
{
    qp_recipe r;
    qp_linear_plan *pl = malloc((size_t)L * QP_BLOCK_GEMMS * sizeof *pl);
    if (!pl) return snprintf(err, errlen, "out of memory"), NULL;
    if (qp_recipe_parse(spec, &r, err, errlen) || qp_recipe_resolve(&r, L, gemms, pl, err, errlen)) {
        free(pl);
        return NULL;
    }
    return pl;
}

int qpl_parts_make(const qpl_cfg *cfg, int layers, unsigned gemms, qpl_parts *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->layers = layers, out->gemms = gemms, out->gran = cfg->gran;
    const int per_block = cfg->gran == QPL_GRAN_BLOCK ? 1 : cfg->gran == QPL_GRAN_GEMM ? QP_BLOCK_GEMMS : QP_BLOCK_GEMMS * QP_PASS_COUNT;
    out->p = calloc((size_t)layers * per_block, sizeof *out->p);
    char msg[768];
    qp_linear_plan *base = out->p ? plans(cfg->base, layers, gemms, msg, sizeof msg) : NULL;
    if (!base) {
        snprintf(err, errlen, "base recipe '%s' at %d blocks: %s", cfg->base, layers, out->p ? msg : "out of memory");
        qpl_parts_free(out);
        return -1;
    }
    const size_t bytes = (size_t)layers * QP_BLOCK_GEMMS * sizeof *base;
    for (int b = 0; b < layers; b++)
        for (int g = cfg->gran == QPL_GRAN_BLOCK ? -1 : 0; g < (cfg->gran == QPL_GRAN_BLOCK ? 0 : QP_BLOCK_GEMMS); g++) {
            if (g >= 0 && !(gemms & (1u << g))) continue;
            for (int p = cfg->gran == QPL_GRAN_PASS ? 0 : -1; p < (cfg->gran == QPL_GRAN_PASS ? QP_PASS_COUNT : 0); p++) {
                qpl_part *q = &out->p[out->n];
                q->block = b, q->gemm = g, q->pass = p;
                int w = snprintf(q->name, sizeof q->name, "L%d", b);
                if (g >= 0) w += snprintf(q->name + w, sizeof q->name - (size_t)w, ".%s", qp_gemm_name((qp_gemm_id)g));
                if (p >= 0) snprintf(q->name + w, sizeof q->name - (size_t)w, ".%s", qp_pass_name((qp_pass)p));
                char spec[QP_RECIPE_SPEC_MAX];
                if ((size_t)snprintf(spec, sizeof spec, "%s,%s=%s", cfg->base, q->name, cfg->fallback) >= sizeof spec) {
                    snprintf(err, errlen, "base recipe '%s' with ',%s=%s' is longer than %d bytes", cfg->base, q->name,
                             cfg->fallback, QP_RECIPE_SPEC_MAX - 1);
                    free(base), qpl_parts_free(out);
                    return -1;
                }
                qp_linear_plan *one = plans(spec, layers, gemms, msg, sizeof msg);
                if (!one) {
                    snprintf(err, errlen, "part %s in the fallback: recipe '%s': %s", q->name, spec, msg);
                    free(base), qpl_parts_free(out);
                    return -1;
                }
                if (memcmp(one, base, bytes)) out->n++;
                else out->kept++;
                free(one);
            }
        }
    free(base);
    return 0;
}

void qpl_parts_free(qpl_parts *ps)
{
    free(ps->p);
    memset(ps, 0, sizeof *ps);
}

/* what follows the block in a rule: "", ".qkv+fc" or ".qkv.fprop+wgrad" */
typedef struct {
    int block;
    char sub[160];
} entry;

int qpl_parts_recipe(const qpl_cfg *cfg, const qpl_parts *ps, const char *in, char *buf, size_t len)
{
    entry *en = calloc((size_t)(ps->n ? ps->n : 1), sizeof *en);
    char *done = calloc((size_t)(ps->n ? ps->n : 1), 1);
    if (!en || !done) return free(en), free(done), -1;
    int ne = 0;
    /* per block (granularity block.gemm: its GEMMs; block.gemm.pass: per GEMM, its passes) */
    for (int i = 0; i < ps->n; i++) {
        if (!in[i] || done[i]) continue;
        const qpl_part *a = &ps->p[i];
        entry *e = &en[ne++];
        e->block = a->block;
        size_t w = 0;
        if (ps->gran == QPL_GRAN_PASS)
            w += (size_t)snprintf(e->sub + w, sizeof e->sub - w, ".%s.", qp_gemm_name((qp_gemm_id)a->gemm));
        else if (ps->gran == QPL_GRAN_GEMM) w += (size_t)snprintf(e->sub + w, sizeof e->sub - w, ".");
        int first = 1;
        for (int j = i; j < ps->n; j++) {
            const qpl_part *b = &ps->p[j];
            if (!in[j] || done[j] || b->block != a->block || (ps->gran == QPL_GRAN_PASS && b->gemm != a->gemm)) continue;
            done[j] = 1;
            if (ps->gran == QPL_GRAN_BLOCK) continue;
            const char *nm = ps->gran == QPL_GRAN_PASS ? qp_pass_name((qp_pass)b->pass) : qp_gemm_name((qp_gemm_id)b->gemm);
            w += (size_t)snprintf(e->sub + w, sizeof e->sub - w, "%s%s", first ? "" : "+", nm);
            first = 0;
        }
    }
    /* rules: entries with the same tail, their blocks joined (at most
     * QP_RECIPE_MAX_ITEMS per rule) */
    size_t w = (size_t)snprintf(buf, len, "%s", cfg->base);
    int rules = 0, rc = w >= len ? -1 : 0;
    memset(done, 0, (size_t)(ps->n ? ps->n : 1));
    for (int i = 0; i < ne && !rc; i++) {
        if (done[i]) continue;
        int items = 0;
        w += (size_t)snprintf(buf + w, w < len ? len - w : 0, ",");
        for (int j = i; j < ne; j++) {
            if (done[j] || strcmp(en[j].sub, en[i].sub) || items == QP_RECIPE_MAX_ITEMS) continue;
            done[j] = 1;
            w += (size_t)snprintf(buf + w, w < len ? len - w : 0, "%sL%d", items ? "+" : "", en[j].block);
            items++;
        }
        w += (size_t)snprintf(buf + w, w < len ? len - w : 0, "%s=%s", en[i].sub, cfg->fallback);
        rules++;
        if (w >= len) rc = -1;
    }
    free(en), free(done);
    if (!rc) {
        qp_recipe r;
        char msg[512];
        if (rules > QP_RECIPE_MAX_RULES || qp_recipe_parse(buf, &r, msg, sizeof msg)) rc = -1;
    }
    return rc;
}
