/* qp_csv.c — the one rule for a CSV field (see qp_csv.h). */
#include "qp_csv.h"

#include <math.h>
#include <string.h>

void qp_csv_str(FILE *f, const char *s)
{
    const size_t n = strlen(s);
    if (!strpbrk(s, ",\"\r\n") && (!n || (s[0] != ' ' && s[n - 1] != ' '))) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void qp_csv_real(FILE *f, double x)
{
    if (isnan(x)) return;
    if (isinf(x)) fputs(x > 0 ? "inf" : "-inf", f);
    else fprintf(f, "%.17g", x);
}
