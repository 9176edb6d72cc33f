/* qp_train_args.c — qtrain's command line (see qp_train_args.h). */
#include "qp_train_args.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_cli.h"
#include "qp_gemm.h"
#include "qp_model.h"
#include "qp_recipe.h"
#include "qp_train_options.h"
#include "qp_version.h"

static const char *const HEAD =
    "Train a GPT (nanoGPT/llm.c architecture) or a Llama on the CPU with every linear layer's GEMMs\n"
    "in a chosen precision, logging to an HDF5 run file.\n";
static const char *const SIGNALS =
    "SIGINT/SIGTERM stop at the next step boundary (status \"stopped\", exit 130; --resume continues).\n";
static const char *const EXIT_STATUS = "0 done, 1 runtime error, 2 bad input, 3 diverged, 130 stopped.";

/* qtrain's own options after the table's: they do not set a field */
enum { X_HELP, X_VERSION, X_MAN, X_COUNT };
#define MAX_ROWS 64
#define HELP_LEN 2400

/* qp_train_options[] as the rows qp_cli reads (id: the index into it, or
 * the table's count + X_*), with "%D" in a help text replaced by the
 * default and "%R" by the recipe presets when expand is set, and the values the option takes appended
 * (qp_train_option_values) when values is set. n rows in tab. */
static int cli_table(qp_cli_opt *tab, bool expand, bool values)
{
    static char help[MAX_ROWS][HELP_LEN];
    qp_train_opts d;
    qp_train_opts_default(&d);
    int n = 0;
    for (int i = 0; i < qp_n_train_options && n < MAX_ROWS - X_COUNT; i++, n++) {
        const qp_train_option *t = &qp_train_options[i];
        tab[n] = (qp_cli_opt){.name = t->name, .arg = t->kind == QP_OPT_FLAG ? NULL : t->arg ? t->arg : "VALUE",
                              .help = t->help, .id = i};
        const bool valued = values && t->kind != QP_OPT_FLAG && t->kind != QP_OPT_TEXT;
        if (!expand || !t->help || (!strstr(t->help, "%D") && !strstr(t->help, "%R") && !valued)) continue;
        char dflt[256], presets[QP_RECIPE_HELP_MAX];
        qp_train_option_show(t, &d, dflt, sizeof dflt);
        size_t k = 0;
        for (const char *p = t->help; *p && k + 1 < HELP_LEN; p++) {
            if (p[0] == '%' && (p[1] == 'D' || p[1] == 'R')) {
                if (p[1] == 'R') qp_recipe_presets_help(presets, sizeof presets);
                k += (size_t)snprintf(help[n] + k, HELP_LEN - k, "%s", p[1] == 'D' ? dflt : presets);
                if (k >= HELP_LEN) k = HELP_LEN - 1;
                p++;
            } else {
                help[n][k++] = *p;
            }
        }
        help[n][k] = 0;
        if (valued) {
            char v[160];
            qp_train_option_values(t, v, sizeof v);
            snprintf(help[n] + k, HELP_LEN - k, "%s Values: %s.", k && help[n][k - 1] == '.' ? "" : ".", v);
        }
        tab[n].help = help[n];
    }
    tab[n++] = (qp_cli_opt){.name = "help", .short_name = 'h', .help = "this text", .id = qp_n_train_options + X_HELP};
    tab[n++] = (qp_cli_opt){.name = "version", .help = "print qtrain's version and exit",
                            .id = qp_n_train_options + X_VERSION};
    tab[n++] = (qp_cli_opt){.name = "man", .help = "print this manual as a roff man page and exit",
                            .id = qp_n_train_options + X_MAN};
    return n;
}

void qp_train_usage(FILE *f)
{
    qp_cli_opt tab[MAX_ROWS];
    const int n = cli_table(tab, true, false);
    fprintf(f, "usage: qtrain --data FILE [options]\n%s", HEAD);
    qp_cli_help(f, tab, n);
    fprintf(f, "%sExit: %s\n", SIGNALS, EXIT_STATUS);
}

void qp_train_man(FILE *f)
{
    qp_cli_opt tab[MAX_ROWS];
    const int n = cli_table(tab, true, true);
    char desc[1024];
    snprintf(desc, sizeof desc, "%s\n\n%s", HEAD, SIGNALS);
    const qp_cli_page page = {
        .name = "qtrain",
        .summary = "train a GPT or Llama with its GEMMs in BF16, FP8, MXFP8/6/4 or NVFP4",
        .synopsis = "--data FILE [options]",
        .description = desc,
        .exit_status = EXIT_STATUS,
        .see_also = "qsweep(1), qplot(1), qerr(1); docs/qtrain.md, docs/recipes.md and docs/runfile.md in the "
                    "qprec sources",
        .version = qp_version(),
    };
    qp_cli_man(f, &page, tab, n);
}

int qp_train_parse_args(int argc, char **argv, qp_train_opts *o, char *err, size_t errlen)
{
    err[0] = 0;
    qp_cli_opt tab[MAX_ROWS];
    const int n = cli_table(tab, false, false);
    qp_cli_iter it = {1, false};
    for (;;) {
        const char *v;
        const int k = qp_cli_next(&it, argc, argv, tab, n, &v, err, errlen);
        if (k == QP_CLI_DONE) break;
        if (k == QP_CLI_BAD) return QP_ARGS_BAD;
        if (k == QP_CLI_ARG) {
            snprintf(err, errlen, "unexpected argument '%.200s' (see --help)", v);
            return QP_ARGS_BAD;
        }
        const int id = tab[k].id;
        if (id == qp_n_train_options + X_HELP) return QP_ARGS_HELP;
        if (id == qp_n_train_options + X_VERSION) return QP_ARGS_VERSION;
        if (id == qp_n_train_options + X_MAN) return QP_ARGS_MAN;
        const qp_train_option *t = &qp_train_options[id];
        char shown[80];
        snprintf(shown, sizeof shown, "--%s", t->name);
        if (qp_train_option_parse(t, shown, v ? v : "", false, o, err, errlen)) return QP_ARGS_BAD;
    }
    const char *isa = getenv("QP_MODEL_ISA");
    if (!qp_gpt_kernel_isa_capped(isa)) {
        snprintf(err, errlen, "QP_MODEL_ISA=%s: not a kernel level (baseline, x86-64-v3 or x86-64-v4)", isa);
        return QP_ARGS_BAD;
    }
    if (qp_gemm_choice_check(err, errlen)) return QP_ARGS_BAD;
    return QP_ARGS_OK;
}

int qp_train_explain(const qp_train_opts *o, FILE *out, char *err, size_t errlen)
{
    if (o->layers < 1 || o->layers > 1024) {
        snprintf(err, errlen, "--layers must be in 1..1024, not %d", o->layers);
        return QP_EXIT_BAD_INPUT;
    }
    if ((unsigned)o->arch >= QP_ARCH_COUNT) {
        snprintf(err, errlen, "--arch out of range");
        return QP_EXIT_BAD_INPUT;
    }
    /* the GEMMs are the architecture's; their shapes do not matter here */
    const unsigned gemms = qp_model_gemm_mask(&(qp_gpt_config){.arch = (qp_arch)o->arch});
    qp_recipe *r = malloc(sizeof *r);
    qp_linear_plan *plans = malloc((size_t)o->layers * QP_BLOCK_GEMMS * sizeof *plans);
    char *text = NULL, desc[1400], names[80];
    int rc = QP_EXIT_BAD_INPUT;
    if (!r || !plans) {
        snprintf(err, errlen, "out of memory");
        rc = QP_EXIT_RUNTIME;
    } else if (!qp_recipe_parse(o->recipe, r, err, errlen) &&
               !qp_recipe_resolve(r, o->layers, gemms, plans, err, errlen)) {
        text = qp_recipe_explain_text(r, plans, o->layers, gemms);
        rc = QP_EXIT_RUNTIME;
        if (!text) {
            snprintf(err, errlen, "out of memory");
        } else {
            qp_gemm_list(gemms, names, sizeof names);
            qp_recipe_describe(r, plans, o->layers, gemms, desc, sizeof desc);
            fprintf(out, "# recipe '%s' for %d blocks of --arch %s (GEMMs %s): one rule per pass x operand x block\n"
                         "# group; joined by ',' they are the recipe spelled out (docs/recipes.md). %s\n%s",
                    r->spec, o->layers, qp_arch_names[o->arch], names, desc, text);
            if (fflush(out) || ferror(out)) snprintf(err, errlen, "writing the expanded recipe failed");
            else rc = QP_EXIT_OK;
        }
    }
    free(text);
    free(plans);
    free(r);
    return rc;
}
