/* qs_opts.h — the qtrain options an experiment file may set.
 *
 * Owns: the keys accepted in [base] and [grid] — qtrain's options
 * (train/run/qp_train_options.h, spelled with '_' or '-') and model — the qtrain
 * arguments each one becomes, and the check of a value before any run
 * starts, so a typo in a 2-hour sweep is a `file:line:` error, not a failed
 * run. The syntax and range of a value are the option table's, which qtrain
 * parses and judges with, and recipes are checked with the trainer's own
 * parser (train/precision/qp_recipe.c), so the two can never disagree. Options qsweep
 * sets itself (out, resume, quiet, threads), qtrain's evaluation-only mode and
 * its test hooks are refused with the table's reason. */
#ifndef QS_OPTS_H
#define QS_OPTS_H

#include <stddef.h>

#include "qp_train_options.h"

/* How qsweep treats a key: model is qsweep's own (a size, qp_size_model,
 * becoming --layers --heads --dim); the others are qtrain's options
 * (qp_train_options.h): a flag is set with on or off, paths are qtrain's to
 * open, recipes are checked with the trainer's parser, any other value with
 * the option's own syntax and range. */
typedef enum { QS_OPT_VALUE, QS_OPT_FLAG, QS_OPT_PATH, QS_OPT_RECIPE, QS_OPT_MODEL } qs_opt_kind;

typedef struct {
    char key[40];               /* canonical spelling, e.g. "grad_accum" */
    qs_opt_kind kind;
    const qp_train_option *opt; /* qtrain's option; NULL for model */
} qs_opt;

/* The option for a key ('-' and '_' are the same), or NULL. */
const qs_opt *qs_opt_find(const char *key);
/* For keys qsweep refuses on purpose: why (one line); NULL otherwise. */
const char *qs_opt_reserved(const char *key);
/* Check a value; 0, or -1 with a one-line message (without file:line). */
int qs_opt_check(const qs_opt *o, const char *value, char *err, size_t errlen);
/* The qtrain arguments of key = value: "--grad-accum" "4"; a flag's "on"
 * gives the flag alone, its "off" nothing. How many (0..2) in args[]. */
int qs_opt_args(const qs_opt *o, const char *value, const char *args[2], char *flag, size_t flag_len);
/* Every accepted key, comma-separated, for error messages and --help. */
const char *qs_opt_names(void);

#endif
