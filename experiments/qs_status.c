/* qs_status.c — the --status report (see qs_status.h). */
#include "qs_status.h"

#include <stdlib.h>
#include <string.h>

#include "qs_sched.h"
#include "qs_summary.h"

static const char *const STATES[] = {"done", "diverged", "pending", "running", "failed", "interrupted",
                                     "not submitted", "missing", "unreadable"};
#define NSTATES (int)(sizeof STATES / sizeof *STATES)

/* sacct's states of a task that ended badly without qtrain saying so */
static int slurm_failed(const char *acct)
{
    static const char *const bad[] = {"FAILED", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (!strcmp(acct, bad[i])) return 1;
    return 0;
}

static const char *run_state(const qs_row *r, const qs_task *t)
{
    if (!strcmp(r->status, "done") || !strcmp(r->status, "diverged")) return r->status;
    if (t->queue[0]) return strcmp(t->queue, "PENDING") ? "running" : "pending";
    if (!strcmp(r->status, "failed") || !strcmp(r->status, "running") || !strcmp(r->status, "unreadable"))
        return r->status;
    if (slurm_failed(t->acct)) return "failed";
    if (!strcmp(r->status, "missing")) return t->job ? "missing" : "not submitted";
    return "interrupted"; /* stopped, interrupted */
}

int qs_status_print(const qs_experiment *e, const qs_plan *p, FILE *f, char *err, size_t errlen)
{
    qs_sched sch;
    if (qs_sched_load(p->dir, p->n, 1, &sch, err, errlen)) return -1;
    qs_summary s;
    if (qs_summary_build(e, p, &s, err, errlen)) {
        qs_sched_free(&sch);
        return -1;
    }
    int count[NSTATES] = {0}, wname = 3, wnode = 4;
    for (int i = 0; i < p->n; i++) {
        const int w = (int)strlen(p->runs[i].name), wn = (int)strlen(sch.task[i].nodes);
        if (w > wname) wname = w;
        if (wn > wnode) wnode = wn;
    }
    fprintf(f, "%s: %d run%s", p->dir, p->n, p->n == 1 ? "" : "s");
    if (sch.njobs) {
        fprintf(f, ", Slurm job%s", sch.njobs == 1 ? "" : "s");
        for (int j = 0; j < sch.njobs; j++) fprintf(f, "%s %lld", j ? "," : "", sch.jobs[j]);
    } else {
        fputs(", nothing submitted to Slurm (no slurm.jobs)", f);
    }
    fputc('\n', f);
    if (sch.njobs && !sch.have_queue)
        fprintf(f, "note: squeue did not answer (%s): queued runs are not known, states come from the run files\n",
                sch.queue_note);
    if (sch.njobs && !sch.have_acct)
        fprintf(f, "note: sacct did not answer (%s): no final Slurm states; states come from squeue and the run "
                   "files\n", sch.acct_note);
    fprintf(f, "%-*s  %-13s %7s  %-24s %-7s %-11s %8s  %-*s  %s\n", wname, "run", "status", "steps", "slurm", "exit",
            "elapsed", "maxrss", wnode, "node", "message");
    for (int i = 0; i < p->n; i++) {
        const qs_row *r = &s.rows[i];
        const qs_task *t = &sch.task[i];
        const char *st = run_state(r, t);
        for (int k = 0; k < NSTATES; k++)
            if (!strcmp(st, STATES[k])) count[k]++;
        char slurm[64] = "-", steps[32] = "-";
        if (t->job) {
            const char *ss = t->queue[0] ? t->queue : t->acct;
            snprintf(slurm, sizeof slurm, "%lld_%d%s%s", t->job, i, ss[0] ? " " : "", ss);
        }
        if (r->has_stats) snprintf(steps, sizeof steps, "%lld", (long long)r->st.steps);
        char msg[600];
        snprintf(msg, sizeof msg, "%s", r->message);
        if (!msg[0] && !strcmp(st, "failed") && slurm_failed(t->acct))
            snprintf(msg, sizeof msg, "Slurm says %s (see %.400s/logs/slurm-%lld_%d.log)", t->acct, p->dir, t->job, i);
        if (!msg[0] && !strcmp(st, "missing"))
            snprintf(msg, sizeof msg, "%s", sch.have_queue ? "submitted, no longer queued, no run file (cancelled before it started?)"
                                                           : "submitted; no run file yet (pending? squeue did not answer)");
        char rss[32] = "-";
        if (t->maxrss_kib >= 0) snprintf(rss, sizeof rss, "%.1fM", (double)t->maxrss_kib / 1024);
        fprintf(f, "%-*s  %-13s %7s  %-24s %-7s %-11s %8s  %-*s  %s\n", wname, p->runs[i].name, st, steps, slurm,
                t->exit_code[0] ? t->exit_code : "-", t->elapsed[0] ? t->elapsed : "-", rss, wnode,
                t->nodes[0] ? t->nodes : "-", msg);
    }
    fputs("total:", f);
    for (int k = 0, first = 1; k < NSTATES; k++)
        if (count[k]) fprintf(f, "%s %d %s", first ? "" : ",", count[k], STATES[k]), first = 0;
    fputc('\n', f);
    qs_summary_free(&s);
    qs_sched_free(&sch);
    return 0;
}
