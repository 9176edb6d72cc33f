/* qs_cli.h — qsweep's command line: arguments in, a qs_cli out.
 *
 * Owns: qsweep's option table and which combinations are allowed. A
 * function of its own (no exit, no printing) so the fuzzer and tests can
 * drive it; main prints the message with "qsweep: " in front. */
#ifndef QS_CLI_H
#define QS_CLI_H

#include <stddef.h>

#include "qp_cli.h"

enum { QS_CLI_OK = 0, QS_CLI_HELP = 1, QS_CLI_BAD = 2, QS_CLI_VERSION = 3, QS_CLI_MAN = 4 };

/* The options: the one table the parser reads and --help and --man print. */
extern const qp_cli_opt qs_cli_options[];
extern const int qs_cli_n_options;

typedef struct {
    const char *file, *out, *data, *qtrain, *summarize, *status, *plan; /* into argv; NULL when not given */
    int jobs, dry_run, slurm, submit;   /* submit implies slurm */
} qs_cli;

/* Parse argv[1..argc-1] ("--opt value" and "--opt=value" alike). QS_CLI_OK,
 * QS_CLI_HELP (-h/--help), QS_CLI_VERSION, QS_CLI_MAN, or QS_CLI_BAD with a
 * one-line message (without the program name) in err. */
int qs_cli_parse(int argc, char **argv, qs_cli *c, char *err, size_t errlen);

#endif
