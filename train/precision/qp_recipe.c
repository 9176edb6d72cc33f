/* qp_recipe.c — the recipe language: parsing, presets, and the resolved
 * per-use plans (see qp_recipe.h and docs/recipes.md). */
#include "qp_recipe.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const pass_names[] = {[QP_PASS_FPROP] = "fprop", [QP_PASS_DGRAD] = "dgrad",
                                                      [QP_PASS_WGRAD] = "wgrad"};
static const char *const operand_names[] = {[QP_OPND_X] = "x", [QP_OPND_W] = "w", [QP_OPND_DY] = "dy"};
static const char *const gemm_names[] = {[QP_GEMM_QKV] = "qkv", [QP_GEMM_ATTPROJ] = "attproj",
                                                      [QP_GEMM_FC] = "fc", [QP_GEMM_FCPROJ] = "fcproj",
                                                      [QP_GEMM_GATE] = "gate", [QP_GEMM_UP] = "up",
                                                      [QP_GEMM_DOWN] = "down", [QP_GEMM_HEAD] = "head"};
_Static_assert(sizeof pass_names / sizeof pass_names[0] == QP_PASS_COUNT, "a name per pass");
_Static_assert(sizeof operand_names / sizeof operand_names[0] == QP_OPND_COUNT, "a name per operand");
_Static_assert(sizeof gemm_names / sizeof gemm_names[0] == QP_GEMM_COUNT, "a name per GEMM");
_Static_assert(QP_BLOCK_GEMMS == QP_GEMM_HEAD, "the block's GEMMs come before the head");

/* The operands of each pass: A, then B (the GEMM computes A B^T). */
static const qp_operand pass_operands[][2] = {
    [QP_PASS_FPROP] = {QP_OPND_X, QP_OPND_W},
    [QP_PASS_DGRAD] = {QP_OPND_DY, QP_OPND_W},
    [QP_PASS_WGRAD] = {QP_OPND_DY, QP_OPND_X},
};
_Static_assert(sizeof pass_operands / sizeof pass_operands[0] == QP_PASS_COUNT, "operands of every pass");

const char *qp_pass_name(qp_pass p) { return (unsigned)p < QP_PASS_COUNT ? pass_names[p] : "?"; }
const char *qp_operand_name(qp_operand o) { return (unsigned)o < QP_OPND_COUNT ? operand_names[o] : "?"; }
const char *qp_gemm_name(qp_gemm_id g) { return (unsigned)g < QP_GEMM_COUNT ? gemm_names[g] : "?"; }
qp_operand qp_pass_operand(qp_pass p, int side) { return pass_operands[p][side ? 1 : 0]; }
int qp_pass_uses(qp_pass p, qp_operand o) { return pass_operands[p][0] == o || pass_operands[p][1] == o; }

/* The two uses of an operand in step order: x fprop then wgrad, w fprop then
 * dgrad, dy dgrad then wgrad. */
static void uses_of(qp_operand o, qp_pass *first, qp_pass *second)
{
    switch (o) {
    case QP_OPND_X: *first = QP_PASS_FPROP, *second = QP_PASS_WGRAD; return;
    case QP_OPND_W: *first = QP_PASS_FPROP, *second = QP_PASS_DGRAD; return;
    case QP_OPND_DY: *first = QP_PASS_DGRAD, *second = QP_PASS_WGRAD; return;
    case QP_OPND_COUNT: break;
    }
    *first = *second = QP_PASS_FPROP;
}

/* ---- presets ------------------------------------------------------------------ */

/* Today's recipes, each written in the language itself: the expansion is a
 * list of clauses applied to all-FP32 operands. */
/* The one list of preset names: the parser, qtrain --help's --recipe text
 * (qp_recipe_presets_help) and every message's list (qp_recipe_names) read
 * it. te: one of Transformer Engine's recipe classes (listed apart); note:
 * what --help says of it, or NULL. */
typedef struct {
    const char *name, *expansion;
    int bf16_last; /* the bf16-last default: -1 about 15% of the blocks (at least 1) */
    bool te;
    const char *note;
} preset;

enum {
    P_FP32,
    P_BF16,
    P_FP8,
    P_FP8_CURRENT,
    P_MXFP8,
    P_NVFP4,
    P_NVFP4_NAIVE,
    P_MXFP4,
    P_TE_NVFP4,
    P_TE_NVFP4_4O6,
    P_TE_FP8_BLOCK,
    P_TE_MXFP8,
    P_TE_FP8_CURRENT,
    P_TE_FP8_DELAYED,
    P_COUNT
};
static const preset presets[] = {
    [P_FP32] = {"fp32", "x+w+dy=fp32", 0},
    [P_BF16] = {"bf16", "x+w+dy=bf16", 0},
    [P_FP8] = {"fp8", "x+w=fp8-e4m3:delayed:hist=1024:amax=max,dy=fp8-e5m2:delayed:hist=1024:amax=max", 0,
               .note = "E4M3 x/w, E5M2 grads, delayed scaling, history 1024"},
    [P_FP8_CURRENT] = {"fp8-current", "x+w=fp8-e4m3:current,dy=fp8-e5m2:current", 0},
    [P_MXFP8] = {"mxfp8", "x+w+dy=mxfp8", 0},
    [P_NVFP4] = {"nvfp4", "x=nvfp4,w=nvfp4-2d,dy=nvfp4:sr,wgrad:rht=16", -1,
                 .note = "NVIDIA's recipe: 1x16 x/dy, 16x16 w, RHT on wgrad, SR on grads, last ~15% blocks BF16"},
    [P_NVFP4_NAIVE] = {"nvfp4-naive", "x+w+dy=nvfp4", 0},
    [P_MXFP4] = {"mxfp4", "x+w+dy=mxfp4", 0},
    /* Transformer Engine's recipe classes with their defaults, every layer
     * quantized as the classes leave it (Megatron-LM's BF16 ends are the
     * modifiers bf16-first=N,bf16-last=M); the TE source of each default is
     * in docs/recipes.md */
    [P_TE_NVFP4] = {"te-nvfp4", "x=nvfp4,w=nvfp4-2d,dy=nvfp4:sr,wgrad:rht=te", 0, true},
    [P_TE_NVFP4_4O6] = {"te-nvfp4-4o6", "x=nvfp4-4o6-te,w=nvfp4-4o6-te-2d,dy=nvfp4-4o6-te:sr", 0, true},
    [P_TE_FP8_BLOCK] = {"te-fp8-block", "x+dy=fp8-block-pow2,w=fp8-block-2d-pow2", 0, true},
    [P_TE_MXFP8] = {"te-mxfp8", "x+w+dy=mxfp8-rceil", 0, true},
    [P_TE_FP8_CURRENT] = {"te-fp8-current", "x+w=fp8-e4m3:current,dy=fp8-e5m2:current", 0, true},
    [P_TE_FP8_DELAYED] = {"te-fp8-delayed",
                          "x+w=fp8-e4m3:delayed:hist=1024:amax=max,dy=fp8-e5m2:delayed:hist=1024:amax=max", 0, true},
};
_Static_assert(sizeof presets / sizeof presets[0] == P_COUNT, "a row per preset");

/* The modifiers of the nvfp4 preset: each drops one of its parts. */
enum { M_RHT, M_SR, M_2D, M_COUNT };
static const struct {
    const char *name, *expansion;
} modifiers[] = {
    [M_RHT] = {"nvfp4-rht", "wgrad:rht=0"},
    [M_SR] = {"nvfp4-sr", "dy:rn"},
    [M_2D] = {"nvfp4-2d", "w:1d"},
};
_Static_assert(sizeof modifiers / sizeof modifiers[0] == M_COUNT, "a row per modifier");

/* The modifiers that qualify any recipe (a model's or the block range's),
 * as their names are written in --help and messages; the parser matches
 * the same prefixes (parse_clauses). */
#define SMOOTH_SWIGLU "smooth-swiglu" /* a modifier of the model, not of the plans */
enum { B_BF16_LAST, B_BF16_FIRST, B_SMOOTH_SWIGLU, B_COUNT };
static const struct {
    const char *prefix, *arg, *note; /* "bf16-last=" + "N"; note: what --help says of it, or NULL */
} bare_modifiers[] = {
    [B_BF16_LAST] = {"bf16-last=", "N", NULL},
    [B_BF16_FIRST] = {"bf16-first=", "N", NULL},
    [B_SMOOTH_SWIGLU] = {SMOOTH_SWIGLU, "",
                         "llama: Fishman et al.'s Smooth-SwiGLU, the down GEMM's input scaled per channel by a "
                         "power of two before it is quantized, the inverse folded into its weight"},
};
_Static_assert(sizeof bare_modifiers / sizeof bare_modifiers[0] == B_COUNT, "a row per bare modifier");

/* Appends printf-style text to buf at *k (kept within len). */
static void add(char *buf, size_t len, size_t *k, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t len, size_t *k, const char *fmt, ...)
{
    if (*k + 1 >= len) return;
    va_list ap;
    va_start(ap, fmt);
    const int w = vsnprintf(buf + *k, len - *k, fmt, ap);
    va_end(ap);
    *k = w < 0 ? *k : *k + (size_t)w < len ? *k + (size_t)w : len - 1;
}

/* The names of the presets (TE's classes when te), joined by ", ", each
 * with its note in parentheses when notes is set. */
static void add_presets(char *buf, size_t len, size_t *k, bool te, bool notes)
{
    const char *sep = "";
    for (int i = 0; i < P_COUNT; i++) {
        if (presets[i].te != te) continue;
        add(buf, len, k, "%s%s", sep, presets[i].name);
        if (notes && presets[i].note) add(buf, len, k, " (%s)", presets[i].note);
        sep = ", ";
    }
}

/* The modifiers, joined by ", ", with their notes when notes is set. */
static void add_modifiers(char *buf, size_t len, size_t *k, bool notes)
{
    for (int i = 0; i < M_COUNT; i++) add(buf, len, k, "%s%s", i ? ", " : "", modifiers[i].name);
    if (notes) add(buf, len, k, " (drop that part)");
    for (int i = 0; i < B_COUNT; i++) {
        add(buf, len, k, ", %s%s", bare_modifiers[i].prefix, bare_modifiers[i].arg);
        if (notes && bare_modifiers[i].note) add(buf, len, k, " (%s)", bare_modifiers[i].note);
    }
}

char *qp_recipe_names(char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    add_presets(buf, len, &k, false, false);
    add(buf, len, &k, ", ");
    add_presets(buf, len, &k, true, false);
    add(buf, len, &k, "; modifiers: ");
    add_modifiers(buf, len, &k, false);
    add(buf, len, &k, "; rules: TARGET=FORMAT[:OPTION...] or TARGET:OPTION[:...] (docs/recipes.md)");
    return buf;
}

void qp_recipe_presets_help(char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    add(buf, len, &k, "  a preset: ");
    add_presets(buf, len, &k, false, true);
    add(buf, len, &k, ";\n  Transformer Engine's recipe classes with their defaults: ");
    add_presets(buf, len, &k, true, true);
    add(buf, len, &k, ";\n  modifiers after a comma: ");
    add_modifiers(buf, len, &k, true);
    add(buf, len, &k, ";\n");
}

/* The length of bare modifier i's name when the clause s (n bytes) is it
 * (NAME=value with a value after the '=', or the plain name), else 0. */
static size_t bare_match(const char *s, size_t n, int i)
{
    const size_t p = strlen(bare_modifiers[i].prefix);
    const bool valued = *bare_modifiers[i].arg;
    return (valued ? n > p : n == p) && !memcmp(s, bare_modifiers[i].prefix, p) ? p : 0;
}

size_t qp_recipe_bare_modifier(const char *spec)
{
    const size_t n = strcspn(spec, ",");
    for (int i = 0; i < B_COUNT; i++)
        if (bare_match(spec, n, i)) return n;
    return 0;
}

#define TARGETS "fprop, dgrad, wgrad, x, w, dy, qkv, attproj, fc, fcproj, gate, up, down, Ln, Ln-m, firstN, lastN " \
                "(~ before blocks: " \
                "all but those; + joins one kind, . joins kinds)"
#define OPTIONS "sr, rn, current, delayed, hist=N, amax=max|most-recent, rht=0|16|32|64|128|te, 1d, 2d"

/* RHT sizes the quantizer has (quant/qp_core.h), or 0 for none. */
static int rht_size_ok(int n) { return n == 0 || qp_rht_size_ok(n); }

/* ---- parsing ------------------------------------------------------------------ */

typedef struct {
    qp_recipe *r;
    char *err;
    size_t errlen;
    int bf16_last_given;
} parser;

static int fail(parser *p, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "recipe '%.200s': %s", p->r->spec, msg);
    return -1;
}

/* A count 0..100000 spelling the whole of s[0..n). */
static int parse_count(const char *s, size_t n, int *out)
{
    if (n == 0 || n > 6) return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > 100000) return -1;
    *out = v;
    return 0;
}

static int word_is(const char *s, size_t n, const char *w) { return strlen(w) == n && !memcmp(s, w, n); }

static int index_of(const char *s, size_t n, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (names[i] && word_is(s, n, names[i])) return i;
    return -1;
}

enum { K_BLOCKS, K_GEMMS, K_PASSES, K_OPERANDS, K_COUNT };
static const char *const kind_names[] = {[K_BLOCKS] = "blocks", [K_GEMMS] = "GEMMs",
                                         [K_PASSES] = "passes", [K_OPERANDS] = "operands"};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == K_COUNT, "a name per selector kind");

/* One item of a selector: its kind and, for GEMMs/passes/operands, its bit;
 * blocks fill *item. */
static int parse_item(parser *p, const char *s, size_t n, int *kind, unsigned *bit, qp_recipe_rule *rule)
{
    int i;
    if ((i = index_of(s, n, pass_names, QP_PASS_COUNT)) >= 0) return *kind = K_PASSES, *bit = 1u << i, 0;
    if ((i = index_of(s, n, operand_names, QP_OPND_COUNT)) >= 0) return *kind = K_OPERANDS, *bit = 1u << i, 0;
    if ((i = index_of(s, n, gemm_names, QP_BLOCK_GEMMS)) >= 0) return *kind = K_GEMMS, *bit = 1u << i, 0;
    *kind = K_BLOCKS, *bit = 0;
    if (rule->n_items >= QP_RECIPE_MAX_ITEMS)
        return fail(p, "more than %d block items in one target", QP_RECIPE_MAX_ITEMS);
    int a = 0, b = 0;
    qp_blocks_kind k;
    if (n > 5 && !memcmp(s, "first", 5) && !parse_count(s + 5, n - 5, &a)) k = QP_BLOCKS_FIRST, b = a;
    else if (n > 4 && !memcmp(s, "last", 4) && !parse_count(s + 4, n - 4, &a)) k = QP_BLOCKS_LAST, b = a;
    else if (n > 1 && s[0] == 'L') {
        const char *dash = memchr(s, '-', n);
        const size_t n1 = dash ? (size_t)(dash - s - 1) : n - 1;
        if (parse_count(s + 1, n1, &a) || (dash && parse_count(dash + 1, n - 2 - n1, &b))) goto unknown;
        if (!dash) b = a;
        if (b < a) return fail(p, "block range '%.*s' runs backwards", (int)n, s);
        if (b > 1023) return fail(p, "block %d in '%.*s': blocks are 0..1023 (--layers is at most 1024)", b, (int)n, s);
        k = QP_BLOCKS_RANGE;
    } else {
        goto unknown;
    }
    rule->items[rule->n_items].kind = k;
    rule->items[rule->n_items].a = a;
    rule->items[rule->n_items].b = b;
    rule->n_items++;
    return 0;
unknown:
    return fail(p, "unknown target '%.*s'; valid: " TARGETS, (int)n, s);
}

/* TARGET: selectors joined by '.', each a '+'-union of one kind. */
static int parse_target(parser *p, const char *s, size_t n, qp_recipe_rule *rule)
{
    if (n == 0) return fail(p, "a rule needs a target before '=' or ':'; valid: " TARGETS);
    int seen[K_COUNT] = {0};
    const char *end = s + n;
    while (s <= end) {
        const char *dot = memchr(s, '.', (size_t)(end - s));
        const char *sel_end = dot ? dot : end;
        if (sel_end == s) return fail(p, "empty selector in target '%.*s'", (int)n, end - n);
        const int complement = *s == '~';
        if (complement) s++;
        int kind = -1;
        unsigned mask = 0;
        for (const char *it = s; it <= sel_end;) {
            const char *plus = memchr(it, '+', (size_t)(sel_end - it));
            const char *it_end = plus ? plus : sel_end;
            if (it_end == it) return fail(p, "empty item in selector '%.*s'", (int)(sel_end - s), s);
            int k;
            unsigned bit;
            if (parse_item(p, it, (size_t)(it_end - it), &k, &bit, rule)) return -1;
            if (kind >= 0 && k != kind)
                return fail(p, "selector '%.*s' mixes %s and %s ('+' joins one kind; '.' joins kinds)",
                            (int)(sel_end - s), s, kind_names[kind], kind_names[k]);
            kind = k;
            mask |= bit;
            if (!plus) break;
            it = plus + 1;
        }
        if (seen[kind]) return fail(p, "target '%.*s' selects %s twice", (int)n, end - n, kind_names[kind]);
        seen[kind] = 1;
        if (complement && kind != K_BLOCKS)
            return fail(p, "'~' takes the complement of blocks, not of %s", kind_names[kind]);
        switch (kind) {
        case K_BLOCKS: rule->complement = complement; break;
        case K_GEMMS: rule->gemms = mask; break;
        case K_PASSES: rule->passes = mask; break;
        case K_OPERANDS: rule->operands = mask; break;
        }
        if (!dot) break;
        s = dot + 1;
    }
    return 0;
}

/* The format fmt in its 1-D (dims 1) or 2-D (dims 2) variant: "X-2d" and "X"
 * by name in quant/'s table. -1 if it has none (2-D asked of a format without
 * a "-2d" sibling). */
static int with_dims(qp_fmt fmt, int dims)
{
    const char *name = qp_formats[fmt].name;
    const size_t n = strlen(name);
    const int is_2d = n > 3 && !strcmp(name + n - 3, "-2d");
    if (dims == 1 && is_2d) {
        char base[64];
        snprintf(base, sizeof base, "%.*s", (int)(n - 3), name);
        const qp_format_traits *t = qp_format_by_name(base);
        return t ? (int)t->fmt : -1;
    }
    if (dims == 2 && !is_2d) {
        char two[64];
        snprintf(two, sizeof two, "%s-2d", name);
        const qp_format_traits *t = qp_format_by_name(two);
        return t ? (int)t->fmt : -1;
    }
    return (int)fmt;
}

static int parse_option(parser *p, const char *s, size_t n, qp_recipe_rule *rule)
{
    int *field = NULL, value = 0;
    if (word_is(s, n, "sr")) field = &rule->sr, value = 1;
    else if (word_is(s, n, "rn")) field = &rule->sr, value = 0;
    else if (word_is(s, n, "current")) field = &rule->scaling, value = QP_SCALING_CURRENT;
    else if (word_is(s, n, "delayed")) field = &rule->scaling, value = QP_SCALING_DELAYED;
    else if (word_is(s, n, "amax=max")) field = &rule->algo, value = QP_AMAX_MAX;
    else if (word_is(s, n, "amax=most-recent")) field = &rule->algo, value = QP_AMAX_MOST_RECENT;
    else if (word_is(s, n, "1d")) field = &rule->dims, value = 1;
    else if (word_is(s, n, "2d")) field = &rule->dims, value = 2;
    else if (n > 5 && !memcmp(s, "hist=", 5)) {
        if (parse_count(s + 5, n - 5, &value) || value < 1 || value > 65536)
            return fail(p, "hist takes an amax history length in 1..65536, not '%.*s'", (int)(n - 5), s + 5);
        field = &rule->hist;
    } else if (n > 4 && !memcmp(s, "rht=", 4)) {
        /* rht=te: TE's 16-point transform with its fixed signs (qp_rht16_te) */
        const int te = word_is(s + 4, n - 4, "te");
        if (te) value = QK_RHT;
        else if (parse_count(s + 4, n - 4, &value) || !rht_size_ok(value))
            return fail(p, "rht takes a Hadamard size (0 = none, or 16, 32, 64, 128) or te (Transformer Engine's "
                           "16-point transform), not '%.*s'", (int)(n - 4), s + 4);
        if (rule->rht_te >= 0 && rule->rht_te != te)
            return fail(p, "option '%.*s' contradicts an earlier one", (int)n, s);
        rule->rht_te = te;
        field = &rule->rht;
    } else {
        return fail(p, "unknown option '%.*s'; valid: " OPTIONS, (int)n, s);
    }
    if (*field >= 0 && *field != value) return fail(p, "option '%.*s' contradicts an earlier one", (int)n, s);
    *field = value;
    return 0;
}

/* Why the rule's options cannot land on use u (its format after the rule),
 * or NULL. */
static const char *misfit(const qp_recipe_rule *rule, const qp_use_plan *u)
{
    const int quantized = u->fmt != QP_FMT_FP32;
    if (rule->sr == 1 && !quantized) return "sr: fp32 is not rounded";
    if (rule->rht > 0 && !quantized) return "rht: fp32 operands are not transformed";
    if ((rule->scaling >= 0 || rule->hist >= 0 || rule->algo >= 0) && !qp_formats[u->fmt].tensor_scale)
        return "that format has no per-tensor scale: current, delayed, hist and amax do not apply";
    if ((rule->scaling == QP_SCALING_DELAYED || rule->hist >= 0 || rule->algo >= 0) && qp_formats[u->fmt].row_scaled)
        return "that format's scales are per row, from each row's current amax: delayed, hist and amax do not apply";
    if ((rule->hist >= 0 || rule->algo >= 0) && u->scaling != QP_SCALING_DELAYED)
        return "hist and amax apply to delayed scaling (add :delayed)";
    return NULL;
}

static qp_use_plan default_use(qp_fmt fmt)
{
    return (qp_use_plan){fmt, 0, 0, QP_SCALING_CURRENT, QP_RECIPE_DEFAULT_HISTORY, QP_AMAX_MAX, 0};
}

/* TARGET=FORMAT[:OPT...] or TARGET:OPT[:OPT...] */
static int parse_rule(parser *p, const char *s, size_t n, int at)
{
    qp_recipe *r = p->r;
    if (r->n_rules >= QP_RECIPE_MAX_RULES) return fail(p, "more than %d rules", QP_RECIPE_MAX_RULES);
    qp_recipe_rule *rule = &r->rules[r->n_rules];
    memset(rule, 0, sizeof *rule);
    rule->sr = rule->scaling = rule->algo = rule->dims = rule->hist = rule->rht = rule->rht_te = -1;
    rule->at = at, rule->len = (int)n;
    const char *eq = memchr(s, '=', n), *colon = memchr(s, ':', n);
    const int sets = eq && (!colon || eq < colon);
    const char *tend = sets ? eq : colon;
    if (parse_target(p, s, (size_t)(tend - s), rule)) return -1;
    const char *o = tend + 1, *end = s + n;
    if (sets) {
        const char *fe = memchr(o, ':', (size_t)(end - o));
        if (!fe) fe = end;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(fe - o), o);
        const qp_format_traits *t = (size_t)(fe - o) < sizeof name ? qp_format_by_name(name) : NULL;
        if (!t) return fail(p, "unknown format '%.*s' in '%.*s'; valid: %s", (int)(fe - o), o, (int)n, s,
                            qp_format_names());
        rule->set_fmt = true;
        rule->fmt = t->fmt;
        o = fe < end ? fe + 1 : end;
        if (fe == end) goto done;
    }
    for (;;) {
        const char *oe = memchr(o, ':', (size_t)(end - o));
        if (!oe) oe = end;
        if (oe == o) return fail(p, "empty option in '%.*s'; valid: " OPTIONS, (int)n, s);
        if (parse_option(p, o, (size_t)(oe - o), rule)) return -1;
        if (oe == end) break;
        o = oe + 1;
    }
done:
    if (rule->set_fmt) {
        /* a format and its options are checked now; option changes where they land */
        const int f = rule->dims > 0 ? with_dims(rule->fmt, rule->dims) : (int)rule->fmt;
        if (f < 0) return fail(p, "%s has no 2-D variant", qp_formats[rule->fmt].name);
        qp_use_plan u = default_use((qp_fmt)f);
        if (rule->scaling >= 0) u.scaling = (qp_scaling_mode)rule->scaling;
        const char *why = misfit(rule, &u);
        if (why) return fail(p, "'%.*s' (%s): %s", (int)(n < 80 ? n : 80), s, qp_formats[f].name, why);
    }
    r->n_rules++;
    return 0;
}

static int resolve(const qp_recipe *r, int n_layers, unsigned gemms, int ends, qp_linear_plan *plans, char *err,
                   size_t errlen);

static void trim(const char **s, size_t *n)
{
    while (*n && isspace((unsigned char)**s)) (*s)++, (*n)--;
    while (*n && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

/* The clauses of text in order: the spec (origin NULL), or the expansion of
 * the preset or modifier named origin. */
static int parse_clauses(parser *p, const char *text, const char *origin, int *has_rules, int *legacy_mods,
                         int *modifier_mask)
{
    qp_recipe *r = p->r;
    const int in_spec = origin == NULL;
    int first = 1;
    for (const char *c = text;; first = 0) {
        const char *comma = strchr(c, ',');
        size_t n = comma ? (size_t)(comma - c) : strlen(c);
        const char *s = c;
        trim(&s, &n);
        const int at = (int)(s - text);
        if (n == 0) return fail(p, "empty clause (two commas, or a comma at an end)");
        int pi = -1;
        for (int i = 0; i < P_COUNT && in_spec; i++)
            if (word_is(s, n, presets[i].name)) pi = i;
        int mi = -1;
        for (int i = 0; i < M_COUNT && in_spec; i++)
            if (word_is(s, n, modifiers[i].name)) mi = i;
        const size_t last = in_spec ? bare_match(s, n, B_BF16_LAST) : 0;
        const size_t firsts = in_spec ? bare_match(s, n, B_BF16_FIRST) : 0;
        if (pi >= 0) {
            if (!first || r->base[0]) return fail(p, "'%s' must come first and only once", presets[pi].name);
            snprintf(r->base, sizeof r->base, "%s", presets[pi].name);
            r->bf16_last = presets[pi].bf16_last;
            if (parse_clauses(p, presets[pi].expansion, presets[pi].name, has_rules, legacy_mods, modifier_mask))
                return -1;
        } else if (mi >= 0) {
            *legacy_mods = 1;
            *modifier_mask |= 1 << mi;
            if (parse_clauses(p, modifiers[mi].expansion, modifiers[mi].name, has_rules, legacy_mods, modifier_mask))
                return -1;
        } else if (last) {
            *legacy_mods = 1;
            p->bf16_last_given = 1;
            if (parse_count(s + last, n - last, &r->bf16_last))
                return fail(p, "bf16-last takes a count >= 0, not '%.*s'", (int)(n - last), s + last);
        } else if (in_spec && bare_match(s, n, B_SMOOTH_SWIGLU)) {
            r->smooth_swiglu = true;
        } else if (firsts) {
            *legacy_mods = 1;
            if (parse_count(s + firsts, n - firsts, &r->bf16_first))
                return fail(p, "bf16-first takes a count >= 0, not '%.*s'", (int)(n - firsts), s + firsts);
        } else if (memchr(s, '=', n) || memchr(s, ':', n)) {
            if (in_spec) *has_rules = 1;
            if (parse_rule(p, s, n, at)) return -1;
            r->rules[r->n_rules - 1].origin = origin;
            r->rules[r->n_rules - 1].origin_text = origin ? text : NULL;
        } else {
            snprintf(p->err, p->errlen, "unknown recipe or modifier '%.*s' in recipe '%.200s'; valid: %s",
                     (int)(n < 100 ? n : 100), s, r->spec, qp_recipe_names((char[QP_RECIPE_NAMES_MAX]){0}, QP_RECIPE_NAMES_MAX));
            return -1;
        }
        if (!comma) return 0;
        c = comma + 1;
    }
}

int qp_recipe_parse(const char *spec, qp_recipe *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->bf16_first = 0;
    r->bf16_last = 0;
    if (!spec || !*spec || strlen(spec) >= sizeof r->spec) {
        snprintf(err, errlen, "recipe: empty or longer than %d bytes; valid: %s", QP_RECIPE_SPEC_MAX - 1,
                 qp_recipe_names((char[QP_RECIPE_NAMES_MAX]){0}, QP_RECIPE_NAMES_MAX));
        return -1;
    }
    for (const char *c = spec; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) {
            snprintf(err, errlen, "recipe: byte 0x%02x at %d is not printable ASCII; valid: %s", (unsigned char)*c,
                     (int)(c - spec), qp_recipe_names((char[QP_RECIPE_NAMES_MAX]){0}, QP_RECIPE_NAMES_MAX));
            return -1;
        }
    snprintf(r->spec, sizeof r->spec, "%s", spec);
    parser P = {r, err, errlen, 0}, *p = &P;
    int has_rules = 0, legacy = 0, mods = 0;
    if (parse_clauses(p, r->spec, NULL, &has_rules, &legacy, &mods)) return -1;
    if (!r->base[0] && (mods || (!has_rules && legacy))) {
        /* an nvfp4 modifier without a preset, or bf16-first/-last alone: the
         * nvfp4 recipe first, then the clauses as written (so a recipe of
         * the ablation takes rules after it: nvfp4-sr,~L1=bf16) */
        qp_recipe mod = *r;
        r->n_rules = 0;
        snprintf(r->base, sizeof r->base, "nvfp4");
        int h = 0, l = 0, m = 0;
        if (parse_clauses(p, presets[P_NVFP4].expansion, presets[P_NVFP4].name, &h, &l, &m)) return -1;
        if (r->n_rules + mod.n_rules > QP_RECIPE_MAX_RULES) return fail(p, "more than %d rules", QP_RECIPE_MAX_RULES);
        memcpy(r->rules + r->n_rules, mod.rules, (size_t)mod.n_rules * sizeof mod.rules[0]);
        r->n_rules += mod.n_rules;
        r->bf16_first = mod.bf16_first;
        r->bf16_last = p->bf16_last_given ? mod.bf16_last : presets[P_NVFP4].bf16_last;
    }
    if (mods && strcmp(r->base, "nvfp4") != 0)
        return fail(p, "nvfp4-rht/-sr/-2d modify the nvfp4 recipe only");
    /* A trial resolve without the BF16 ends (they hide blocks, and never
     * make a plan invalid): options that cannot land on the formats they
     * meet are errors now, not when a model resolves it (which also checks
     * block indices and GEMMs). Of the GEMMs the rules name, or of all when
     * none does: a model's canonical expansion names its own GEMMs wherever
     * they differ, and it has no others. */
    int need = 1;
    unsigned named = 0;
    for (int i = 0; i < r->n_rules; i++) {
        named |= r->rules[i].gemms;
        for (int k = 0; k < r->rules[i].n_items; k++)
            if (r->rules[i].items[k].kind == QP_BLOCKS_RANGE && r->rules[i].items[k].b + 1 > need)
                need = r->rules[i].items[k].b + 1;
    }
    qp_linear_plan *plans = malloc((size_t)need * QP_BLOCK_GEMMS * sizeof *plans);
    if (!plans) return snprintf(err, errlen, "recipe: out of memory"), -1;
    if (named && r->smooth_swiglu) named |= 1u << QP_GEMM_DOWN; /* the GEMM it needs */
    const int rc = resolve(r, need, named ? named : QP_GEMMS_ALL, 0, plans, err, errlen);
    free(plans);
    return rc;
}

/* ---- resolving --------------------------------------------------------------- */

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

static int block_matches(const qp_recipe_rule *rule, int layer, int n_layers)
{
    if (rule->n_items == 0) return 1;
    int m = 0;
    for (int i = 0; i < rule->n_items && !m; i++) {
        const int a = rule->items[i].a, b = rule->items[i].b;
        switch (rule->items[i].kind) {
        case QP_BLOCKS_RANGE: m = layer >= a && layer <= b; break;
        case QP_BLOCKS_FIRST: m = layer < a; break;
        case QP_BLOCKS_LAST: m = layer >= n_layers - a; break;
        case QP_BLOCKS_KIND_COUNT: break;
        }
    }
    return rule->complement ? !m : m;
}

static int in_mask(unsigned mask, int i) { return mask == 0 || (mask >> i) & 1u; }

/* The rule's text for messages. */
static void rule_text(const qp_recipe *r, const qp_recipe_rule *rule, char *buf, size_t len)
{
    if (!rule->origin) snprintf(buf, len, "'%.*s'", rule->len < 80 ? rule->len : 80, r->spec + rule->at);
    else snprintf(buf, len, "'%.*s' (of %s)", rule->len, rule->origin_text + rule->at, rule->origin);
}

static int apply_rule(parser *p, const qp_recipe_rule *rule, qp_use_plan *u, int layer, qp_gemm_id g, qp_pass pass,
                      qp_operand o)
{
    qp_use_plan v = rule->set_fmt ? default_use(rule->fmt) : *u;
    if (rule->dims > 0) {
        const int f = with_dims(v.fmt, rule->dims);
        if (f < 0) {
            char t[100];
            rule_text(p->r, rule, t, sizeof t);
            return fail(p, "%s: %s (block %d %s %s.%s) has no 2-D variant", t, qp_formats[v.fmt].name, layer,
                        gemm_names[g], pass_names[pass], operand_names[o]);
        }
        v.fmt = (qp_fmt)f;
    }
    if (rule->sr >= 0) v.sr = rule->sr;
    if (rule->rht >= 0) v.rht = rule->rht, v.rht_te = rule->rht_te;
    if (rule->scaling >= 0) v.scaling = (qp_scaling_mode)rule->scaling;
    if (rule->hist >= 0) v.history_len = rule->hist;
    if (rule->algo >= 0) v.algo = (qp_amax_algo)rule->algo;
    const char *why = misfit(rule, &v);
    if (why) {
        char t[100];
        rule_text(p->r, rule, t, sizeof t);
        return fail(p, "%s on block %d %s %s.%s (%s): %s", t, layer, gemm_names[g], pass_names[pass],
                    operand_names[o], qp_formats[v.fmt].name, why);
    }
    /* what does not apply holds its default */
    if (!qp_formats[v.fmt].tensor_scale) v.scaling = QP_SCALING_CURRENT;
    if (v.scaling != QP_SCALING_DELAYED) v.history_len = QP_RECIPE_DEFAULT_HISTORY, v.algo = QP_AMAX_MAX;
    *u = v;
    return 0;
}

static int unquantized(qp_fmt f) { return f == QP_FMT_FP32 || f == QP_FMT_BF16; }

static void use_text(const qp_use_plan *u, char *buf, size_t len);

/* A use's rht as the grammar spells it: the size, or te. */
static void rht_text(const qp_use_plan *u, char *buf, size_t len)
{
    if (u->rht_te) snprintf(buf, len, "te");
    else snprintf(buf, len, "%d", u->rht);
}

/* The plan of one GEMM of one block; ends: keep the bf16-first/-last blocks
 * in BF16 (which never makes a plan invalid). A GEMM the model does not use
 * stays FP32. */
static int resolve_gemm(parser *p, int layer, qp_gemm_id g, int n_layers, int ends, int used, qp_linear_plan *pl)
{
    const qp_recipe *r = p->r;
    memset(pl, 0, sizeof *pl);
    for (int ps = 0; ps < QP_PASS_COUNT; ps++)
        for (int o = 0; o < QP_OPND_COUNT; o++) pl->use[ps][o] = default_use(QP_FMT_FP32);
    for (int i = 0; i < r->n_rules && used; i++) {
        const qp_recipe_rule *rule = &r->rules[i];
        if (!block_matches(rule, layer, n_layers) || !in_mask(rule->gemms, g)) continue;
        for (int ps = 0; ps < QP_PASS_COUNT; ps++)
            for (int o = 0; o < QP_OPND_COUNT; o++)
                if (qp_pass_uses((qp_pass)ps, (qp_operand)o) && in_mask(rule->passes, ps) && in_mask(rule->operands, o) &&
                    apply_rule(p, rule, &pl->use[ps][o], layer, g, (qp_pass)ps, (qp_operand)o))
                    return -1;
    }
    int first, last;
    qp_recipe_bf16_blocks(r, n_layers, &first, &last);
    if (ends && (layer < first || layer >= n_layers - last))
        for (int ps = 0; ps < QP_PASS_COUNT; ps++)
            for (int o = 0; o < QP_OPND_COUNT; o++)
                if (pl->use[ps][o].fmt != QP_FMT_FP32) pl->use[ps][o] = default_use(QP_FMT_BF16);
    for (int ps = 0; ps < QP_PASS_COUNT; ps++) {
        const qp_use_plan *a = &pl->use[ps][pass_operands[ps][0]], *b = &pl->use[ps][pass_operands[ps][1]];
        if (a->rht != b->rht || a->rht_te != b->rht_te) {
            char ra[8], rb[8];
            rht_text(a, ra, sizeof ra);
            rht_text(b, rb, sizeof rb);
            return fail(p, "block %d %s %s: rht=%s on %s but rht=%s on %s; the transform cancels only when both "
                        "operands get it (give both the same rht)", layer, gemm_names[g], pass_names[ps], ra,
                        operand_names[pass_operands[ps][0]], rb, operand_names[pass_operands[ps][1]]);
        }
    }
    for (int o = 0; o < QP_OPND_COUNT; o++) {
        qp_pass one, two;
        uses_of((qp_operand)o, &one, &two);
        const qp_pass owner = unquantized(pl->use[one][o].fmt) && !unquantized(pl->use[two][o].fmt) ? two : one;
        const qp_pass other = owner == one ? two : one;
        pl->owner[o] = owner;
        const qp_use_plan *ou = &pl->use[owner][o], *xu = &pl->use[other][o];
        if (xu->scaling == QP_SCALING_DELAYED &&
            (xu->fmt != ou->fmt || ou->scaling != QP_SCALING_DELAYED || xu->history_len != ou->history_len ||
             xu->algo != ou->algo)) {
            char a[96], b[96];
            use_text(xu, a, sizeof a);
            use_text(ou, b, sizeof b);
            return fail(p, "block %d %s: %s.%s=%s is delayed, but %s's scaling state follows %s.%s=%s: a delayed "
                        "use needs its owning use's format and delayed scaling (or use :current)", layer,
                        gemm_names[g], pass_names[other], operand_names[o], a, operand_names[o], pass_names[owner],
                        operand_names[o], b);
        }
    }
    return 0;
}

void qp_gemm_list(unsigned mask, char *buf, size_t len)
{
    int n = 0;
    buf[0] = '\0';
    for (int g = 0; g < QP_BLOCK_GEMMS; g++)
        if (mask >> g & 1u) n += snprintf(buf + n, len > (size_t)n ? len - n : 0, "%s%s", n ? ", " : "", gemm_names[g]);
}

/* The GEMMs a model's mask names (0: all). */
static unsigned model_gemms(unsigned gemms) { return gemms ? gemms & QP_GEMMS_ALL : QP_GEMMS_ALL; }

static int resolve(const qp_recipe *r, int n_layers, unsigned gemms, int ends, qp_linear_plan *plans, char *err,
                   size_t errlen)
{
    parser P = {(qp_recipe *)r, err, errlen, 0}, *p = &P;
    if (n_layers < 1) return fail(p, "no blocks");
    gemms = model_gemms(gemms);
    char have[80];
    qp_gemm_list(gemms, have, sizeof have);
    for (int i = 0; i < r->n_rules; i++) {
        const unsigned absent = r->rules[i].gemms & ~gemms;
        if (absent) {
            char t[100];
            rule_text(r, &r->rules[i], t, sizeof t);
            return fail(p, "%s names GEMM %s, which this model's blocks do not have (theirs: %s)", t,
                        gemm_names[__builtin_ctz(absent)], have);
        }
        for (int k = 0; k < r->rules[i].n_items; k++)
            if (r->rules[i].items[k].kind == QP_BLOCKS_RANGE && r->rules[i].items[k].b >= n_layers) {
                char t[100];
                rule_text(r, &r->rules[i], t, sizeof t);
                return fail(p, "%s selects block %d, but the model has blocks 0..%d", t, r->rules[i].items[k].b,
                            n_layers - 1);
            }
    }
    if (r->smooth_swiglu && !(gemms >> QP_GEMM_DOWN & 1u))
        return fail(p, SMOOTH_SWIGLU " scales the input of a SwiGLU block's down GEMM, and this model's blocks have "
                    "none (theirs: %s)", have);
    for (int layer = 0; layer < n_layers; layer++)
        for (int g = 0; g < QP_BLOCK_GEMMS; g++)
            if (resolve_gemm(p, layer, (qp_gemm_id)g, n_layers, ends, gemms >> g & 1u,
                             &plans[layer * QP_BLOCK_GEMMS + g]))
                return -1;
    return 0;
}

int qp_recipe_resolve(const qp_recipe *r, int n_layers, unsigned gemms, qp_linear_plan *plans, char *err,
                      size_t errlen)
{
    return resolve(r, n_layers, gemms, 1, plans, err, errlen);
}

int qp_recipe_history_max(const qp_linear_plan *plans, int n_layers)
{
    int h = QP_RECIPE_DEFAULT_HISTORY;
    for (int i = 0; i < n_layers * QP_BLOCK_GEMMS; i++)
        for (int o = 0; o < QP_OPND_COUNT; o++) {
            const int n = plans[i].use[plans[i].owner[o]][o].history_len;
            if (n > h) h = n;
        }
    return h;
}

int qp_recipe_has_delayed(const qp_linear_plan *plans, int n_layers)
{
    for (int i = 0; i < n_layers * QP_BLOCK_GEMMS; i++)
        for (int o = 0; o < QP_OPND_COUNT; o++)
            if (plans[i].use[plans[i].owner[o]][o].scaling == QP_SCALING_DELAYED) return 1;
    return 0;
}

int qp_recipe_check_rht(const qp_recipe *r, const qp_linear_plan *plans, int n_layers,
                        const int64_t K[QP_PASS_COUNT][QP_BLOCK_GEMMS], char *err, size_t errlen)
{
    static const char *const what[] = {[QP_PASS_FPROP] = "the GEMM's input width",
                                       [QP_PASS_DGRAD] = "the GEMM's output width",
                                       [QP_PASS_WGRAD] = "batch x seq tokens"};
    _Static_assert(sizeof what / sizeof what[0] == QP_PASS_COUNT, "a contraction per pass");
    for (int layer = 0; layer < n_layers; layer++)
        for (int g = 0; g < QP_BLOCK_GEMMS; g++)
            for (int ps = 0; ps < QP_PASS_COUNT; ps++) {
                const int n = plans[layer * QP_BLOCK_GEMMS + g].use[ps][pass_operands[ps][0]].rht;
                if (n > 0 && K[ps][g] % n) {
                    snprintf(err, errlen, "recipe %.200s applies the %d-point Hadamard transform in %s of block %d "
                             "%s over %s (%lld): %s must be a multiple of %d", r->spec, n, pass_names[ps], layer,
                             gemm_names[g], what[ps], (long long)K[ps][g],
                             ps == QP_PASS_WGRAD ? "--batch x --seq" : "it", n);
                    return -1;
                }
            }
    return 0;
}

/* ---- the canonical table --------------------------------------------------------- */

static void use_text(const qp_use_plan *u, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s", qp_formats[u->fmt].name);
    if (qp_formats[u->fmt].tensor_scale) {
        if (u->scaling == QP_SCALING_DELAYED)
            n += snprintf(buf + n, len > (size_t)n ? len - n : 0, ":delayed:hist=%d:amax=%s", u->history_len,
                          u->algo == QP_AMAX_MOST_RECENT ? "most-recent" : "max");
        else
            n += snprintf(buf + n, len > (size_t)n ? len - n : 0, ":current");
    }
    if (u->sr) n += snprintf(buf + n, len > (size_t)n ? len - n : 0, ":sr");
    if (u->rht) {
        char rt[8];
        rht_text(u, rt, sizeof rt);
        snprintf(buf + n, len > (size_t)n ? len - n : 0, ":rht=%s", rt);
    }
}

static int same_use(const qp_use_plan *a, const qp_use_plan *b) { return !memcmp(a, b, sizeof *a); }

typedef struct {
    int first, last, pass, side;
    unsigned gemms;
    char text[200];
} line;

static int cmp_line(const void *a, const void *b)
{
    const line *x = a, *y = b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->pass != y->pass) return x->pass < y->pass ? -1 : 1;
    if (x->side != y->side) return x->side < y->side ? -1 : 1;
    const int gx = __builtin_ctz(x->gemms), gy = __builtin_ctz(y->gemms);
    return (gx > gy) - (gx < gy);
}

int qp_recipe_explain(const qp_recipe *r, const qp_linear_plan *plans, int n_layers, unsigned gemms, char *buf,
                      size_t len)
{
    if (!r || !plans || n_layers < 1 || (!buf && len)) return -1;
    gemms = model_gemms(gemms);
    /* at most every (pass, side, block, GEMM) on its own line, and smooth-swiglu's */
    const size_t cap = (size_t)QP_PASS_COUNT * 2 * (size_t)n_layers * QP_BLOCK_GEMMS + 1;
    line *lines = malloc(cap * sizeof *lines);
    if (!lines) return -1;
    size_t nl = 0;
#define USE(l, g) (&plans[(l) * QP_BLOCK_GEMMS + (g)].use[ps][o])
    for (int ps = 0; ps < QP_PASS_COUNT; ps++)
        for (int side = 0; side < 2; side++) {
            const qp_operand o = pass_operands[ps][side];
            for (int a = 0; a < n_layers;) {
                /* the run of blocks whose GEMMs match block a's */
                int b = a;
                for (;;) {
                    if (b + 1 >= n_layers) break;
                    int same = 1;
                    for (int g = 0; g < QP_BLOCK_GEMMS && same; g++)
                        same = !(gemms >> g & 1u) || same_use(USE(a, g), USE(b + 1, g));
                    if (!same) break;
                    b++;
                }
                unsigned done = ~gemms;
                for (int g = 0; g < QP_BLOCK_GEMMS; g++) {
                    if (done >> g & 1u) continue;
                    unsigned set = 0;
                    for (int h = g; h < QP_BLOCK_GEMMS; h++)
                        if (gemms >> h & 1u && same_use(USE(a, g), USE(a, h))) set |= 1u << h;
                    done |= set;
                    line *ln = &lines[nl++];
                    ln->first = a, ln->last = b, ln->pass = ps, ln->side = side, ln->gemms = set;
                    int n = a == b ? snprintf(ln->text, sizeof ln->text, "L%d", a)
                                   : snprintf(ln->text, sizeof ln->text, "L%d-%d", a, b);
                    if (set != gemms)
                        for (int h = 0, k = 0; h < QP_BLOCK_GEMMS; h++)
                            if (set >> h & 1u) n += snprintf(ln->text + n, sizeof ln->text - n, "%c%s",
                                                             k++ ? '+' : '.', gemm_names[h]);
                    n += snprintf(ln->text + n, sizeof ln->text - n, ".%s.%s=", pass_names[ps], operand_names[o]);
                    use_text(USE(a, g), ln->text + n, sizeof ln->text - n);
                }
                a = b + 1;
            }
        }
#undef USE
    qsort(lines, nl, sizeof *lines, cmp_line);
    if (r->smooth_swiglu) snprintf(lines[nl++].text, sizeof lines[0].text, SMOOTH_SWIGLU);
    size_t n = 0;
    for (size_t i = 0; i < nl; i++) {
        const size_t k = strlen(lines[i].text);
        if (n + k + 1 < len) {
            memcpy(buf + n, lines[i].text, k);
            buf[n + k] = '\n';
        }
        n += k + 1;
    }
    if (len) buf[n < len ? n : len - 1] = '\0';
    free(lines);
    return (int)n;
}

char *qp_recipe_explain_text(const qp_recipe *r, const qp_linear_plan *plans, int n_layers, unsigned gemms)
{
    const int n = qp_recipe_explain(r, plans, n_layers, gemms, NULL, 0);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text && qp_recipe_explain(r, plans, n_layers, gemms, text, (size_t)n + 1) != n) free(text), text = NULL;
    return text;
}

void qp_recipe_describe(const qp_recipe *r, const qp_linear_plan *plans, int n_layers, unsigned gemms, char *buf,
                        size_t len)
{
    gemms = model_gemms(gemms);
    int first, last;
    qp_recipe_bf16_blocks(r, n_layers, &first, &last);
    /* a block the BF16 ends do not cover; when they cover all, the plan
     * block 0 would have without them */
    const int rep = first < n_layers - last ? first : 0;
    qp_linear_plan *bare = NULL;
    const qp_linear_plan *p = &plans[rep * QP_BLOCK_GEMMS + __builtin_ctz(gemms)];
    char e[8];
    if (first >= n_layers - last && (bare = malloc((size_t)n_layers * QP_BLOCK_GEMMS * sizeof *bare)) &&
        !resolve(r, n_layers, gemms, 0, bare, e, sizeof e))
        p = &bare[__builtin_ctz(gemms)];
    const qp_use_plan *x = &p->use[QP_PASS_FPROP][QP_OPND_X], *w = &p->use[QP_PASS_FPROP][QP_OPND_W],
                      *dy = &p->use[QP_PASS_DGRAD][QP_OPND_DY];
    /* uniform: every GEMM of every block the ends leave, every use of an
     * operand alike but for an RHT that only wgrad has */
    int uniform = 1;
    for (int l = 0; l < n_layers && uniform; l++) {
        if (l < first || l >= n_layers - last) continue;
        for (int g = 0; g < QP_BLOCK_GEMMS && uniform; g++)
            uniform = !(gemms >> g & 1u) || !memcmp(&plans[l * QP_BLOCK_GEMMS + g], p, sizeof *p);
    }
    const int rht = p->use[QP_PASS_WGRAD][QP_OPND_X].rht, rht_te = p->use[QP_PASS_WGRAD][QP_OPND_X].rht_te;
    for (int ps = 0; ps < QP_PASS_COUNT && uniform; ps++)
        for (int o = 0; o < QP_OPND_COUNT && uniform; o++) {
            if (!qp_pass_uses((qp_pass)ps, (qp_operand)o)) continue;
            qp_use_plan u = p->use[ps][o], ref = p->use[p->owner[o]][o];
            uniform = u.rht == (ps == QP_PASS_WGRAD ? rht : 0) && u.rht_te == (ps == QP_PASS_WGRAD ? rht_te : 0);
            u.rht = ref.rht = u.rht_te = ref.rht_te = 0;
            uniform = uniform && same_use(&u, &ref);
        }
    const int tensor_scaled = qp_formats[x->fmt].tensor_scale || qp_formats[w->fmt].tensor_scale ||
                              qp_formats[dy->fmt].tensor_scale;
    const int delayed = x->scaling == QP_SCALING_DELAYED || w->scaling == QP_SCALING_DELAYED ||
                        dy->scaling == QP_SCALING_DELAYED;
    snprintf(buf, len, "%.200s: x %s, w %s, dy %s%s%s%s, BF16 blocks first %d last %d%s%s", r->spec,
             qp_formats[x->fmt].name, qp_formats[w->fmt].name, qp_formats[dy->fmt].name,
             dy->sr ? " (stochastic rounding)" : "", rht_te ? ", TE's RHT on wgrad" : rht ? ", RHT on wgrad" : "",
             !tensor_scaled ? "" : delayed ? ", delayed scaling" : ", current scaling", first, last,
             r->smooth_swiglu ? ", Smooth-SwiGLU" : "", uniform ? "" : "; varies by block, GEMM or pass (recipe_plan)");
    free(bare);
}
