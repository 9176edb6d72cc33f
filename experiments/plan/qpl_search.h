/* qpl_search.h — the plan's search: the fewest parts, taken down a ranked
 * list, whose recipe meets the budget.
 *
 * Owns: the search order and its verdicts, apart from how a probe is run
 * (the caller's callbacks), so it is tested on synthetic gaps. With M ranked
 * parts, f(k) = the recipe with the first k in the fallback; f(M) is the
 * fallback everywhere, whose gap is 0 by definition (never run as a probe).
 *   1. probe f(0), the base recipe: meets the budget -> k = 0;
 *   2. bisection on k in (lo, hi] with lo = 0 failing and hi = M meeting:
 *      probe the middle, keep the half holding the first k that meets.
 *      ceil(log2 M) probes, assuming the upper bound falls as parts are
 *      added (the greedy order's premise);
 *   3. verify f(k) with the verification's own seeds; when its upper bound
 *      is over the budget, verify f(k+1), ... (a probe's interval that met
 *      by chance does not end the search).
 * A probe returns 1 (meets), 0 (does not) or -1 (stop: the run cap, or a
 * run that failed). */
#ifndef QPL_SEARCH_H
#define QPL_SEARCH_H

typedef int (*qpl_probe_fn)(int k, void *user);

typedef enum {
    QPL_FOUND = 0,  /* f(k) with k < M met the budget at verification */
    QPL_UNMET,      /* no recipe but the fallback everywhere (k = M) meets it */
    QPL_STOPPED,    /* a probe said stop; k: the fewest parts known to meet (M if none) */
    QPL_STATUS_COUNT
} qpl_status;
extern const char *const qpl_status_names[QPL_STATUS_COUNT]; /* "found", "unmet", "stopped" */

typedef struct {
    qpl_status status;
    int k;          /* the chosen number of parts */
    int searched;   /* the bisection's result before verification */
    int probes, verifications;
} qpl_result;

void qpl_search(int M, qpl_probe_fn probe, qpl_probe_fn verify, void *user, qpl_result *res);

#endif
