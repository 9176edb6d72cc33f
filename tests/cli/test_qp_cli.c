/* test_qp_cli.c — io/qp_cli's pieces on their own: the edit distance
 * against hand-counted cases, the nearest-name rule, the walk over argv
 * (both value forms, short options, "--", refusals), the range wording, and
 * roff escaping of the man page writer. */
#include <stdlib.h>

#include "qp_cli.h"
#include "qp_test.h"

enum { A_OUT, A_JOBS, A_DRY, A_COUNT };
static const qp_cli_opt tab[] = {
    {.id = A_OUT, .name = "out", .short_name = 'o', .arg = "DIR", .help = "where\n\nnext paragraph"},
    {.id = A_JOBS, .name = "jobs", .short_name = 'j', .arg = "N", .help = "how many"},
    {.id = A_DRY, .name = "dry-run", .help = ".starts with a dot -- and \\ a backslash"},
};
#define N (int)(sizeof tab / sizeof tab[0])

/* the items of argv as "id=value" / "arg=value" / "bad:message" joined by ' ' */
static void walk(int argc, char **argv, char *buf, size_t len)
{
    qp_cli_iter it = {1, false};
    size_t k = 0;
    buf[0] = 0;
    for (;;) {
        const char *v;
        char err[256];
        const int r = qp_cli_next(&it, argc, argv, tab, N, &v, err, sizeof err);
        if (r == QP_CLI_DONE) return;
        if (r == QP_CLI_BAD) {
            snprintf(buf + k, len - k, "bad:%s", err);
            return;
        }
        k += (size_t)snprintf(buf + k, len - k, "%s%s=%s", k ? " " : "", r == QP_CLI_ARG ? "arg" : tab[r].name,
                              v ? v : "-");
    }
}

#define WALK(want, ...)                                                              \
    do {                                                                             \
        char *argv[] = {"tool", __VA_ARGS__, NULL};                                  \
        char got[512];                                                               \
        walk((int)(sizeof argv / sizeof argv[0]) - 1, argv, got, sizeof got);        \
        CHECK(!strcmp(got, want), "walk: got '%s', want '%s'", got, want);           \
    } while (0)

int main(void)
{
    /* distances counted by hand */
    static const struct {
        const char *a, *b;
        int d;
    } dist[] = {{"", "", 0},          {"steps", "steps", 0}, {"step", "steps", 1},     {"stpes", "steps", 1},
                {"kitten", "sitting", 3}, {"", "abc", 3},   {"recpie", "recipe", 1}, {"ab", "ba", 1},
                {"abc", "ca", 3},      {"grad_accum", "grad-accum", 1}};
    for (size_t i = 0; i < sizeof dist / sizeof dist[0]; i++) {
        CHECK(qp_cli_distance(dist[i].a, dist[i].b) == dist[i].d, "d(%s, %s) = %d, want %d", dist[i].a, dist[i].b,
              qp_cli_distance(dist[i].a, dist[i].b), dist[i].d);
        CHECK(qp_cli_distance(dist[i].b, dist[i].a) == dist[i].d, "symmetric: %s %s", dist[i].a, dist[i].b);
    }
    const char *names[] = {"steps", "seed", "seq", NULL, "tokens-per-param"};
    CHECK(!strcmp(qp_cli_nearest("step", names, 5), "steps"), "step -> steps");
    CHECK(!strcmp(qp_cli_nearest("sed", names, 5), "seed"), "sed -> seed (the first of equals)");
    CHECK(qp_cli_nearest("frobnicate", names, 5) == NULL, "nothing near frobnicate");
    CHECK(qp_cli_nearest("xy", names, 5) == NULL, "a two-letter word is near nothing it does not nearly spell");
    CHECK(!strcmp(qp_cli_nearest("tokens-per-parm", names, 5), "tokens-per-param"), "a long name, one letter off");

    WALK("out=D jobs=4 dry-run=- arg=x", "--out", "D", "--jobs=4", "--dry-run", "x");
    WALK("out=D jobs=4 arg=--jobs", "-o", "D", "-j4", "--", "--jobs");
    WALK("out= arg=-", "--out=", "-");
    WALK("out=--jobs", "--out", "--jobs"); /* a value may look like an option */
    WALK("bad:unknown option '--job' (did you mean --jobs?)", "--job", "2");
    WALK("bad:unknown option '--frobnicate' (see --help)", "--frobnicate=1");
    WALK("bad:--dry-run takes no value (see --help)", "--dry-run=yes");
    WALK("bad:--jobs needs a value (see --help)", "--jobs");
    WALK("bad:-j needs a value (see --help)", "-j");
    WALK("bad:unknown option '-x' (see --help)", "-x");

    char buf[128], err[256];
    long long v;
    double d;
    qp_cli_range(1, 1024, false, false, true, buf, sizeof buf);
    CHECK(!strcmp(buf, "an integer in 1..1024"), "%s", buf);
    qp_cli_range(0, 9.3e18, false, false, true, buf, sizeof buf);
    CHECK(!strcmp(buf, "an integer >= 0"), "%s", buf);
    qp_cli_range(0, 1, false, true, false, buf, sizeof buf);
    CHECK(!strcmp(buf, "a number in [0, 1)"), "%s", buf);
    qp_cli_range(0, INFINITY, true, false, false, buf, sizeof buf);
    CHECK(!strcmp(buf, "a number > 0"), "%s", buf);
    CHECK(qp_cli_int("--jobs", "0", 1, 1024, &v, err, sizeof err) == -1 &&
              !strcmp(err, "--jobs expects an integer in 1..1024, not '0'"), "%s", err);
    CHECK(qp_cli_int("--jobs", "12x", 1, 1024, &v, err, sizeof err) == -1, "12x");
    CHECK(qp_cli_int("--jobs", "", 1, 1024, &v, err, sizeof err) == -1, "empty");
    CHECK(qp_cli_int("--jobs", "1024", 1, 1024, &v, err, sizeof err) == 0 && v == 1024, "1024");
    CHECK(qp_cli_num("--smooth", "1", 0, 1, false, true, &d, err, sizeof err) == -1 &&
              !strcmp(err, "--smooth expects a number in [0, 1), not '1'"), "%s", err);
    CHECK(qp_cli_num("--smooth", "nan", 0, 1, false, true, &d, err, sizeof err) == -1, "nan");
    CHECK(qp_cli_num("--smooth", "0", 0, 1, false, true, &d, err, sizeof err) == 0 && d == 0, "0");

    /* the man page: sections, every option, roff escapes */
    char *page = NULL;
    size_t plen = 0;
    FILE *f = open_memstream(&page, &plen);
    const qp_cli_page pg = {.name = "tool", .summary = "does -things", .synopsis = "A\nB", .description = "x\n.y",
                            .exit_status = "0 ok", .see_also = "qtrain(1)", .version = "9.9.9"};
    qp_cli_man(f, &pg, tab, N);
    fclose(f);
    CHECK(strstr(page, ".TH TOOL 1 \"\" \"qprec 9.9.9\"") == page, "%.40s", page);
    CHECK(strstr(page, "tool \\- does \\-things\n"), "NAME escaped");
    CHECK(strstr(page, "\\fB\\-o\\fR, \\fB\\-\\-out\\fR \\fIDIR\\fR\n") && strstr(page, "\\fB\\-\\-dry\\-run\\fR\n"),
          "options");
    CHECK(strstr(page, "\\&.starts with a dot \\-\\- and \\e a backslash"), "a leading dot and a backslash");
    CHECK(strstr(page, "x\n\\&.y"), "a description line starting with a dot");
    CHECK(strstr(page, "where\n.PP\nnext paragraph"), "a paragraph");
    free(page);
    return qp_test_finish("test_qp_cli");
}
