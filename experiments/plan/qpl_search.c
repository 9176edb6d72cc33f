/* qpl_search.c — bisection over the ranked parts, then verification (see
 * qpl_search.h). */
#include "qpl_search.h"

const char *const qpl_status_names[] = {[QPL_FOUND] = "found", [QPL_UNMET] = "unmet", [QPL_STOPPED] = "stopped"};
_Static_assert(sizeof qpl_status_names / sizeof qpl_status_names[0] == QPL_STATUS_COUNT, "a name per status");

void qpl_search(int M, qpl_probe_fn probe, qpl_probe_fn verify, void *user, qpl_result *res)
{
    *res = (qpl_result){QPL_UNMET, M, M, 0, 0};
    int lo = 0, hi = M, r = M > 0 ? probe(0, user) : 1;
    if (M > 0) res->probes++;
    if (r < 0) {
        res->status = QPL_STOPPED;
        return;
    }
    if (r) hi = 0;
    while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        r = probe(mid, user);
        res->probes++;
        if (r < 0) {
            res->status = QPL_STOPPED, res->k = res->searched = hi;
            return;
        }
        if (r) hi = mid;
        else lo = mid;
    }
    res->searched = hi;
    for (int k = hi; k < M; k++) {
        r = verify(k, user);
        res->verifications++;
        if (r < 0) {
            res->status = QPL_STOPPED, res->k = M;
            return;
        }
        if (r) {
            res->status = QPL_FOUND, res->k = k;
            return;
        }
    }
    res->status = QPL_UNMET, res->k = M;
}
