/* qp_cli.h — the command-line conventions qtrain, qsweep, qplot and qerr
 * share, so the four tools read and describe their options one way.
 *
 * Owns: the option row (name, short name, value placeholder, help text),
 * the walk over argv (--opt value, --opt=value, -o value, -oVALUE, "--"
 * ending the options), the refusal of an unknown option with the nearest
 * known one suggested (one edit distance for every tool), the wording of a
 * value's allowed range ("an integer in 1..1024", "a number in [0, 1)") and
 * of its refusal ("--opt expects ..., not 'x'"), and the two renderings of
 * a table: the OPTIONS part of --help, and a roff man page (--man). A tool
 * keeps its own table and switch; whatever --help lists, --man lists,
 * because both print the table the parser reads.
 * No dependencies but the C library (no printing except into the FILE a
 * caller hands in, no exit), so the fuzzers drive the parsers built on it. */
#ifndef QP_CLI_H
#define QP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name; /* the long name without "--", e.g. "output" */
    char short_name;  /* 'o' for -o; 0: none */
    const char *arg;  /* the value's placeholder, e.g. "FILE"; NULL: a flag, which takes no value */
    const char *help; /* what it does: sentences, wrapped by the printers; "\n" starts a new line */
    int id;           /* what the tool's parser switches on */
} qp_cli_opt;

/* The walk over argv[1..argc-1]. */
typedef struct {
    int i;         /* the next word (start: 1) */
    bool only_args; /* after "--": every word is an argument */
} qp_cli_iter;

enum {
    QP_CLI_DONE = -1, /* no words left */
    QP_CLI_ARG = -2,  /* a word that is not an option ("-" included): *val */
    QP_CLI_BAD = -3,  /* an unknown option, a missing or unwanted value: one line in err */
};

/* The next item of argv: the index into tab of an option (with its value in
 * *val, NULL for a flag), QP_CLI_ARG, QP_CLI_DONE or QP_CLI_BAD. Long names
 * match exactly; "--name=value" and "--name value" are the same, so are
 * "-x value" and "-xvalue" for a short name that takes a value. */
int qp_cli_next(qp_cli_iter *it, int argc, char **argv, const qp_cli_opt *tab, int n, const char **val, char *err,
                size_t errlen);

/* The edit distance of a and b (bytes): insertions, deletions, substitutions
 * and transpositions of neighbours count one each (optimal string
 * alignment); the longer length when one is longer than 63 bytes. */
int qp_cli_distance(const char *a, const char *b);

/* The name among names[0..n-1] nearest to word (ties: the first), when it
 * is near enough to be a typo of it (at most a third of its length, and at
 * most 3, edits away); NULL otherwise. NULL entries are skipped. */
const char *qp_cli_nearest(const char *word, const char *const *names, int n);

/* "unknown option 'WORD' (did you mean --NAME?)" or "... (see --help)",
 * the nearest taken from tab's long names. word is the word as typed
 * (without any "=value"). */
void qp_cli_unknown(const char *word, const qp_cli_opt *tab, int n, char *err, size_t errlen);

/* The allowed values of a number: "an integer in 1..1024", "an integer >= 0",
 * "a number > 0", "a number in [0, 1)", "a finite number". hi >= 2^63 for
 * an integer reads as no upper bound; infinite ends as open. */
void qp_cli_range(double lo, double hi, bool lo_open, bool hi_open, bool integer, char *buf, size_t len);

/* The one refusal of a value: "OPT expects VALUES, not 'TEXT'". */
void qp_cli_expects(const char *opt, const char *values, const char *text, char *err, size_t errlen);

/* An integer or a number in the range, or -1 with qp_cli_expects's line. */
int qp_cli_int(const char *opt, const char *text, long long lo, long long hi, long long *out, char *err,
               size_t errlen);
int qp_cli_num(const char *opt, const char *text, double lo, double hi, bool lo_open, bool hi_open, double *out,
               char *err, size_t errlen);

/* The options part of --help: one entry per row, "  -o, --output FILE" then
 * its help wrapped beside it. */
void qp_cli_help(FILE *f, const qp_cli_opt *tab, int n);

/* A man page's parts besides OPTIONS (plain text; "\n\n" starts a new
 * paragraph, "\n" a new line). */
typedef struct {
    const char *name;        /* "qtrain" */
    const char *summary;     /* the NAME line after the dash */
    const char *synopsis;    /* one usage form per line, without the program name */
    const char *description; /* DESCRIPTION */
    const char *exit_status; /* EXIT STATUS */
    const char *see_also;    /* SEE ALSO, e.g. "qsweep(1), qplot(1)" */
    const char *version;     /* for the footer */
} qp_cli_page;

/* The page in roff (man(7)): NAME, SYNOPSIS, DESCRIPTION, OPTIONS (every row
 * of tab), EXIT STATUS, SEE ALSO. */
void qp_cli_man(FILE *f, const qp_cli_page *page, const qp_cli_opt *tab, int n);

#ifdef __cplusplus
}
#endif
#endif
