/* qs_shell.h — POSIX shell quoting, for commands shown to people (--dry-run)
 * and embedded in scripts (--slurm): a word is left bare when it has only
 * [A-Za-z0-9_@%+=:,./-], otherwise put in single quotes ('\'' for a quote). */
#ifndef QS_SHELL_H
#define QS_SHELL_H

#include <stdio.h>

void qs_shell_word(FILE *f, const char *word);
/* argv joined with spaces, each word quoted as needed. */
void qs_shell_cmd(FILE *f, char *const *argv);
/* The quoted command, quoted once more as one word (for a bash array). */
void qs_shell_cmd_word(FILE *f, char *const *argv);

#endif
