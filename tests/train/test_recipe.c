/* test_recipe.c — the recipe language (train/precision/qp_recipe.h): the stored
 * expansion of every preset and modifier, the presets' documented
 * expansions (docs/recipes.md, argv[1]), the examples of the docs,
 * ownership of scaling states, round trips through the canonical expansion,
 * one-line errors naming the offending token, and the GEMMs of each
 * architecture (a GPT's fc, fcproj; a Llama's gate, up, down, and its
 * smooth-swiglu modifier).
 *
 * The stored tables are exactly the plans of the fixed recipes they replace:
 * a run with each preset and modifier gave byte-identical losses, quant/error
 * rows and recalibration events with the build before the language (see the
 * commit adding this test); test_gemm_recipes checks the same plans against
 * qp_recipe.h's table independently. A change in any expansion fails here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_model.h"
#include "qp_recipe.h"
#include "qp_test.h"

#define MAXL 64
static qp_recipe R, R2;
static qp_linear_plan P[MAXL * QP_BLOCK_GEMMS], P2[MAXL * QP_BLOCK_GEMMS];
static char text[1 << 16];
static unsigned GPT, LLAMA; /* the architectures' block GEMMs (qp_model_gemm_mask) */

static int resolve_for(const char *spec, int L, unsigned gemms, qp_recipe *r, qp_linear_plan *p, char *err,
                       size_t errlen)
{
    return qp_recipe_parse(spec, r, err, errlen) || qp_recipe_resolve(r, L, gemms, p, err, errlen) ? -1 : 0;
}

/* for a GPT's blocks */
static int resolve(const char *spec, int L, qp_recipe *r, qp_linear_plan *p, char *err, size_t errlen)
{
    return resolve_for(spec, L, GPT, r, p, err, errlen);
}

static const qp_use_plan *use(int layer, qp_gemm_id g, qp_pass p, qp_operand o)
{
    return &P[layer * QP_BLOCK_GEMMS + g].use[p][o];
}

/* ---- the stored expansions ------------------------------------------------------ */

typedef struct {
    const char *spec;
    int layers;
    const char *table;
} expansion;

/* a GPT's */
static const expansion golden[] = {
    {"fp32", 1,
            "L0.fprop.x=fp32\n"
            "L0.fprop.w=fp32\n"
            "L0.dgrad.dy=fp32\n"
            "L0.dgrad.w=fp32\n"
            "L0.wgrad.dy=fp32\n"
            "L0.wgrad.x=fp32\n"},
    {"fp32", 4,
            "L0-3.fprop.x=fp32\n"
            "L0-3.fprop.w=fp32\n"
            "L0-3.dgrad.dy=fp32\n"
            "L0-3.dgrad.w=fp32\n"
            "L0-3.wgrad.dy=fp32\n"
            "L0-3.wgrad.x=fp32\n"},
    {"bf16", 1,
            "L0.fprop.x=bf16\n"
            "L0.fprop.w=bf16\n"
            "L0.dgrad.dy=bf16\n"
            "L0.dgrad.w=bf16\n"
            "L0.wgrad.dy=bf16\n"
            "L0.wgrad.x=bf16\n"},
    {"bf16", 4,
            "L0-3.fprop.x=bf16\n"
            "L0-3.fprop.w=bf16\n"
            "L0-3.dgrad.dy=bf16\n"
            "L0-3.dgrad.w=bf16\n"
            "L0-3.wgrad.dy=bf16\n"
            "L0-3.wgrad.x=bf16\n"},
    {"fp8", 1,
            "L0.fprop.x=fp8-e4m3:delayed:hist=1024:amax=max\n"
            "L0.fprop.w=fp8-e4m3:delayed:hist=1024:amax=max\n"
            "L0.dgrad.dy=fp8-e5m2:delayed:hist=1024:amax=max\n"
            "L0.dgrad.w=fp8-e4m3:delayed:hist=1024:amax=max\n"
            "L0.wgrad.dy=fp8-e5m2:delayed:hist=1024:amax=max\n"
            "L0.wgrad.x=fp8-e4m3:delayed:hist=1024:amax=max\n"},
    {"fp8", 4,
            "L0-3.fprop.x=fp8-e4m3:delayed:hist=1024:amax=max\n"
            "L0-3.fprop.w=fp8-e4m3:delayed:hist=1024:amax=max\n"
            "L0-3.dgrad.dy=fp8-e5m2:delayed:hist=1024:amax=max\n"
            "L0-3.dgrad.w=fp8-e4m3:delayed:hist=1024:amax=max\n"
            "L0-3.wgrad.dy=fp8-e5m2:delayed:hist=1024:amax=max\n"
            "L0-3.wgrad.x=fp8-e4m3:delayed:hist=1024:amax=max\n"},
    {"fp8-current", 1,
            "L0.fprop.x=fp8-e4m3:current\n"
            "L0.fprop.w=fp8-e4m3:current\n"
            "L0.dgrad.dy=fp8-e5m2:current\n"
            "L0.dgrad.w=fp8-e4m3:current\n"
            "L0.wgrad.dy=fp8-e5m2:current\n"
            "L0.wgrad.x=fp8-e4m3:current\n"},
    {"fp8-current", 4,
            "L0-3.fprop.x=fp8-e4m3:current\n"
            "L0-3.fprop.w=fp8-e4m3:current\n"
            "L0-3.dgrad.dy=fp8-e5m2:current\n"
            "L0-3.dgrad.w=fp8-e4m3:current\n"
            "L0-3.wgrad.dy=fp8-e5m2:current\n"
            "L0-3.wgrad.x=fp8-e4m3:current\n"},
    {"mxfp8", 1,
            "L0.fprop.x=mxfp8\n"
            "L0.fprop.w=mxfp8\n"
            "L0.dgrad.dy=mxfp8\n"
            "L0.dgrad.w=mxfp8\n"
            "L0.wgrad.dy=mxfp8\n"
            "L0.wgrad.x=mxfp8\n"},
    {"mxfp8", 4,
            "L0-3.fprop.x=mxfp8\n"
            "L0-3.fprop.w=mxfp8\n"
            "L0-3.dgrad.dy=mxfp8\n"
            "L0-3.dgrad.w=mxfp8\n"
            "L0-3.wgrad.dy=mxfp8\n"
            "L0-3.wgrad.x=mxfp8\n"},
    {"nvfp4", 1,
            "L0.fprop.x=bf16\n"
            "L0.fprop.w=bf16\n"
            "L0.dgrad.dy=bf16\n"
            "L0.dgrad.w=bf16\n"
            "L0.wgrad.dy=bf16\n"
            "L0.wgrad.x=bf16\n"},
    {"nvfp4", 4,
            "L0-2.fprop.x=nvfp4:current\n"
            "L0-2.fprop.w=nvfp4-2d:current\n"
            "L0-2.dgrad.dy=nvfp4:current:sr\n"
            "L0-2.dgrad.w=nvfp4-2d:current\n"
            "L0-2.wgrad.dy=nvfp4:current:sr:rht=16\n"
            "L0-2.wgrad.x=nvfp4:current:rht=16\n"
            "L3.fprop.x=bf16\n"
            "L3.fprop.w=bf16\n"
            "L3.dgrad.dy=bf16\n"
            "L3.dgrad.w=bf16\n"
            "L3.wgrad.dy=bf16\n"
            "L3.wgrad.x=bf16\n"},
    {"nvfp4-naive", 1,
            "L0.fprop.x=nvfp4:current\n"
            "L0.fprop.w=nvfp4:current\n"
            "L0.dgrad.dy=nvfp4:current\n"
            "L0.dgrad.w=nvfp4:current\n"
            "L0.wgrad.dy=nvfp4:current\n"
            "L0.wgrad.x=nvfp4:current\n"},
    {"nvfp4-naive", 4,
            "L0-3.fprop.x=nvfp4:current\n"
            "L0-3.fprop.w=nvfp4:current\n"
            "L0-3.dgrad.dy=nvfp4:current\n"
            "L0-3.dgrad.w=nvfp4:current\n"
            "L0-3.wgrad.dy=nvfp4:current\n"
            "L0-3.wgrad.x=nvfp4:current\n"},
    {"mxfp4", 1,
            "L0.fprop.x=mxfp4\n"
            "L0.fprop.w=mxfp4\n"
            "L0.dgrad.dy=mxfp4\n"
            "L0.dgrad.w=mxfp4\n"
            "L0.wgrad.dy=mxfp4\n"
            "L0.wgrad.x=mxfp4\n"},
    {"mxfp4", 4,
            "L0-3.fprop.x=mxfp4\n"
            "L0-3.fprop.w=mxfp4\n"
            "L0-3.dgrad.dy=mxfp4\n"
            "L0-3.dgrad.w=mxfp4\n"
            "L0-3.wgrad.dy=mxfp4\n"
            "L0-3.wgrad.x=mxfp4\n"},
    {"nvfp4,nvfp4-rht", 1,
            "L0.fprop.x=bf16\n"
            "L0.fprop.w=bf16\n"
            "L0.dgrad.dy=bf16\n"
            "L0.dgrad.w=bf16\n"
            "L0.wgrad.dy=bf16\n"
            "L0.wgrad.x=bf16\n"},
    {"nvfp4,nvfp4-rht", 4,
            "L0-2.fprop.x=nvfp4:current\n"
            "L0-2.fprop.w=nvfp4-2d:current\n"
            "L0-2.dgrad.dy=nvfp4:current:sr\n"
            "L0-2.dgrad.w=nvfp4-2d:current\n"
            "L0-2.wgrad.dy=nvfp4:current:sr\n"
            "L0-2.wgrad.x=nvfp4:current\n"
            "L3.fprop.x=bf16\n"
            "L3.fprop.w=bf16\n"
            "L3.dgrad.dy=bf16\n"
            "L3.dgrad.w=bf16\n"
            "L3.wgrad.dy=bf16\n"
            "L3.wgrad.x=bf16\n"},
    {"nvfp4-sr", 1,
            "L0.fprop.x=bf16\n"
            "L0.fprop.w=bf16\n"
            "L0.dgrad.dy=bf16\n"
            "L0.dgrad.w=bf16\n"
            "L0.wgrad.dy=bf16\n"
            "L0.wgrad.x=bf16\n"},
    {"nvfp4-sr", 4,
            "L0-2.fprop.x=nvfp4:current\n"
            "L0-2.fprop.w=nvfp4-2d:current\n"
            "L0-2.dgrad.dy=nvfp4:current\n"
            "L0-2.dgrad.w=nvfp4-2d:current\n"
            "L0-2.wgrad.dy=nvfp4:current:rht=16\n"
            "L0-2.wgrad.x=nvfp4:current:rht=16\n"
            "L3.fprop.x=bf16\n"
            "L3.fprop.w=bf16\n"
            "L3.dgrad.dy=bf16\n"
            "L3.dgrad.w=bf16\n"
            "L3.wgrad.dy=bf16\n"
            "L3.wgrad.x=bf16\n"},
    {"nvfp4-2d", 1,
            "L0.fprop.x=bf16\n"
            "L0.fprop.w=bf16\n"
            "L0.dgrad.dy=bf16\n"
            "L0.dgrad.w=bf16\n"
            "L0.wgrad.dy=bf16\n"
            "L0.wgrad.x=bf16\n"},
    {"nvfp4-2d", 4,
            "L0-2.fprop.x=nvfp4:current\n"
            "L0-2.fprop.w=nvfp4:current\n"
            "L0-2.dgrad.dy=nvfp4:current:sr\n"
            "L0-2.dgrad.w=nvfp4:current\n"
            "L0-2.wgrad.dy=nvfp4:current:sr:rht=16\n"
            "L0-2.wgrad.x=nvfp4:current:rht=16\n"
            "L3.fprop.x=bf16\n"
            "L3.fprop.w=bf16\n"
            "L3.dgrad.dy=bf16\n"
            "L3.dgrad.w=bf16\n"
            "L3.wgrad.dy=bf16\n"
            "L3.wgrad.x=bf16\n"},
    {"nvfp4,bf16-last=0,bf16-first=1", 1,
            "L0.fprop.x=bf16\n"
            "L0.fprop.w=bf16\n"
            "L0.dgrad.dy=bf16\n"
            "L0.dgrad.w=bf16\n"
            "L0.wgrad.dy=bf16\n"
            "L0.wgrad.x=bf16\n"},
    {"nvfp4,bf16-last=0,bf16-first=1", 4,
            "L0.fprop.x=bf16\n"
            "L0.fprop.w=bf16\n"
            "L0.dgrad.dy=bf16\n"
            "L0.dgrad.w=bf16\n"
            "L0.wgrad.dy=bf16\n"
            "L0.wgrad.x=bf16\n"
            "L1-3.fprop.x=nvfp4:current\n"
            "L1-3.fprop.w=nvfp4-2d:current\n"
            "L1-3.dgrad.dy=nvfp4:current:sr\n"
            "L1-3.dgrad.w=nvfp4-2d:current\n"
            "L1-3.wgrad.dy=nvfp4:current:sr:rht=16\n"
            "L1-3.wgrad.x=nvfp4:current:rht=16\n"},
};

/* a Llama's: a uniform recipe names no GEMM; rules name its own */
static const expansion golden_llama[] = {
    {"fp8,smooth-swiglu", 2,
            "L0-1.fprop.x=fp8-e4m3:delayed:hist=1024:amax=max\n"
            "L0-1.fprop.w=fp8-e4m3:delayed:hist=1024:amax=max\n"
            "L0-1.dgrad.dy=fp8-e5m2:delayed:hist=1024:amax=max\n"
            "L0-1.dgrad.w=fp8-e4m3:delayed:hist=1024:amax=max\n"
            "L0-1.wgrad.dy=fp8-e5m2:delayed:hist=1024:amax=max\n"
            "L0-1.wgrad.x=fp8-e4m3:delayed:hist=1024:amax=max\n"
            "smooth-swiglu\n"},
    {"bf16,down.fprop=fp8-e4m3:current,gate+up.w=mxfp8", 2,
            "L0-1.qkv+attproj+gate+up.fprop.x=bf16\n"
            "L0-1.down.fprop.x=fp8-e4m3:current\n"
            "L0-1.qkv+attproj.fprop.w=bf16\n"
            "L0-1.gate+up.fprop.w=mxfp8\n"
            "L0-1.down.fprop.w=fp8-e4m3:current\n"
            "L0-1.dgrad.dy=bf16\n"
            "L0-1.qkv+attproj+down.dgrad.w=bf16\n"
            "L0-1.gate+up.dgrad.w=mxfp8\n"
            "L0-1.wgrad.dy=bf16\n"
            "L0-1.wgrad.x=bf16\n"},
};

static void test_golden(const expansion *g, size_t count, unsigned gemms)
{
    char err[512];
    for (size_t i = 0; i < count; i++) {
        const int ok = resolve_for(g[i].spec, g[i].layers, gemms, &R, P, err, sizeof err) == 0;
        CHECK(ok, "%s: %s", g[i].spec, err);
        if (!ok) continue;
        const int n = qp_recipe_explain(&R, P, g[i].layers, gemms, text, sizeof text);
        CHECK(n == (int)strlen(g[i].table) && !strcmp(text, g[i].table), "%s for %d blocks expands to\n%s-- stored:\n%s",
              g[i].spec, g[i].layers, text, g[i].table);
    }
}

/* ---- round trips: the expansion is the recipe spelled out ------------------------ */

static void round_trip(const char *spec, int L, unsigned gemms)
{
    char err[512];
    if (resolve_for(spec, L, gemms, &R, P, err, sizeof err)) {
        CHECK(0, "%s: %s", spec, err);
        return;
    }
    const int n = qp_recipe_explain(&R, P, L, gemms, text, sizeof text);
    CHECK(n > 0 && (size_t)n < sizeof text && text[n - 1] == '\n', "%s: expansion of %d bytes", spec, n);
    text[n - 1] = '\0';
    for (char *c = text; *c; c++)
        if (*c == '\n') *c = ',';
    const int ok = resolve_for(text, L, gemms, &R2, P2, err, sizeof err) == 0;
    CHECK(ok, "%s spelled out: %s", spec, err);
    CHECK(ok && !memcmp(P, P2, (size_t)L * QP_BLOCK_GEMMS * sizeof P[0]) && R.smooth_swiglu == R2.smooth_swiglu,
          "%s: its expansion resolves differently", spec);
    CHECK(!R2.base[0] && R2.bf16_first == 0 && R2.bf16_last == 0, "%s: the expansion names no preset", spec);
}

/* ---- the documented expansions of the presets ------------------------------------- */

/* Rows "| `NAME` | `EXPANSION` | ..." of docs/recipes.md's preset table:
 * EXPANSION (with the preset's bf16-last) must resolve to the preset's plans. */
static void test_docs(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot read %s", path);
    if (!f) return;
    char line[2048], err[512];
    int rows = 0;
    static const char *const names[] = {"fp32",         "bf16",           "fp8",          "fp8-current",
                                        "mxfp8",        "nvfp4",          "nvfp4-naive",  "mxfp4",
                                        "te-nvfp4",     "te-nvfp4-4o6",   "te-fp8-block", "te-mxfp8",
                                        "te-fp8-current", "te-fp8-delayed"};
    while (fgets(line, sizeof line, f)) {
        char name[64], exp[1024];
        if (sscanf(line, "| `%63[^`]` | `%1023[^`]` |", name, exp) != 2) continue;
        int preset = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) preset |= !strcmp(name, names[i]);
        if (!preset) continue;
        rows++;
        for (int L = 1; L <= 12; L += 11) {
            CHECK(resolve(name, L, &R, P, err, sizeof err) == 0, "%s: %s", name, err);
            int first, last;
            qp_recipe_bf16_blocks(&R, L, &first, &last);
            char spelled[1200];
            snprintf(spelled, sizeof spelled, "%s,bf16-last=%d", exp, last);
            CHECK(resolve(spelled, L, &R2, P2, err, sizeof err) == 0, "%s: %s", spelled, err);
            CHECK(!memcmp(P, P2, (size_t)L * QP_BLOCK_GEMMS * sizeof P[0]),
                  "docs/recipes.md: preset %s is not `%s` (%d blocks)", name, exp, L);
        }
    }
    fclose(f);
    CHECK(rows == 14, "docs/recipes.md documents %d of the 14 presets' expansions", rows);
}

/* ---- examples ----------------------------------------------------------------------- */

static int is(const qp_use_plan *u, qp_fmt f, int sr, int rht, qp_scaling_mode s)
{
    return u->fmt == f && u->sr == sr && u->rht == rht && u->scaling == s;
}

static void test_examples(void)
{
    char err[512];
    const int L = 12;
    /* NVFP4 in fprop only */
    CHECK(resolve("bf16,fprop=nvfp4", L, &R, P, err, sizeof err) == 0, "%s", err);
    for (int l = 0; l < L; l++)
        for (int g = 0; g < QP_BLOCK_GEMMS; g++)
            CHECK(!(GPT >> g & 1u) ? use(l, g, QP_PASS_FPROP, QP_OPND_X)->fmt == QP_FMT_FP32 :
                  is(use(l, g, QP_PASS_FPROP, QP_OPND_X), QP_FMT_NVFP4, 0, 0, QP_SCALING_CURRENT) &&
                      is(use(l, g, QP_PASS_FPROP, QP_OPND_W), QP_FMT_NVFP4, 0, 0, QP_SCALING_CURRENT) &&
                      use(l, g, QP_PASS_DGRAD, QP_OPND_DY)->fmt == QP_FMT_BF16 &&
                      use(l, g, QP_PASS_DGRAD, QP_OPND_W)->fmt == QP_FMT_BF16 &&
                      use(l, g, QP_PASS_WGRAD, QP_OPND_DY)->fmt == QP_FMT_BF16 &&
                      use(l, g, QP_PASS_WGRAD, QP_OPND_X)->fmt == QP_FMT_BF16,
                  "fprop only, block %d %s", l, qp_gemm_name(g));
    /* FP8 activations with NVFP4 weights: x, dy FP8 in every pass, w NVFP4 in both of its */
    CHECK(resolve("fp8-current,w=nvfp4", L, &R, P, err, sizeof err) == 0, "%s", err);
    CHECK(is(use(5, QP_GEMM_FC, QP_PASS_FPROP, QP_OPND_X), QP_FMT_FP8_E4M3, 0, 0, QP_SCALING_CURRENT) &&
              is(use(5, QP_GEMM_FC, QP_PASS_WGRAD, QP_OPND_X), QP_FMT_FP8_E4M3, 0, 0, QP_SCALING_CURRENT) &&
              is(use(5, QP_GEMM_FC, QP_PASS_FPROP, QP_OPND_W), QP_FMT_NVFP4, 0, 0, QP_SCALING_CURRENT) &&
              is(use(5, QP_GEMM_FC, QP_PASS_DGRAD, QP_OPND_W), QP_FMT_NVFP4, 0, 0, QP_SCALING_CURRENT) &&
              is(use(5, QP_GEMM_FC, QP_PASS_DGRAD, QP_OPND_DY), QP_FMT_FP8_E5M2, 0, 0, QP_SCALING_CURRENT),
          "FP8 activations, NVFP4 weights");
    /* Megatron: the first two and last eight blocks in BF16, both spellings */
    static qp_linear_plan A[MAXL * QP_BLOCK_GEMMS];
    CHECK(resolve("nvfp4,bf16-first=2,bf16-last=8", L, &R, P, err, sizeof err) == 0, "%s", err);
    memcpy(A, P, sizeof A);
    for (int l = 0; l < L; l++) {
        const int bf16 = l < 2 || l >= L - 8;
        CHECK(use(l, QP_GEMM_QKV, QP_PASS_FPROP, QP_OPND_X)->fmt == (bf16 ? QP_FMT_BF16 : QP_FMT_NVFP4) &&
                  use(l, QP_GEMM_QKV, QP_PASS_WGRAD, QP_OPND_X)->rht == (bf16 ? 0 : 16),
              "Megatron ends, block %d", l);
    }
    CHECK(resolve("nvfp4,first2+last8=bf16", L, &R, P, err, sizeof err) == 0 &&
              !memcmp(A, P, (size_t)L * QP_BLOCK_GEMMS * sizeof P[0]),
          "first2+last8=bf16 is bf16-first=2,bf16-last=8 on 12 blocks: %s", err);
    /* E4M3 gradients */
    CHECK(resolve("fp8,dy=fp8-e4m3:delayed", L, &R, P, err, sizeof err) == 0, "%s", err);
    CHECK(is(use(0, QP_GEMM_QKV, QP_PASS_DGRAD, QP_OPND_DY), QP_FMT_FP8_E4M3, 0, 0, QP_SCALING_DELAYED) &&
              is(use(0, QP_GEMM_QKV, QP_PASS_WGRAD, QP_OPND_DY), QP_FMT_FP8_E4M3, 0, 0, QP_SCALING_DELAYED) &&
              use(0, QP_GEMM_QKV, QP_PASS_WGRAD, QP_OPND_DY)->history_len == 1024,
          "E4M3 gradients");
    /* quantize only block 3 (NVIDIA's recipe there, BF16 elsewhere) */
    CHECK(resolve("nvfp4,bf16-last=0,~L3=bf16", L, &R, P, err, sizeof err) == 0, "%s", err);
    for (int l = 0; l < L; l++)
        CHECK(use(l, QP_GEMM_FCPROJ, QP_PASS_WGRAD, QP_OPND_DY)->fmt == (l == 3 ? QP_FMT_NVFP4 : QP_FMT_BF16) &&
                  use(l, QP_GEMM_FCPROJ, QP_PASS_WGRAD, QP_OPND_DY)->sr == (l == 3),
              "only block 3: block %d", l);
    /* passes: only wgrad, or any two */
    const struct {
        const char *spec;
        int quantized[QP_PASS_COUNT];
    } passes[] = {{"bf16,wgrad=nvfp4:rht=16", {0, 0, 1}}, {"nvfp4,bf16-last=0,wgrad=bf16", {1, 1, 0}},
                  {"nvfp4,bf16-last=0,dgrad=bf16", {1, 0, 1}}, {"nvfp4,bf16-last=0,fprop=bf16", {0, 1, 1}},
                  {"nvfp4,bf16-last=0,dgrad+wgrad=bf16", {1, 0, 0}}};
    for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
        CHECK(resolve(passes[i].spec, L, &R, P, err, sizeof err) == 0, "%s", err);
        for (int p = 0; p < QP_PASS_COUNT; p++)
            for (int s = 0; s < 2; s++) {
                const qp_fmt f = use(7, QP_GEMM_ATTPROJ, (qp_pass)p, qp_pass_operand((qp_pass)p, s))->fmt;
                CHECK((f != QP_FMT_BF16) == passes[i].quantized[p], "%s: %s side %d is %s", passes[i].spec,
                      qp_pass_name((qp_pass)p), s, qp_formats[f].name);
            }
    }
    /* one GEMM type */
    CHECK(resolve("nvfp4,bf16-last=0,fcproj=bf16", L, &R, P, err, sizeof err) == 0, "%s", err);
    CHECK(use(4, QP_GEMM_FCPROJ, QP_PASS_FPROP, QP_OPND_W)->fmt == QP_FMT_BF16 &&
              use(4, QP_GEMM_FC, QP_PASS_FPROP, QP_OPND_W)->fmt == QP_FMT_NVFP4_2D,
          "fcproj only in BF16");
    /* 1d / 2d through the format table's names; option changes keep the format */
    CHECK(resolve("mxfp4,w=nvfp4:2d,x:rn,dy=nvfp4,dy:sr", 2, &R, P, err, sizeof err) == 0, "%s", err);
    CHECK(use(1, QP_GEMM_FC, QP_PASS_DGRAD, QP_OPND_W)->fmt == QP_FMT_NVFP4_2D &&
              is(use(1, QP_GEMM_FC, QP_PASS_WGRAD, QP_OPND_DY), QP_FMT_NVFP4, 1, 0, QP_SCALING_CURRENT) &&
              use(1, QP_GEMM_FC, QP_PASS_WGRAD, QP_OPND_X)->fmt == QP_FMT_MXFP4,
          "2d and option-only rules");
    /* TE's MXFP8 is the mxfp8 preset; with round-up scales once the format exists */
    CHECK(resolve("mxfp8", 2, &R, P, err, sizeof err) == 0 &&
              use(0, QP_GEMM_QKV, QP_PASS_WGRAD, QP_OPND_DY)->fmt == QP_FMT_MXFP8, "TE's MXFP8");
    /* DeepSeek-V3's FP8 (the docs' example): 1x128 activations and gradients,
     * 128x128 weights, FP32 block scales; :2d names the 2-D row of fp8-block */
    const char *deepseek = "bf16,x+dy=fp8-block,w=fp8-block-2d";
    CHECK(resolve(deepseek, 2, &R, P, err, sizeof err) == 0, "%s", err);
    CHECK(use(1, QP_GEMM_FC, QP_PASS_DGRAD, QP_OPND_W)->fmt == QP_FMT_FP8_BLOCK_2D &&
              use(1, QP_GEMM_FC, QP_PASS_FPROP, QP_OPND_W)->fmt == QP_FMT_FP8_BLOCK_2D &&
              use(1, QP_GEMM_FC, QP_PASS_WGRAD, QP_OPND_DY)->fmt == QP_FMT_FP8_BLOCK &&
              use(0, QP_GEMM_QKV, QP_PASS_FPROP, QP_OPND_X)->fmt == QP_FMT_FP8_BLOCK &&
              resolve("x+dy=fp8-block,w=fp8-block:2d", 2, &R2, P2, err, sizeof err) == 0 &&
              !memcmp(P, P2, 2 * QP_BLOCK_GEMMS * sizeof P[0]),
          "DeepSeek-V3's FP8");
    /* the RHT sizes quant/ has, on any use */
    static const int sizes[] = {16, 32, 64, 128};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char spec[80];
        snprintf(spec, sizeof spec, "nvfp4,wgrad:rht=%d,bf16-last=0", sizes[i]);
        CHECK(resolve(spec, 2, &R, P, err, sizeof err) == 0, "%s: %s", spec, err);
        CHECK(is(use(1, QP_GEMM_FC, QP_PASS_WGRAD, QP_OPND_X), QP_FMT_NVFP4, 0, sizes[i], QP_SCALING_CURRENT) &&
                  is(use(1, QP_GEMM_FC, QP_PASS_WGRAD, QP_OPND_DY), QP_FMT_NVFP4, 1, sizes[i], QP_SCALING_CURRENT) &&
                  use(1, QP_GEMM_FC, QP_PASS_FPROP, QP_OPND_X)->rht == 0,
              "%s: wgrad's RHT of %d points", spec, sizes[i]);
    }
}

/* ---- one block in a recipe's plan (per-layer attribution, qsweep attribute = blocks) ---- */

/* "R,~Li=bf16" gives block i exactly R's plan (its BF16 ends included) and
 * every other block the bf16 preset's: for presets, a modifier without a
 * preset (nvfp4 implied first), rules, and the ends. */
static void test_one_block(void)
{
    static qp_linear_plan full[MAXL * QP_BLOCK_GEMMS], bf16[MAXL * QP_BLOCK_GEMMS];
    static const char *const recipes[] = {"nvfp4", "nvfp4-naive", "mxfp4", "fp8", "nvfp4-sr", "nvfp4-rht,nvfp4-2d",
                                          "nvfp4-naive,bf16-last=1", "nvfp4,dgrad+wgrad=bf16", "bf16,fprop=nvfp4",
                                          "nvfp4,bf16-first=1,bf16-last=2", "nvfp4,w:1d,fprop+wgrad=bf16"};
    char err[512], spec[256];
    const size_t G = QP_BLOCK_GEMMS * sizeof P[0];
    for (int L = 1; L <= 6; L += 5) {
        CHECK(resolve("bf16", L, &R, bf16, err, sizeof err) == 0, "bf16: %s", err);
        for (size_t k = 0; k < sizeof recipes / sizeof recipes[0]; k++) {
            CHECK(resolve(recipes[k], L, &R, full, err, sizeof err) == 0, "%s: %s", recipes[k], err);
            int quantized_blocks = 0;
            for (int i = 0; i < L; i++) {
                snprintf(spec, sizeof spec, "%s,~L%d=bf16", recipes[k], i);
                CHECK(resolve(spec, L, &R, P, err, sizeof err) == 0, "%s: %s", spec, err);
                for (int l = 0; l < L; l++)
                    CHECK(!memcmp(&P[l * QP_BLOCK_GEMMS], l == i ? &full[l * QP_BLOCK_GEMMS] : &bf16[l * QP_BLOCK_GEMMS],
                                  G),
                          "%s on %d blocks: block %d is not %s's", spec, L, l, l == i ? recipes[k] : "bf16");
                quantized_blocks += memcmp(P, bf16, (size_t)L * G) != 0;
            }
            /* the ends the recipe keeps in BF16 give no quantized block */
            int first, last;
            CHECK(resolve(recipes[k], L, &R, full, err, sizeof err) == 0, "%s", err);
            qp_recipe_bf16_blocks(&R, L, &first, &last);
            const int inner = L - first - last > 0 ? L - first - last : 0;
            CHECK(quantized_blocks == inner, "%s on %d blocks: %d blocks differ from bf16, want %d", recipes[k], L,
                  quantized_blocks, inner);
        }
    }
    /* a modifier without a preset is nvfp4 with it, then the clauses in order */
    CHECK(resolve("nvfp4-sr,fprop.x=bf16", 4, &R, P, err, sizeof err) == 0 &&
              resolve("nvfp4,nvfp4-sr,fprop.x=bf16", 4, &R2, P2, err, sizeof err) == 0 &&
              !memcmp(P, P2, 4 * G) && !strcmp(R.base, "nvfp4"),
          "nvfp4-sr,fprop.x=bf16 is nvfp4,nvfp4-sr,fprop.x=bf16: %s", err);
    CHECK(resolve("fprop.x=bf16,nvfp4-2d", 4, &R, P, err, sizeof err) == 0 &&
              resolve("nvfp4,fprop.x=bf16,w:1d", 4, &R2, P2, err, sizeof err) == 0 && !memcmp(P, P2, 4 * G),
          "fprop.x=bf16,nvfp4-2d is nvfp4,fprop.x=bf16,w:1d: %s", err);
    /* bf16-last with rules and no modifier keeps its meaning: FP32 start */
    CHECK(resolve("bf16-last=0,L1=bf16", 4, &R, P, err, sizeof err) == 0 &&
              use(0, QP_GEMM_QKV, QP_PASS_FPROP, QP_OPND_X)->fmt == QP_FMT_FP32 && !R.base[0],
          "bf16-last=0,L1=bf16 starts from FP32: %s", err);
}

/* ---- scaling-state ownership ---------------------------------------------------------- */

static void test_owners(void)
{
    char err[512];
    CHECK(resolve("fp8", 2, &R, P, err, sizeof err) == 0, "%s", err);
    CHECK(P[0].owner[QP_OPND_X] == QP_PASS_FPROP && P[0].owner[QP_OPND_W] == QP_PASS_FPROP &&
              P[0].owner[QP_OPND_DY] == QP_PASS_DGRAD,
          "a tensor's first use owns its state");
    CHECK(qp_recipe_has_delayed(P, 2) && qp_recipe_history_max(P, 2) == 1024, "fp8: delayed, history 1024");
    CHECK(resolve("bf16,wgrad=fp8-e4m3:delayed:hist=2048:amax=most-recent", 2, &R, P, err, sizeof err) == 0, "%s",
          err);
    CHECK(P[1 * QP_BLOCK_GEMMS + QP_GEMM_ATTPROJ].owner[QP_OPND_X] == QP_PASS_WGRAD && P[1 * QP_BLOCK_GEMMS + QP_GEMM_ATTPROJ].owner[QP_OPND_DY] == QP_PASS_WGRAD &&
              P[1 * QP_BLOCK_GEMMS + QP_GEMM_ATTPROJ].owner[QP_OPND_W] == QP_PASS_FPROP,
          "the quantized later use owns the state when the first one is BF16");
    CHECK(qp_recipe_history_max(P, 2) == 2048 && use(1, QP_GEMM_QKV, QP_PASS_WGRAD, QP_OPND_X)->algo ==
                                                      QP_AMAX_MOST_RECENT,
          "history and algo of the owning use");
    CHECK(resolve("fp8,wgrad.x=fp8-e4m3:current", 2, &R, P, err, sizeof err) == 0, "%s", err);
    CHECK(P[0].owner[QP_OPND_X] == QP_PASS_FPROP && use(0, QP_GEMM_QKV, QP_PASS_WGRAD, QP_OPND_X)->scaling ==
                                                        QP_SCALING_CURRENT,
          "a current use beside a delayed owner");
    CHECK(resolve("mxfp8", 2, &R, P, err, sizeof err) == 0 && !qp_recipe_has_delayed(P, 2), "mxfp8 is not delayed");
    /* the Hadamard check of a model's contractions */
    CHECK(resolve("nvfp4,bf16-last=0", 2, &R, P, err, sizeof err) == 0, "%s", err);
    int64_t K[QP_PASS_COUNT][QP_BLOCK_GEMMS];
    for (int g = 0; g < QP_BLOCK_GEMMS; g++) K[QP_PASS_FPROP][g] = 24, K[QP_PASS_DGRAD][g] = 40, K[QP_PASS_WGRAD][g] = 64;
    CHECK(qp_recipe_check_rht(&R, P, 2, K, err, sizeof err) == 0, "wgrad over 64 tokens: %s", err);
    K[QP_PASS_WGRAD][2] = 72;
    CHECK(qp_recipe_check_rht(&R, P, 2, K, err, sizeof err) != 0 && strstr(err, "--batch x --seq") &&
              strstr(err, "block 0 fc") && !strchr(err, '\n'),
          "wgrad over 72 tokens: %s", err);
    CHECK(resolve("bf16,fprop=nvfp4:rht=16", 2, &R, P, err, sizeof err) == 0, "%s", err);
    CHECK(qp_recipe_check_rht(&R, P, 2, K, err, sizeof err) != 0 && strstr(err, "fprop"), "fprop over 24: %s", err);
    /* larger transforms against the same contractions: 64 tokens take 64, not 128 */
    K[QP_PASS_WGRAD][2] = 64;
    CHECK(resolve("nvfp4,wgrad:rht=64,bf16-last=0", 2, &R, P, err, sizeof err) == 0 &&
              qp_recipe_check_rht(&R, P, 2, K, err, sizeof err) == 0,
          "a 64-point RHT over 64 tokens: %s", err);
    CHECK(resolve("nvfp4,wgrad:rht=128,bf16-last=0", 2, &R, P, err, sizeof err) == 0 &&
              qp_recipe_check_rht(&R, P, 2, K, err, sizeof err) != 0 && strstr(err, "128-point") &&
              strstr(err, "multiple of 128"),
          "a 128-point RHT over 64 tokens: %s", err);
    CHECK(resolve("bf16,dgrad=nvfp4:rht=32", 2, &R, P, err, sizeof err) == 0 &&
              qp_recipe_check_rht(&R, P, 2, K, err, sizeof err) != 0 && strstr(err, "dgrad") && strstr(err, "(40)"),
          "a 32-point RHT over dgrad's 40: %s", err);
}

/* ---- errors ------------------------------------------------------------------------------- */

typedef struct {
    const char *spec;
    int layers;
    const char *fragments[3];
} refusal;

/* Each spec is refused for its blocks of gemms in one line holding every fragment. */
static void check_refused(const refusal *bad, size_t n, unsigned gemms)
{
    char err[512];
    for (size_t i = 0; i < n; i++) {
        err[0] = '\0';
        const int rc = resolve_for(bad[i].spec, bad[i].layers, gemms, &R, P, err, sizeof err);
        CHECK(rc != 0, "'%s' accepted", bad[i].spec);
        CHECK(err[0] && !strchr(err, '\n'), "'%s': not one line: %s", bad[i].spec, err);
        for (int k = 0; k < 3 && bad[i].fragments[k]; k++)
            CHECK(strstr(err, bad[i].fragments[k]) != NULL, "'%s': '%s' lacks '%s'", bad[i].spec, err,
                  bad[i].fragments[k]);
    }
}

static void test_errors(void)
{
    static const refusal bad[] = {
        {"", 4, {"empty", "valid: fp32, bf16"}},
        {"nvfp5", 4, {"'nvfp5'", "valid: fp32, bf16"}},
        {"bf16,nvfp4-rht", 4, {"nvfp4 recipe only"}},
        {"fp8,nvfp4", 4, {"'nvfp4' must come first"}},
        {"nvfp4,bf16-last=x", 4, {"bf16-last", "'x'"}},
        {"nvfp4,,bf16-last=1", 4, {"empty clause"}},
        {"fprp=nvfp4", 4, {"'fprp'", "valid: fprop, dgrad, wgrad"}},
        {"x=nvfp5", 4, {"'nvfp5'", "valid: fp32, bf16, fp8-e4m3"}},
        {"x=nvfp4:foo", 4, {"'foo'", "valid: sr, rn"}},
        {"x=nvfp4:sr:rn", 4, {"'rn'", "contradicts"}},
        {"x=nvfp4:rht=8", 4, {"'8'", "rht"}},
        {"x=nvfp4:rht=256", 4, {"'256'", "16, 32, 64, 128"}},
        {"x=nvfp4:rht=48", 4, {"'48'", "16, 32, 64, 128"}},
        {"nvfp4,wgrad.x:rht=32", 4, {"wgrad", "rht=16 on dy but rht=32 on x"}},
        {"x=nvfp4:hist=0", 4, {"hist", "'0'"}},
        {"x=fp8-e4m3:hist=5", 4, {"hist", "delayed"}},
        {"x=mxfp8:delayed", 4, {"mxfp8", "per-tensor scale"}},
        {"x=mxfp8:2d", 4, {"mxfp8", "2-D"}},
        {"x=fp32:sr", 4, {"fp32", "sr"}},
        {"fp32,dy:sr", 4, {"'dy:sr'", "fp32"}},
        {"mxfp8,x:delayed", 4, {"'x:delayed'", "mxfp8"}},
        {"x=nvfp4-row,x:delayed", 4, {"'x:delayed'", "nvfp4-row", "per row"}},
        {"fprop.x=nvfp4-row:hist=8", 4, {"nvfp4-row", "per row"}},
        {"x+fprop=bf16", 4, {"'x+fprop'", "mixes"}},
        {"x.x=bf16", 4, {"operands twice"}},
        {"~x=bf16", 4, {"'~'", "blocks"}},
        {"L3-1=bf16", 4, {"'L3-1'", "backwards"}},
        {"L1024=bf16", 4, {"1024", "0..1023"}},
        {"=bf16", 4, {"target", "valid: fprop"}},
        {"x.=bf16", 4, {"empty selector"}},
        {"x+=bf16", 4, {"empty item"}},
        {"x=", 4, {"unknown format ''"}},
        {"x=nvfp4:", 4, {"empty option"}},
        {"nvfp4,wgrad.x=bf16", 4, {"wgrad", "rht=16 on dy but rht=0 on x"}},
        {"fp8,wgrad.x=fp8-e5m2:delayed", 4, {"wgrad.x", "owning use"}},
        {"fp8,fprop.x=fp8-e5m2", 4, {"fprop.x=fp8-e5m2", "owning use"}},
        {"nvfp4,L9=bf16", 4, {"'L9=bf16'", "blocks 0..3"}},
        {"bf16\x01", 4, {"0x01", "printable"}},
    };
    check_refused(bad, sizeof bad / sizeof bad[0], GPT);
    char err[512];
    /* too long */
    static char longspec[QP_RECIPE_SPEC_MAX + 8];
    memset(longspec, 'x', sizeof longspec - 1);
    longspec[sizeof longspec - 1] = '\0';
    CHECK(qp_recipe_parse(longspec, &R, err, sizeof err) != 0 && strstr(err, "1023 bytes"), "long: %s", err);
}

/* ---- the architectures' GEMMs and smooth-swiglu -------------------------------------------- */

static void test_arch(void)
{
    char err[512], desc[400];
    CHECK(GPT == (1u << QP_GEMM_QKV | 1u << QP_GEMM_ATTPROJ | 1u << QP_GEMM_FC | 1u << QP_GEMM_FCPROJ) &&
              LLAMA == (1u << QP_GEMM_QKV | 1u << QP_GEMM_ATTPROJ | 1u << QP_GEMM_GATE | 1u << QP_GEMM_UP |
                        1u << QP_GEMM_DOWN),
          "the GEMMs of a GPT and a Llama block");
    /* a Llama's GEMMs by name; the GPT's, which it lacks, stay FP32 and unused */
    CHECK(resolve_for("fp8-current,gate+up=bf16", 3, LLAMA, &R, P, err, sizeof err) == 0, "%s", err);
    for (int l = 0; l < 3; l++)
        CHECK(use(l, QP_GEMM_GATE, QP_PASS_FPROP, QP_OPND_X)->fmt == QP_FMT_BF16 &&
                  use(l, QP_GEMM_UP, QP_PASS_WGRAD, QP_OPND_DY)->fmt == QP_FMT_BF16 &&
                  is(use(l, QP_GEMM_DOWN, QP_PASS_FPROP, QP_OPND_X), QP_FMT_FP8_E4M3, 0, 0, QP_SCALING_CURRENT) &&
                  is(use(l, QP_GEMM_QKV, QP_PASS_DGRAD, QP_OPND_DY), QP_FMT_FP8_E5M2, 0, 0, QP_SCALING_CURRENT) &&
                  use(l, QP_GEMM_FC, QP_PASS_FPROP, QP_OPND_X)->fmt == QP_FMT_FP32 &&
                  use(l, QP_GEMM_FCPROJ, QP_PASS_WGRAD, QP_OPND_DY)->fmt == QP_FMT_FP32,
              "llama gate+up=bf16, block %d", l);
    /* the uniform description covers the model's GEMMs only */
    CHECK(resolve_for("fp8", 2, LLAMA, &R, P, err, sizeof err) == 0, "%s", err);
    qp_recipe_describe(&R, P, 2, LLAMA, desc, sizeof desc);
    CHECK(strstr(desc, "x fp8-e4m3") && !strstr(desc, "varies") && !strstr(desc, "Smooth"), "fp8 on a Llama: %s",
          desc);
    /* a GEMM the model lacks is refused in one line naming it and the model's own; with no model known, any */
    static const refusal on_llama[] = {
        {"bf16,fc=fp8-e4m3", 2, {"names GEMM fc", "theirs: qkv, attproj, gate, up, down"}},
        {"nvfp4,L0.fcproj.wgrad:rn", 2, {"'L0.fcproj.wgrad:rn'", "GEMM fcproj"}},
        {"bf16,attproj+fc=mxfp8", 2, {"GEMM fc,", "theirs"}},
    };
    static const refusal on_gpt[] = {
        {"bf16,gate=fp8-e4m3", 2, {"names GEMM gate", "theirs: qkv, attproj, fc, fcproj"}},
        {"bf16,up+down.fprop=mxfp8", 2, {"GEMM up,"}},
        {"fp8,smooth-swiglu", 2, {"smooth-swiglu", "down GEMM", "theirs: qkv, attproj, fc, fcproj"}},
    };
    check_refused(on_llama, sizeof on_llama / sizeof on_llama[0], LLAMA);
    check_refused(on_gpt, sizeof on_gpt / sizeof on_gpt[0], GPT);
    const refusal *both[] = {&on_llama[0], &on_llama[1], &on_llama[2], &on_gpt[0], &on_gpt[1], &on_gpt[2]};
    for (size_t i = 0; i < sizeof both / sizeof both[0]; i++)
        CHECK(resolve_for(both[i]->spec, 2, 0, &R, P, err, sizeof err) == 0, "'%s' without a model: %s",
              both[i]->spec, err);
    /* smooth-swiglu: a modifier anywhere after the preset, alone on FP32, kept by the nvfp4 modifiers */
    CHECK(qp_recipe_parse("fp8", &R, err, sizeof err) == 0 && !R.smooth_swiglu, "fp8 has no smooth-swiglu");
    CHECK(qp_recipe_parse("fp8,smooth-swiglu,dy=fp8-e4m3:delayed", &R, err, sizeof err) == 0 && R.smooth_swiglu &&
              !strcmp(R.base, "fp8"),
          "fp8 with smooth-swiglu: %s", err);
    CHECK(resolve_for("smooth-swiglu", 2, LLAMA, &R, P, err, sizeof err) == 0 && R.smooth_swiglu && !R.base[0] &&
              use(1, QP_GEMM_DOWN, QP_PASS_FPROP, QP_OPND_X)->fmt == QP_FMT_FP32,
          "smooth-swiglu alone: FP32: %s", err);
    CHECK(resolve_for("nvfp4-rht,smooth-swiglu", 4, LLAMA, &R, P, err, sizeof err) == 0 && R.smooth_swiglu &&
              !strcmp(R.base, "nvfp4") && use(0, QP_GEMM_UP, QP_PASS_WGRAD, QP_OPND_X)->rht == 0 &&
              use(0, QP_GEMM_UP, QP_PASS_FPROP, QP_OPND_X)->fmt == QP_FMT_NVFP4,
          "nvfp4-rht,smooth-swiglu: %s", err);
    qp_recipe_describe(&R, P, 4, LLAMA, desc, sizeof desc);
    CHECK(strstr(desc, "Smooth-SwiGLU") != NULL, "described: %s", desc);
    CHECK(qp_recipe_parse("fp8,qkv=bf16,smooth-swiglu", &R, err, sizeof err) == 0 && R.smooth_swiglu,
          "smooth-swiglu beside a rule naming another GEMM: %s", err);
    CHECK(qp_recipe_parse("smooth-swiglu,fp8", &R, err, sizeof err) != 0 && strstr(err, "'fp8' must come first"),
          "a preset after smooth-swiglu: %s", err);
    CHECK(qp_recipe_parse("fp8,smooth-swiglu=1", &R, err, sizeof err) != 0 && !strchr(err, '\n'),
          "smooth-swiglu takes no value: %s", err);
}

/* The name tables have a row for every enum value (designated initializers
 * leave a gap NULL) and the passes' operands are the documented ones. */
static void test_tables(void)
{
    const char *seen[16];
    int n = 0;
    for (int p = 0; p < QP_PASS_COUNT; p++) seen[n++] = qp_pass_name((qp_pass)p);
    for (int o = 0; o < QP_OPND_COUNT; o++) seen[n++] = qp_operand_name((qp_operand)o);
    for (int g = 0; g < QP_GEMM_COUNT; g++) seen[n++] = qp_gemm_name((qp_gemm_id)g);
    for (int i = 0; i < n; i++) {
        CHECK(seen[i] && seen[i][0] && strcmp(seen[i], "?"), "name %d missing", i);
        for (int j = 0; j < i; j++) CHECK(!seen[i] || !seen[j] || strcmp(seen[i], seen[j]), "name '%s' twice", seen[i]);
    }
    CHECK(!strcmp(qp_pass_name(QP_PASS_COUNT), "?") && !strcmp(qp_gemm_name(QP_GEMM_COUNT), "?"), "out of range");
    const qp_operand want[QP_PASS_COUNT][2] = {{QP_OPND_X, QP_OPND_W}, {QP_OPND_DY, QP_OPND_W}, {QP_OPND_DY, QP_OPND_X}};
    for (int p = 0; p < QP_PASS_COUNT; p++)
        for (int sd = 0; sd < 2; sd++) {
            CHECK(qp_pass_operand((qp_pass)p, sd) == want[p][sd], "%s side %d", qp_pass_name((qp_pass)p), sd);
            CHECK(qp_pass_uses((qp_pass)p, want[p][sd]), "%s uses its operands", qp_pass_name((qp_pass)p));
        }
    CHECK(!qp_pass_uses(QP_PASS_FPROP, QP_OPND_DY) && !qp_pass_uses(QP_PASS_DGRAD, QP_OPND_X) &&
              !qp_pass_uses(QP_PASS_WGRAD, QP_OPND_W),
          "each pass leaves one operand out");
}

int main(int argc, char **argv)
{
    GPT = qp_model_gemm_mask(&(qp_gpt_config){.arch = QP_ARCH_GPT});
    LLAMA = qp_model_gemm_mask(&(qp_gpt_config){.arch = QP_ARCH_LLAMA});
    test_tables();
    test_golden(golden, sizeof golden / sizeof golden[0], GPT);
    test_golden(golden_llama, sizeof golden_llama / sizeof golden_llama[0], LLAMA);
    const char *specs[] = {"fp32", "bf16", "fp8", "fp8-current", "mxfp8", "nvfp4", "nvfp4-naive", "mxfp4",
                           "nvfp4-sr", "nvfp4,nvfp4-rht,nvfp4-2d", "bf16-last=3", "bf16,fprop=nvfp4",
                           "fp8-current,w=nvfp4", "nvfp4,bf16-first=2,bf16-last=8", "fp8,dy=fp8-e4m3:delayed",
                           "nvfp4,bf16-last=0,~L3=bf16", "nvfp4,fcproj=bf16", "nvfp4,L1+L4.fc.wgrad.dy:rn",
                           "bf16,wgrad=fp8-e4m3:delayed:hist=16", "fp32,w=nvfp4", "nvfp4,fcproj.wgrad=bf16:rht=16",
                           "nvfp4-sr,~L1=bf16", "nvfp4-naive,bf16-last=1,~L0=bf16"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        for (int L = 5; L <= 12; L += 7) round_trip(specs[i], L, GPT);
    const char *llama_specs[] = {"fp8", "nvfp4", "fp8,smooth-swiglu", "bf16,gate+up=fp8-e4m3:current",
                                 "nvfp4,down=bf16,smooth-swiglu", "nvfp4,L1+L4.up.wgrad.dy:rn", "smooth-swiglu",
                                 "mxfp8,qkv+down.dgrad=bf16"};
    for (size_t i = 0; i < sizeof llama_specs / sizeof llama_specs[0]; i++)
        for (int L = 5; L <= 12; L += 7) round_trip(llama_specs[i], L, LLAMA);
    if (argc > 1) test_docs(argv[1]);
    else CHECK(0, "usage: test_recipe docs/recipes.md");
    test_examples();
    test_owners();
    test_one_block();
    test_errors();
    test_arch();
    return qp_test_finish("test_recipe");
}
