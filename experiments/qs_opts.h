/* qs_opts.h — the qtrain options an experiment file may set.
 *
 * Owns: the list of keys accepted in [base] and [grid] (qtrain's value
 * options, spelled with '_' or '-'), the qtrain flag each one becomes, and
 * the check of a value before any run starts — so a typo in a 2-hour sweep
 * is a `file:line:` error, not a failed run. Options qsweep sets itself
 * (out, resume, quiet, threads) and qtrain's evaluation-only mode are refused
 * with a message saying why. Recipes are checked with the trainer's own
 * parser (train/qp_recipe.c), so the two can never disagree. */
#ifndef QS_OPTS_H
#define QS_OPTS_H

#include <stddef.h>

typedef enum { QS_OPT_INT, QS_OPT_NUM, QS_OPT_PATH, QS_OPT_RECIPE, QS_OPT_CHOICE, QS_OPT_VALTOKENS /* count or 'all' */,
               QS_OPT_MODEL /* a size: qp_size_model, becomes --layers --heads --dim */ } qs_opt_kind;

typedef struct {
    const char *key;   /* canonical spelling, e.g. "grad_accum" */
    qs_opt_kind kind;
    double lo, hi;     /* QS_OPT_INT / QS_OPT_NUM: allowed range */
    int lo_open;       /* 1: the value must be > lo (not >=) */
} qs_opt;

/* The option for a key ('-' and '_' are the same), or NULL. */
const qs_opt *qs_opt_find(const char *key);
/* For keys qsweep refuses on purpose: why (one line); NULL otherwise. */
const char *qs_opt_reserved(const char *key);
/* Check a value; 0, or -1 with a one-line message (without file:line). */
int qs_opt_check(const qs_opt *o, const char *value, char *err, size_t errlen);
/* "--grad-accum" for grad_accum. */
void qs_opt_flag(const qs_opt *o, char *buf, size_t len);
/* Every accepted key, comma-separated, for error messages and --help. */
const char *qs_opt_names(void);

#endif
