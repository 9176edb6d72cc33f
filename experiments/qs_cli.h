/* qs_cli.h — qsweep's command line: arguments in, a qs_cli out.
 *
 * Owns: qsweep's option names and which combinations are allowed. A
 * function of its own (no exit, no printing) so the fuzzer and tests can
 * drive it; main prints the message with "qsweep: " in front. */
#ifndef QS_CLI_H
#define QS_CLI_H

#include <stddef.h>

enum { QS_CLI_OK = 0, QS_CLI_HELP = 1, QS_CLI_BAD = 2 };

typedef struct {
    const char *file, *out, *data, *qtrain, *summarize, *status; /* into argv; NULL when not given */
    int jobs, dry_run, slurm, submit;   /* submit implies slurm */
} qs_cli;

/* Parse argv[1..argc-1]. QS_CLI_OK, QS_CLI_HELP (-h/--help), or QS_CLI_BAD
 * with a one-line message (without the program name) in err. */
int qs_cli_parse(int argc, char **argv, qs_cli *c, char *err, size_t errlen);

#endif
