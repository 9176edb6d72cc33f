/* qs_shell.c — shell quoting (see qs_shell.h). */
#include "qs_shell.h"

#include <stdlib.h>
#include <string.h>

static int bare(const char *w)
{
    if (!*w) return 0;
    for (; *w; w++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-", *w)) return 0;
    return 1;
}

void qs_shell_word(FILE *f, const char *word)
{
    if (bare(word)) {
        fputs(word, f);
        return;
    }
    fputc('\'', f);
    for (const char *c = word; *c; c++)
        if (*c == '\'') fputs("'\\''", f);
        else fputc(*c, f);
    fputc('\'', f);
}

void qs_shell_cmd(FILE *f, char *const *argv)
{
    for (int i = 0; argv[i]; i++) {
        if (i) fputc(' ', f);
        qs_shell_word(f, argv[i]);
    }
}

void qs_shell_cmd_word(FILE *f, char *const *argv)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return;
    qs_shell_cmd(m, argv);
    fclose(m);
    /* always quoted, so the array element stays one word whatever it holds */
    fputc('\'', f);
    for (const char *c = buf; c && *c; c++)
        if (*c == '\'') fputs("'\\''", f);
        else fputc(*c, f);
    fputc('\'', f);
    free(buf);
}
