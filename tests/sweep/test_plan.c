/* test_plan.c — qsweep --plan's search and rank statistics, apart from runs.
 *
 *   test_plan search      the bisection on synthetic gap curves: the fewest
 *                         parts that meet the budget, at most
 *                         1 + ceil(log2 M) probes; a verification that
 *                         misses moves up one part at a time; a budget no
 *                         recipe but the fallback everywhere meets (unmet);
 *                         a probe that stops (the run cap) keeps the fewest
 *                         parts known to meet
 *   test_plan spearman B  reads "nparts nseeds", the scores, then the
 *                         benefits seed by seed from stdin; prints rho, lo,
 *                         hi of qpl_spearman_boot with B resamples and the
 *                         ranking (tests/sweep/test_plan.py checks them
 *                         against scipy.stats.spearmanr and a bootstrap it
 *                         draws with the same generator)
 * Exit 0 when every check holds, 1 with the failed check on stderr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qpl_predict.h"
#include "qpl_search.h"

static int fails;
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
            fails++;                                                                                                   \
        }                                                                                                              \
    } while (0)

/* a synthetic plan: upper bound of the gap with the first k parts in the
 * fallback, at the search seeds and at the verification seeds */
typedef struct {
    int M;
    double search_hi[65], verify_hi[65], budget;
    int stop_after;          /* probes + verifications before a stop, or -1 */
    int calls, probed[65];
} synth;

static int probe(int k, void *u)
{
    synth *s = u;
    if (s->stop_after >= 0 && s->calls >= s->stop_after) return -1;
    s->calls++;
    if (k < 0 || k >= s->M) {
        fprintf(stderr, "FAIL probe out of range: %d\n", k);
        fails++;
        return -1;
    }
    s->probed[k]++;
    return s->search_hi[k] <= s->budget;
}

static int verify(int k, void *u)
{
    synth *s = u;
    if (s->stop_after >= 0 && s->calls >= s->stop_after) return -1;
    s->calls++;
    return s->verify_hi[k] <= s->budget;
}

static int ceil_log2(int m)
{
    int c = 0;
    while ((1 << c) < m) c++;
    return c;
}

static void test_search(void)
{
    /* every M and every first-meeting k of a falling curve */
    for (int M = 1; M <= 64; M++)
        for (int first = 0; first <= M; first++) {
            synth s = {.M = M, .budget = 1.0, .stop_after = -1};
            for (int k = 0; k <= M; k++) s.search_hi[k] = s.verify_hi[k] = k >= first ? 0.5 : 3.0 - 2.0 * k / (M + 1);
            qpl_result r;
            qpl_search(M, probe, verify, &s, &r);
            if (first < M) {
                CHECK(r.status == QPL_FOUND && r.k == first, "M %d first %d: status %d k %d", M, first, r.status, r.k);
            } else {
                CHECK(r.status == QPL_UNMET && r.k == M, "M %d unmet: status %d k %d", M, r.status, r.k);
                CHECK(r.verifications == 0, "M %d unmet: %d verifications", M, r.verifications);
            }
            CHECK(r.probes <= 1 + ceil_log2(M), "M %d first %d: %d probes > 1 + ceil(log2 M)", M, first, r.probes);
            for (int k = 0; k < M; k++) CHECK(s.probed[k] <= 1, "M %d: k %d probed twice", M, k);
        }
    /* the verification misses at the bisection's answer and the next: 2 more */
    {
        synth s = {.M = 16, .budget = 1.0, .stop_after = -1};
        for (int k = 0; k <= 16; k++) s.search_hi[k] = k >= 5 ? 0.8 : 2.0, s.verify_hi[k] = k >= 7 ? 0.9 : 1.5;
        qpl_result r;
        qpl_search(16, probe, verify, &s, &r);
        CHECK(r.status == QPL_FOUND && r.searched == 5 && r.k == 7 && r.verifications == 3,
              "verify misses: status %d searched %d k %d verifications %d", r.status, r.searched, r.k, r.verifications);
    }
    /* no verification within the budget below M: unmet */
    {
        synth s = {.M = 8, .budget = 1.0, .stop_after = -1};
        for (int k = 0; k <= 8; k++) s.search_hi[k] = k >= 3 ? 0.8 : 2.0, s.verify_hi[k] = 1.2;
        qpl_result r;
        qpl_search(8, probe, verify, &s, &r);
        CHECK(r.status == QPL_UNMET && r.k == 8 && r.verifications == 5, "verify never meets: status %d k %d v %d", r.status,
              r.k, r.verifications);
    }
    /* the base meets: k = 0 after one probe */
    {
        synth s = {.M = 10, .budget = 1.0, .stop_after = -1};
        for (int k = 0; k <= 10; k++) s.search_hi[k] = s.verify_hi[k] = 0.3;
        qpl_result r;
        qpl_search(10, probe, verify, &s, &r);
        CHECK(r.status == QPL_FOUND && r.k == 0 && r.probes == 1, "base meets: status %d k %d probes %d", r.status, r.k,
              r.probes);
    }
    /* a stop (the run cap) after the base and two bisection probes: the fewest known to meet */
    {
        synth s = {.M = 16, .budget = 1.0, .stop_after = 3};
        for (int k = 0; k <= 16; k++) s.search_hi[k] = s.verify_hi[k] = k >= 3 ? 0.5 : 2.0;
        qpl_result r;
        qpl_search(16, probe, verify, &s, &r);
        /* probes: 0 (miss), 8 (meets), 4 (meets), then the stop: 4 known */
        CHECK(r.status == QPL_STOPPED && r.k == 4, "stopped: status %d k %d", r.status, r.k);
    }
    /* a non-monotone curve: the bisection's answer meets, and the search
     * never claims a k whose probe missed */
    {
        synth s = {.M = 8, .budget = 1.0, .stop_after = -1};
        const double hi[9] = {3, 0.5, 2, 2, 0.5, 0.5, 0.5, 0.5, 0};
        for (int k = 0; k <= 8; k++) s.search_hi[k] = s.verify_hi[k] = hi[k];
        qpl_result r;
        qpl_search(8, probe, verify, &s, &r);
        CHECK(r.status == QPL_FOUND && hi[r.k] <= 1.0, "non-monotone: status %d k %d", r.status, r.k);
    }
    /* the ranking: falling score, ties in part order, NaN last */
    {
        const double score[6] = {0.5, NAN, 2.0, 0.5, -1.0, 2.0};
        int order[6];
        qpl_rank(score, 6, order);
        const int want[6] = {2, 5, 0, 3, 4, 1};
        CHECK(!memcmp(order, want, sizeof want), "rank: %d %d %d %d %d %d", order[0], order[1], order[2], order[3], order[4],
              order[5]);
    }
    /* Spearman of a constant side: NaN; of a perfect order: 1; reversed: -1 */
    {
        const double a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, c[4] = {4, 3, 2, 1}, d[4] = {7, 7, 7, 7};
        CHECK(fabs(qpl_spearman(a, b, 4) - 1) < 1e-15, "spearman perfect");
        CHECK(fabs(qpl_spearman(a, c, 4) + 1) < 1e-15, "spearman reversed");
        CHECK(isnan(qpl_spearman(a, d, 4)), "spearman constant");
    }
}

static int spearman_tool(int B)
{
    int np, ns;
    if (scanf("%d %d", &np, &ns) != 2 || np < 1 || ns < 1) return 2;
    double *score = malloc((size_t)np * sizeof *score), *ben = malloc((size_t)np * ns * sizeof *ben);
    int *order = malloc((size_t)np * sizeof *order);
    if (!score || !ben || !order) return 2;
    for (int i = 0; i < np; i++)
        if (scanf("%lf", &score[i]) != 1) return 2;
    for (int i = 0; i < np * ns; i++)
        if (scanf("%lf", &ben[i]) != 1) return 2;
    double rho, lo, hi;
    qpl_spearman_boot(score, ben, np, ns, B, &rho, &lo, &hi);
    qpl_rank(score, np, order);
    printf("%.17g %.17g %.17g\n", rho, lo, hi);
    for (int i = 0; i < np; i++) printf("%d%c", order[i], i + 1 < np ? ' ' : '\n');
    free(score), free(ben), free(order);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "search")) {
        test_search();
        if (!fails) printf("test_plan search: ok\n");
        return fails ? 1 : 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "spearman")) return spearman_tool(atoi(argv[2]));
    fprintf(stderr, "usage: test_plan search | test_plan spearman B < input\n");
    return 2;
}
