/* qpl_parts.h — the parts of a model a plan may send to the fallback, and
 * the recipe that sends a set of them there.
 *
 * Owns: the part list at a granularity (qpl_ini.h) — blocks "L3", block x
 * GEMM "L3.qkv", block x GEMM x pass "L3.qkv.wgrad", the model's own GEMMs
 * (qp_model_gemm_mask) in qp_gemm_id order, blocks first — without the
 * parts the base recipe already keeps in the fallback's format (sending
 * them changes no plan: nvfp4's default BF16 last block); and the recipe
 * text "BASE,SEL=FALLBACK,..." in the recipe grammar (docs/recipes.md),
 * compact: the parts of a block share a rule ("L0.qkv+fc=bf16"), blocks
 * with the same GEMMs (passes) share one ("L0+L2.qkv=bf16"). */
#ifndef QPL_PARTS_H
#define QPL_PARTS_H

#include <stddef.h>

#include "qpl_ini.h"

typedef struct {
    int block, gemm, pass;   /* gemm: a qp_gemm_id or -1 (block granularity); pass: qp_pass or -1 */
    char name[48];           /* its selector: "L3", "L3.qkv", "L3.qkv.wgrad" */
} qpl_part;

typedef struct qpl_parts {
    qpl_part *p;
    int n, layers, kept;     /* kept: parts left out as already in the fallback's format */
    unsigned gemms;
    qpl_gran gran;
} qpl_parts;

/* The parts of a model of `layers` blocks with GEMMs `gemms`. Returns 0, or
 * -1 with a message (a part's recipe the trainer refuses). */
int qpl_parts_make(const qpl_cfg *cfg, int layers, unsigned gemms, qpl_parts *out, char *err, size_t errlen);
void qpl_parts_free(qpl_parts *ps);

/* The recipe with the parts in[i] != 0 in the fallback. Returns 0, or -1
 * when it does not fit in len bytes or the recipe grammar's rule count. */
int qpl_parts_recipe(const qpl_cfg *cfg, const qpl_parts *ps, const char *in, char *buf, size_t len);

#endif
