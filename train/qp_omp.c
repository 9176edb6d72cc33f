/* qp_omp.c — OpenMP's waiting policy for a run (see qp_omp.h). */
#include "qp_omp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define APPLIED "QP_OMP_APPLIED"

qp_omp_choice qp_omp_choose(const char *wait_policy, const char *spincount)
{
    if ((wait_policy && *wait_policy) || (spincount && *spincount)) return QP_OMP_KEEP;
    return QP_OMP_PASSIVE;
}

void qp_omp_apply(char **argv)
{
    if (getenv(APPLIED)) return; /* this is the re-executed program (or its child) */
    switch (qp_omp_choose(getenv("OMP_WAIT_POLICY"), getenv("GOMP_SPINCOUNT"))) {
    case QP_OMP_KEEP:
        return;
    case QP_OMP_PASSIVE:
        if (setenv("OMP_WAIT_POLICY", "passive", 1) || setenv(APPLIED, "1", 1)) return;
        execv("/proc/self/exe", argv);
        /* no /proc: go on as started, and say so in the run file */
        unsetenv("OMP_WAIT_POLICY");
        setenv(APPLIED, "exec failed", 1);
        return;
    }
}

void qp_omp_describe(char *buf, size_t len)
{
    const char *wp = getenv("OMP_WAIT_POLICY"), *sc = getenv("GOMP_SPINCOUNT"), *ap = getenv(APPLIED);
    if (ap && !strcmp(ap, "1") && wp && !strcmp(wp, "passive"))
        snprintf(buf, len, "passive (qtrain's default)");
    else if (wp && *wp)
        snprintf(buf, len, "%.40s (OMP_WAIT_POLICY)%s%.40s", wp, sc && *sc ? ", GOMP_SPINCOUNT=" : "", sc && *sc ? sc : "");
    else if (sc && *sc)
        snprintf(buf, len, "GOMP_SPINCOUNT=%.40s (environment)", sc);
    else
        snprintf(buf, len, "libgomp default (spin, then sleep)%s", ap ? "; re-exec to wait passively failed" : "");
}
