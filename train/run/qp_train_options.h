/* qp_train_options.h — qtrain's options as one table: each option's name,
 * the field of qp_train_opts it sets, its value syntax and its allowed
 * values, and whether an experiment file may set it.
 *
 * Owns: that table (with each option's help text, which qtrain --help and
 * --man print), the defaults (qp_train_opts_default), the spellings of the
 * enum-valued options (--arch, --device, --on-divergence, --grad-comm), and
 * the checks of a whole option set: each option's range, how they combine,
 * and the model shape they describe (qp_train_options_check). Every reader
 * of an option goes through it: qtrain's parser (qp_train_args.c),
 * qp_train_opts_check (qp_trainer.c), qsweep's check of an experiment
 * file's [base] and [grid] values (experiments/qs_opts.c) and of every run
 * of the grid before any starts (experiments/qs_grid.c), so a run qsweep
 * accepts is one qtrain starts, and a new option is one row.
 * No dependencies but the headers of the types it names, io/qp_cli.c and
 * train/model/qp_model_shape.c (qsweep compiles it in without the trainer). */
#ifndef QP_TRAIN_OPTIONS_H
#define QP_TRAIN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "qp_model.h"
#include "qp_trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QP_OPT_FLAG,      /* no value: sets a bool */
    QP_OPT_TEXT,      /* a string (a path, a recipe, a fault) */
    QP_OPT_INT,       /* an integer into an int or int64_t field */
    QP_OPT_NUM,       /* a finite number into a double */
    QP_OPT_CHOICE,    /* one of names[] into an enum field */
    QP_OPT_THREADS,   /* 'auto' (0) or an integer */
    QP_OPT_VALTOKENS, /* 'all' (-1) or a token count */
    QP_OPT_KIND_COUNT
} qp_opt_kind;

/* What a text option holds (qsweep checks recipes with the trainer's parser
 * and leaves paths to qtrain). */
typedef enum { QP_TEXT_PLAIN, QP_TEXT_PATH, QP_TEXT_RECIPE, QP_TEXT_KIND_COUNT } qp_text_kind;

typedef struct {
    const char *name; /* the flag without "--", e.g. "grad-accum" */
    qp_opt_kind kind;
    size_t offset, size; /* the field of qp_train_opts it sets */
    /* INT, NUM, THREADS, VALTOKENS: the allowed values, [lo, hi] or open at
     * an end (NUM: finite in any case) */
    double lo, hi;
    bool lo_open, hi_open;
    /* true: the parser refuses values outside the range ("--seed expects
     * ..."); false: the parser takes any value the field holds and
     * qp_train_opts_check judges it ("--dim must be ..."), so a value set
     * by a program gets the same judgement as one typed */
    bool at_parse;
    const char *const *names; /* CHOICE: the spellings, indexed by the enum */
    int n_names;
    qp_text_kind text; /* TEXT */
    size_t given;      /* 1 + the offset of a bool set when the option is given; 0: none */
    const char *not_swept; /* why an experiment file may not set it; NULL: it may */
    const char *arg;       /* the value's placeholder in --help and --man ("N", "FILE"); NULL for a flag */
    const char *help;      /* what it does, for --help and --man; "%D" stands for its default, "%R" for the recipe presets */
} qp_train_option;

extern const qp_train_option qp_train_options[];
extern const int qp_n_train_options;

/* The option named name (its flag without "--"; '_' and '-' are the same),
 * or NULL. */
const qp_train_option *qp_train_option_find(const char *name);

/* Whether text is a value of t: its syntax and, where t->at_parse or
 * judge_range, its range. 0 and the value in *o (when not NULL), or -1 with
 * "SHOWN expects ..., not 'text'" in err. */
int qp_train_option_parse(const qp_train_option *t, const char *shown, const char *text, bool judge_range,
                          qp_train_opts *o, char *err, size_t errlen);

/* The range checks of every option judged after parsing (!at_parse), on
 * o's values, then how the options combine (--steps or --tokens-per-param,
 * --heads divides --dim, ...): 0, or -1 with one line ("--NAME must be
 * ..., not VALUE"). What needs the model or the data (qp_model_check, the
 * corpus) is qp_train_opts_check's, after this. qsweep runs it on every run
 * of a grid before any starts. */
int qp_train_options_check(const qp_train_opts *o, char *err, size_t errlen);
/* The model the options describe, for data of vocabulary `vocab`. */
qp_gpt_config qp_train_model_config(const qp_train_opts *o, int vocab);

/* The range checks alone. */
int qp_train_options_check_ranges(const qp_train_opts *o, char *err, size_t errlen);

/* "an integer in 1..1024", "a number > 0", ... for t's values. */
void qp_train_option_values(const qp_train_option *t, char *buf, size_t len);

/* The value o holds in t's field, as it would be typed ("6", "0.0003",
 * "gpt", "auto", "all"; a flag: "on" or "off"). */
void qp_train_option_show(const qp_train_option *t, const qp_train_opts *o, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
