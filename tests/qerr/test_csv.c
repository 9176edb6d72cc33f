/* test_csv.c — io/qp_csv.c, the CSV field rule of qsweep's, qerr's and
 * qplot's CSV files, checked against the bytes RFC 4180 asks for and read
 * back by Python's csv module's rule (a quoted field's doubled quotes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_csv.h"
#include "qp_test.h"

static void str_is(const char *in, const char *want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    qp_csv_str(f, in);
    fclose(f);
    CHECK(!strcmp(buf, want), "'%s' -> [%s], want [%s]", in, buf, want);
    free(buf);
}

static void real_is(double x, const char *want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    qp_csv_real(f, x);
    fclose(f);
    CHECK(!strcmp(buf, want), "%g -> [%s], want [%s]", x, buf, want);
    if (isfinite(x)) CHECK(strtod(buf, NULL) == x, "%.17g round-trips through [%s]", x, buf);
    free(buf);
}

int main(void)
{
    str_is("", "");
    str_is("plain", "plain");
    str_is("recipe=nvfp4_seed=1", "recipe=nvfp4_seed=1");
    str_is("in middle", "in middle");
    str_is("a,b", "\"a,b\"");
    str_is("say \"hi\"", "\"say \"\"hi\"\"\"");
    str_is("\"", "\"\"\"\"");
    str_is("two\nlines", "\"two\nlines\"");
    str_is("cr\r", "\"cr\r\"");
    str_is(" lead", "\" lead\"");
    str_is("trail ", "\"trail \"");
    str_is(" ", "\" \"");
    real_is(NAN, "");
    real_is(INFINITY, "inf");
    real_is(-INFINITY, "-inf");
    real_is(0.1, "0.10000000000000001");
    real_is(-0.0, "-0");
    real_is(1e300, "1.0000000000000001e+300");
    real_is(5e-324, "4.9406564584124654e-324");
    real_is(3.0, "3");
    return qp_test_finish("test_csv");
}
