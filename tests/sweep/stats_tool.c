/* stats_tool.c — experiments/qs_stats.c and train/run/qp_size.c on the command
 * line, for tests/sweep/test_stats.py to compare with scipy/numpy:
 *   stats_tool tq P DF          the Student t quantile
 *   stats_tool tcdf T DF        the Student t CDF
 *   stats_tool ci LEVEL X...    n mean sd lo hi resolved method
 *   stats_tool ratio LEVEL N A1..AN B1..BN
 *                               paired ratio interval: n ratio lo hi resolved method
 *   stats_tool paired LEVEL N A1..AN B1..BN
 *                               paired t intervals: n, then n mean sd lo hi
 *                               resolved method of a, of b and of b - a
 *   stats_tool size L C R B T A nonembedding parameters and the steps for R
 *                               tokens per parameter at batch B, seq T, accum A
 *   stats_tool model VALUE L H  the preset or the shape for a target count */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_size.h"
#include "qs_stats.h"

/* argv: MODE LEVEL N A1..AN B1..BN: the two samples (freed by the caller), N;
 * -1 with the usage line on stderr when the count does not match. */
static int read_pairs(int argc, char **argv, double **a, double **b)
{
    const int n = atoi(argv[3]);
    if (n < 0 || argc != 4 + 2 * n) {
        fprintf(stderr, "stats_tool: %s LEVEL N A1..AN B1..BN\n", argv[1]);
        return -1;
    }
    *a = malloc((size_t)(n ? n : 1) * sizeof **a);
    *b = malloc((size_t)(n ? n : 1) * sizeof **b);
    for (int i = 0; i < n; i++) (*a)[i] = strtod(argv[4 + i], NULL), (*b)[i] = strtod(argv[4 + n + i], NULL);
    return n;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "tq")) {
        printf("%.17g\n", qs_t_quantile(atof(argv[2]), atof(argv[3])));
        return 0;
    }
    if (argc >= 4 && !strcmp(argv[1], "tcdf")) {
        printf("%.17g\n", qs_t_cdf(atof(argv[2]), atof(argv[3])));
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "ci")) {
        const int n = argc - 3;
        double *x = malloc((size_t)(n ? n : 1) * sizeof *x);
        for (int i = 0; i < n; i++) x[i] = strtod(argv[3 + i], NULL);
        qs_ci c;
        qs_mean_ci(x, n, atof(argv[2]), &c);
        printf("%d %.17g %.17g %.17g %.17g %d %s\n", c.n, c.mean, c.sd, c.lo, c.hi, c.resolved, c.method);
        free(x);
        return 0;
    }
    if (argc >= 4 && !strcmp(argv[1], "ratio")) {
        double *a, *b;
        const int n = read_pairs(argc, argv, &a, &b);
        if (n < 0) return 2;
        qs_ratio r;
        qs_ratio_ci(a, b, n, atof(argv[2]), &r);
        printf("%d %.17g %.17g %.17g %d %s\n", r.n, r.ratio, r.lo, r.hi, r.resolved, r.method);
        free(a), free(b);
        return 0;
    }
    if (argc >= 4 && !strcmp(argv[1], "paired")) {
        double *a, *b;
        const int n = read_pairs(argc, argv, &a, &b);
        if (n < 0) return 2;
        qs_paired p;
        qs_paired_ci(a, b, n, atof(argv[2]), &p);
        printf("%d", p.n);
        const qs_ci *c[] = {&p.a, &p.b, &p.diff};
        for (int k = 0; k < 3; k++)
            printf(" %d %.17g %.17g %.17g %.17g %d %s", c[k]->n, c[k]->mean, c[k]->sd, c[k]->lo, c[k]->hi,
                   c[k]->resolved, c[k]->method);
        printf("\n");
        free(a), free(b);
        return 0;
    }
    if (argc >= 8 && !strcmp(argv[1], "size")) {
        const long long n = qp_size_nonembedding(atoi(argv[2]), atoi(argv[3]));
        const long long tps = (long long)atoi(argv[5]) * atoi(argv[6]) * atoi(argv[7]);
        printf("%lld %lld\n", n, (long long)qp_size_steps(atof(argv[4]), n, tps));
        return 0;
    }
    if (argc >= 5 && !strcmp(argv[1], "model")) {
        qp_model_preset m;
        char err[256];
        if (qp_size_model(argv[2], atoi(argv[3]), atoi(argv[4]), &m, err, sizeof err)) {
            fprintf(stderr, "stats_tool: %s\n", err);
            return 2;
        }
        printf("%d %d %d %lld\n", m.layers, m.heads, m.dim, (long long)qp_size_nonembedding(m.layers, m.dim));
        return 0;
    }
    fprintf(stderr, "stats_tool: tq P DF | tcdf T DF | ci LEVEL X... | ratio LEVEL N A... B... | paired LEVEL N A... B... | size L C R B T A | model VALUE L H\n");
    return 2;
}
