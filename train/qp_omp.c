/* qp_omp.c — OpenMP's waiting policy for a run (see qp_omp.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "qp_omp.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "qp_quant.h"

#define APPLIED "QP_OMP_APPLIED"

qp_omp_choice qp_omp_choose(const char *wait_policy, const char *spincount, int threads, int idle_cpus)
{
    if ((wait_policy && *wait_policy) || (spincount && *spincount)) return QP_OMP_KEEP;
    return threads > 1 && idle_cpus >= threads ? QP_OMP_SPIN : QP_OMP_PASSIVE;
}

/* the runnable tasks of /proc/loadavg ("0.50 0.40 0.30 R/T last"), -1 if unreadable */
static int runnable_now(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return -1;
    double a, b, c;
    int r = -1, t;
    if (fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &r, &t) != 5) r = -1;
    fclose(f);
    return r;
}

int qp_omp_idle_cpus(void)
{
    const char *forced = getenv("QP_OMP_IDLE_CPUS");
    if (forced && *forced) return atoi(forced);
    cpu_set_t set;
    CPU_ZERO(&set);
    const int cpus = sched_getaffinity(0, sizeof set, &set) ? 0 : CPU_COUNT(&set);
    int busiest = 0;
    for (int i = 0; i < 5; i++) {
        if (i) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        const int r = runnable_now();
        if (r < 1) return 0;
        if (r - 1 > busiest) busiest = r - 1;
    }
    return cpus > busiest ? cpus - busiest : 0;
}

int qp_omp_threads_arg(char **argv)
{
    int threads = 2; /* qtrain's default (qp_train_opts) */
    for (int i = 1; argv[i]; i++) {
        if (!strcmp(argv[i], "--threads") && argv[i + 1]) threads = atoi(argv[i + 1]);
        else if (!strncmp(argv[i], "--threads=", 10)) threads = atoi(argv[i] + 10);
    }
    return threads;
}

void qp_omp_apply(char **argv)
{
    /* in the process that trains: the re-executed one, or one that keeps its environment */
    qp_set_parallel_min(qp_omp_parallel_min(getenv("OMP_WAIT_POLICY")));
    if (getenv(APPLIED)) return; /* this is the re-executed program (or its child) */
    const char *wp = getenv("OMP_WAIT_POLICY"), *sc = getenv("GOMP_SPINCOUNT");
    const int threads = qp_omp_threads_arg(argv);
    /* the CPUs are sampled (50 ms) only when the answer depends on them */
    const int idle = (wp && *wp) || (sc && *sc) || threads < 2 ? 0 : qp_omp_idle_cpus();
    const qp_omp_choice c = qp_omp_choose(wp, sc, threads, idle);
    const char *var = NULL, *value = NULL;
    switch (c) {
    case QP_OMP_KEEP: return;
    case QP_OMP_PASSIVE: var = "OMP_WAIT_POLICY", value = "passive"; break;
    case QP_OMP_SPIN: var = "GOMP_SPINCOUNT", value = QP_OMP_SPIN_COUNT; break;
    }
    if (setenv(var, value, 1) || setenv(APPLIED, "1", 1)) return;
    execv("/proc/self/exe", argv);
    /* no /proc: go on as started, and say so in the run file */
    unsetenv(var);
    setenv(APPLIED, "exec failed", 1);
}

void qp_omp_describe(char *buf, size_t len)
{
    const char *wp = getenv("OMP_WAIT_POLICY"), *sc = getenv("GOMP_SPINCOUNT"), *ap = getenv(APPLIED);
    if (ap && !strcmp(ap, "1") && wp && !strcmp(wp, "passive"))
        snprintf(buf, len, "passive (qtrain's default: CPUs busy)");
    else if (ap && !strcmp(ap, "1") && sc && !strcmp(sc, QP_OMP_SPIN_COUNT) && !(wp && *wp))
        snprintf(buf, len, "spin %s, then sleep (qtrain's default: CPUs idle)", QP_OMP_SPIN_COUNT);
    else if (wp && *wp)
        snprintf(buf, len, "%.40s (OMP_WAIT_POLICY)%s%.40s", wp, sc && *sc ? ", GOMP_SPINCOUNT=" : "", sc && *sc ? sc : "");
    else if (sc && *sc)
        snprintf(buf, len, "GOMP_SPINCOUNT=%.40s (environment)", sc);
    else
        snprintf(buf, len, "libgomp default (spin, then sleep)%s", ap ? "; re-exec to wait passively failed" : "");
}

int64_t qp_omp_parallel_min(const char *wait_policy)
{
    return wait_policy && !strcasecmp(wait_policy, "passive") ? QP_OMP_PARALLEL_MIN_PASSIVE : QP_PARALLEL_MIN_DEFAULT;
}
