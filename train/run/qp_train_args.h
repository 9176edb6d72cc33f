/* qp_train_args.h — qtrain's command line: options in, qp_train_opts out.
 *
 * Owns: reading argv, --help and --man. Each option's name, field, value syntax
 * and range are qp_train_options.h's table, which qsweep reads too; values
 * are only parsed here (options whose range is refused as parsed aside) and
 * qp_train_opts_check (qp_trainer.h) judges them. A function of its own so
 * the fuzzer and the bad-input tests can drive it without a run. */
#ifndef QP_TRAIN_ARGS_H
#define QP_TRAIN_ARGS_H

#include <stddef.h>
#include <stdio.h>

#include "qp_trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { QP_ARGS_OK = 0, QP_ARGS_HELP = 1, QP_ARGS_BAD = 2, QP_ARGS_VERSION = 3, QP_ARGS_MAN = 4 };

/* Parse argv[1..argc-1] into *o (which holds the defaults beforehand).
 * Returns QP_ARGS_OK, QP_ARGS_HELP (-h/--help seen), QP_ARGS_VERSION
 * (--version), QP_ARGS_MAN (--man), or QP_ARGS_BAD with a one-line message
 * (no program name) in err. "--opt value" and "--opt=value" are the same. */
int qp_train_parse_args(int argc, char **argv, qp_train_opts *o, char *err, size_t errlen);
/* --help and --man (roff): both print qp_train_options[], the table the
 * parser reads. */
void qp_train_usage(FILE *f);
void qp_train_man(FILE *f);
/* --explain: o->recipe expanded for o->layers blocks, one rule per pass x
 * operand x block group (qp_recipe_explain) after two comment lines, to out.
 * QP_EXIT_OK, or QP_EXIT_BAD_INPUT with a one-line message. */
int qp_train_explain(const qp_train_opts *o, FILE *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
