/* qp_note.c — once-only notes on stderr (see qp_note.h). */
#include "qp_note.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char **said;
static size_t nsaid, capsaid;

void qp_note(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < nsaid; i++)
        if (!strcmp(said[i], msg)) return;
    fprintf(stderr, "qplot: note: %s\n", msg);
    if (nsaid == capsaid) { /* remembering is best effort: at worst a note repeats */
        size_t cap = capsaid ? 2 * capsaid : 16;
        char **ns = realloc(said, cap * sizeof *ns);
        if (!ns) return;
        said = ns, capsaid = cap;
    }
    char *copy = strdup(msg);
    if (copy) said[nsaid++] = copy;
}
