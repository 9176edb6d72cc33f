/* fuzz_args.c — libFuzzer target for the command lines of qtrain, qsweep
 * and qerr: argv built from the input (NUL- or newline-separated words, at
 * most 64) goes through qp_train_parse_args, then qp_train_opts_check and
 * qp_recipe_parse on the result, as qtrain does before any file is touched,
 * and through qsweep's qs_cli_parse and qerr's qerr_parse_args; each word is also tried as a recipe on
 * its own.
 *
 * Contract: every refusal is one non-empty line; accepted options are in
 * the ranges the trainer relies on, and an accepted recipe describes itself
 * in one line and resolves for every layer count and architecture, or says
 * in one line why not; its expansion (qtrain --explain) is itself a recipe resolving to the
 * same plans. Any breach aborts. Replayed over the
 * corpus by fuzz_replay.c in the ordinary build. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qerr.h"
#include "qp_model.h"
#include "qp_recipe.h"
#include "qs_cli.h"
#include "qp_train_args.h"
#include "qp_trainer.h"

#define MAX_WORDS 64

static void one_line(const char *err)
{
    if (!err[0] || strchr(err, '\n')) abort();
}

/* An accepted recipe resolves (or refuses the model in one line), describes
 * itself in one line, and its expansion — one rule per line — is a recipe
 * that resolves to the very same plans. */
static void check_recipe(const char *spec, int layers, unsigned gemms)
{
    static qp_recipe r, again;
    static qp_linear_plan plans[1024 * QP_BLOCK_GEMMS], plans2[1024 * QP_BLOCK_GEMMS];
    static char text[1 << 16];
    char err[1024], desc[1024];
    err[0] = '\0';
    if (layers < 1 || layers > 1024) abort();
    if (qp_recipe_parse(spec, &r, err, sizeof err)) {
        one_line(err);
        return;
    }
    int first = -1, last = -1;
    qp_recipe_bf16_blocks(&r, layers, &first, &last);
    if (first < 0 || last < 0) abort();
    err[0] = '\0';
    if (qp_recipe_resolve(&r, layers, gemms, plans, err, sizeof err)) {
        one_line(err);
        return;
    }
    qp_recipe_describe(&r, plans, layers, gemms, desc, sizeof desc);
    if (!desc[0] || strchr(desc, '\n')) abort();
    const int n = qp_recipe_explain(&r, plans, layers, gemms, text, sizeof text);
    if (n <= 0) abort();
    if ((size_t)n >= sizeof text) return; /* longer than any --recipe: nothing to compare */
    if (text[n - 1] != '\n') abort();
    text[n - 1] = '\0';
    for (char *c = text; *c; c++)
        if (*c == '\n') *c = ',';
    if (strlen(text) >= QP_RECIPE_SPEC_MAX) return; /* too long to be a --recipe: nothing to compare */
    if (qp_recipe_parse(text, &again, err, sizeof err) ||
        qp_recipe_resolve(&again, layers, gemms, plans2, err, sizeof err) ||
        memcmp(plans, plans2, (size_t)layers * QP_BLOCK_GEMMS * sizeof plans[0]) ||
        again.smooth_swiglu != r.smooth_swiglu)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf) abort();
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_WORDS + 2];
    int argc = 0;
    argv[argc++] = "qtrain";
    for (char *p = buf; argc <= MAX_WORDS;) {
        argv[argc++] = p;
        const size_t n = strcspn(p, "\n"); /* NUL ends a word too */
        const size_t z = strlen(p);
        if (n < z) {
            p[n] = '\0';
            p += n + 1;
        } else if (p + z < buf + size) {
            p += z + 1;
        } else {
            break;
        }
    }
    argv[argc] = NULL;

    qp_train_opts o;
    qp_train_opts_default(&o);
    char err[2048];
    const int rc = qp_train_parse_args(argc, argv, &o, err, sizeof err);
    if (rc == QP_ARGS_BAD) one_line(err);
    else if (rc != QP_ARGS_OK && rc != QP_ARGS_HELP && rc != QP_ARGS_VERSION && rc != QP_ARGS_MAN) abort();
    if (rc == QP_ARGS_OK) {
        err[0] = '\0';
        if (qp_train_opts_check(&o, err, sizeof err)) {
            one_line(err);
        } else {
            if (o.layers < 1 || o.layers > 1024 || o.heads < 1 || o.dim % o.heads || o.seq < 1 || o.batch < 1 ||
                o.steps < 0 || !(o.val_frac > 0 && o.val_frac < 1) || !isfinite(o.lr) || isnan(o.min_lr) ||
                !(o.weight_decay >= 0) || !(o.grad_clip >= 0) || !(o.divergence_factor > 1))
                abort();
            check_recipe(o.recipe, o.layers, qp_model_gemm_mask(&(qp_gpt_config){.arch = (qp_arch)o.arch}));
        }
    }
    /* each word for a GPT's blocks, a Llama's, and no model's */
    for (int i = 1; i < argc; i++)
        check_recipe(argv[i], 1 + i % 7, i % 3 == 2 ? 0 : qp_model_gemm_mask(&(qp_gpt_config){.arch = (qp_arch)(i % 3)}));

    qs_cli c;
    const int qc = qs_cli_parse(argc, argv, &c, err, sizeof err);
    if (qc == QS_CLI_BAD) one_line(err);
    else if (qc == QS_CLI_OK) {
        if (c.jobs < 1 || c.jobs > 1024) abort();
        if (c.plan) { /* --plan FILE: no other experiment file or mode; --out defaults (sweeps/NAME) */
            if (c.file || c.summarize || c.status || c.slurm) abort();
        } else if ((c.summarize || c.status) ? (c.file || c.out || c.data || c.dry_run || c.slurm || (c.summarize && c.status))
                                             : (!c.file || !c.out || (c.dry_run && c.slurm)))
            abort();
        if (c.submit && !c.slurm) abort();
    } else if (qc != QS_CLI_HELP && qc != QS_CLI_VERSION && qc != QS_CLI_MAN) {
        abort();
    }

    qerr_opts q;
    const int ec = qerr_parse_args(argc, argv, &q, err, sizeof err);
    if (ec == QERR_ARGS_BAD) {
        one_line(err);
        if (q.in || q.command) abort(); /* nothing left to free */
    } else if (ec == QERR_ARGS_OK) {
        if (q.nvar < 1 || q.nvar > QERR_MAX_VARIANTS || q.nin < 1 || q.threads < 1 || q.threads > 256 ||
            (q.csv && q.json) || !q.command)
            abort();
        for (int i = 0; i < q.nin; i++)
            if (!q.in[i].path || (q.in[i].kind == QERR_IN_RAW && (q.in[i].rows < 1 || q.in[i].cols < 1))) abort();
        qerr_opts_free(&q);
    } else if (ec != QERR_ARGS_HELP && ec != QERR_ARGS_VERSION && ec != QERR_ARGS_MAN) {
        abort();
    }
    free(buf);
    return 0;
}
