/* qp_prof.c — the phase profile (see qp_prof.h). */
#include "qp_prof.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DEPTH 8
/* Wall time; a build with -DQP_PROF_CLOCK=CLOCK_THREAD_CPUTIME_ID profiles
 * the step thread's CPU time instead (for one-thread runs on a busy machine;
 * each read then costs a system call). */
#ifndef QP_PROF_CLOCK
#define QP_PROF_CLOCK CLOCK_MONOTONIC
#endif

/* per thread: the data-parallel test runs ranks as threads of one process, each with its own phase stack */
static _Thread_local struct {
    int on; /* -1: not decided yet (QP_PROFILE) */
    int depth;
    qp_phase stack[MAX_DEPTH];
    int64_t since_ns; /* when the innermost open phase last started counting */
    int64_t ns[QP_PHASE_COUNT];
    int64_t reads;
} P = {.on = -1};

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(QP_PROF_CLOCK, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static const char *const phase_names[QP_PHASE_COUNT] = {
    [QP_PHASE_GEMM] = "gemm",     [QP_PHASE_QUANT] = "quant", [QP_PHASE_ATTN] = "attn", [QP_PHASE_ROWOPS] = "rowops",
    [QP_PHASE_OPTIM] = "optim",   [QP_PHASE_DATA] = "data",   [QP_PHASE_COMM] = "comm",
};
_Static_assert(sizeof phase_names / sizeof phase_names[0] == QP_PHASE_COUNT, "a name per phase");

const char *qp_phase_name(qp_phase p) { return (unsigned)p < QP_PHASE_COUNT ? phase_names[p] : "?"; }

int qp_prof_enabled(void)
{
    if (P.on < 0) {
        const char *e = getenv("QP_PROFILE");
        P.on = !(e && !strcmp(e, "0"));
    }
    return P.on;
}

void qp_prof_enable(int on)
{
    P.on = on != 0;
    P.depth = 0;
}

void qp_prof_reset(void)
{
    memset(P.ns, 0, sizeof P.ns);
    if (P.depth) P.since_ns = now_ns();
}

/* Credit the innermost open phase up to now. */
static int64_t settle(void)
{
    const int64_t t = now_ns();
    P.reads++;
    if (P.depth) P.ns[P.stack[(P.depth < MAX_DEPTH ? P.depth : MAX_DEPTH) - 1]] += t - P.since_ns;
    P.since_ns = t;
    return t;
}

void qp_prof_push(qp_phase p)
{
    if (!qp_prof_enabled()) return;
    settle();
    /* deeper than any caller nests: the deepest stored phase goes on counting */
    if (P.depth < MAX_DEPTH) P.stack[P.depth] = p;
    P.depth++;
}

void qp_prof_pop(void)
{
    if (!qp_prof_enabled() || P.depth == 0) return;
    settle();
    P.depth--;
}

int64_t qp_prof_clock_reads(void) { return P.reads; }

void qp_prof_read(double ms[QP_PHASE_COUNT])
{
    if (qp_prof_enabled() && P.depth) settle();
    for (int i = 0; i < QP_PHASE_COUNT; i++) ms[i] = (double)P.ns[i] * 1e-6;
}
