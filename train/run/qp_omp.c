/* qp_omp.c — OpenMP's waiting policy for a run (see qp_omp.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "qp_omp.h"

#include <dirent.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "qp_quant.h"

#define APPLIED "QP_OMP_APPLIED"
#define THREADS "QP_OMP_THREADS" /* --threads auto's count, chosen before the re-exec */

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

/* a few samples in ascending order (insertion sort) */
static void sort_small(int *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && v[k - 1] > v[k]; k--) {
            const int t = v[k];
            v[k] = v[k - 1], v[k - 1] = t;
        }
}

static int cpus_of_mask(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof set, &set) ? 0 : CPU_COUNT(&set);
}

void qp_omp_idle_cpus(int *least, int *typical)
{
    const int cpus = cpus_of_mask();
    const char *forced = getenv("QP_OMP_IDLE_CPUS");
    if (forced && *forced) {
        const int n = atoi(forced);
        *least = *typical = n < 0 ? 0 : n;
        return;
    }
    *least = *typical = 0;
    int others[5];
    for (int i = 0; i < 5; i++) {
        if (i) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        const int r = runnable_now();
        if (r < 1) return;
        others[i] = r - 1;
    }
    sort_small(others, 5);
    *least = cpus > others[4] ? cpus - others[4] : 0;
    *typical = cpus > others[2] ? cpus - others[2] : 0;
}

int qp_omp_threads_arg(char **argv)
{
    int threads = 0; /* qtrain's default: auto */
    for (int i = 1; argv[i]; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--threads")) v = argv[i + 1];
        else if (!strncmp(argv[i], "--threads=", 10)) v = argv[i] + 10;
        if (v) threads = strcmp(v, "auto") ? atoi(v) : 0;
    }
    return threads;
}

/* --threads auto from the typical idle CPUs: at least 1, at most the mask's */
static int auto_threads(int typical)
{
    const int cpus = cpus_of_mask();
    return typical < 1 ? 1 : cpus > 0 && typical > cpus ? cpus : typical;
}

int qp_omp_auto_threads(void)
{
    const char *chosen = getenv(THREADS);
    if (chosen && atoi(chosen) >= 1) return atoi(chosen);
    int least, typical;
    qp_omp_idle_cpus(&least, &typical);
    return auto_threads(typical);
}

static double mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* this process's threads in state R (/proc/self/task/TID/stat) */
static int own_runnable(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return 1;
    int n = 0;
    char path[64], buf[512];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/self/task/%.20s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        const size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = 0;
        const char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
        n += p && p[1] == ' ' && p[2] == 'R';
    }
    closedir(d);
    return n > 0 ? n : 1;
}

/* Tasks runnable on the machine that are not this process's threads, as
 * one sample sees them (QP_OMP_IDLE_FILE: cpus minus the number in that
 * file); -1 when it cannot tell. */
static int busy_now(int cpus)
{
    const char *forced = getenv("QP_OMP_IDLE_FILE");
    if (forced && *forced) {
        FILE *f = fopen(forced, "r");
        int idle = -1;
        if (f) {
            if (fscanf(f, "%d", &idle) != 1) idle = -1;
            fclose(f);
        }
        return idle < 0 ? -1 : cpus > idle ? cpus - idle : 0;
    }
    const int r = runnable_now();
    if (r < 1) return -1;
    const int own = own_runnable();
    return r > own ? r - own : 0;
}

void qp_omp_adapt_init(qp_omp_adapt *a, int start)
{
    memset(a, 0, sizeof *a);
    a->start = a->current = start < 1 ? 1 : start;
}

int qp_omp_adapt_threads(qp_omp_adapt *a)
{
    const double t = mono_ms();
    if (a->start <= 1 || t < a->next_ms) return a->current;
    a->next_ms = t + QP_OMP_ADAPT_MS;
    const int cpus = cpus_of_mask(), busy = cpus > 0 ? busy_now(cpus) : -1;
    if (busy < 0) return a->current;
    a->busy[a->n % QP_OMP_ADAPT_WINDOW] = busy;
    if (a->n < INT_MAX) a->n++;
    if (a->n < QP_OMP_ADAPT_WINDOW) return a->current; /* a full window before any change */
    int s[QP_OMP_ADAPT_WINDOW];
    memcpy(s, a->busy, sizeof s);
    sort_small(s, QP_OMP_ADAPT_WINDOW);
    const int idle = cpus - s[QP_OMP_ADAPT_WINDOW / 2];
    a->current = idle < 1 ? 1 : idle > a->start ? a->start : idle;
    return a->current;
}

void qp_omp_apply(char **argv)
{
    /* in the process that trains: the re-executed one, or one that keeps its environment */
    qp_set_parallel_min(qp_omp_parallel_min(getenv("OMP_WAIT_POLICY")));
    if (getenv(APPLIED)) return; /* this is the re-executed program (or its child) */
    const char *wp = getenv("OMP_WAIT_POLICY"), *sc = getenv("GOMP_SPINCOUNT");
    const int user_policy = (wp && *wp) || (sc && *sc), asked = qp_omp_threads_arg(argv);
    /* the CPUs are sampled (50 ms) only when an answer depends on them */
    int least = 0, typical = 0;
    if (!asked || (!user_policy && asked > 1)) qp_omp_idle_cpus(&least, &typical);
    const int threads = asked ? asked : auto_threads(typical);
    if (!asked) {
        char n[16];
        snprintf(n, sizeof n, "%d", threads);
        setenv(THREADS, n, 1); /* for this process, or the one it becomes */
    }
    const qp_omp_choice c = qp_omp_choose(wp, sc, threads, least);
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
