/* qs_pool.c — child processes and the progress line (see qs_pool.h). */
#define _GNU_SOURCE
#include "qs_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qs_shell.h"

typedef struct {
    pid_t pid;
    int job;
    double t0;
} slot;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

void qs_fmt_duration(double s, char *buf, int len)
{
    const long t = s < 0 ? 0 : (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, (size_t)len, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, (size_t)len, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, (size_t)len, "%lds", t);
}

static void noop(int sig)
{
    (void)sig;
}

static void log_line(const char *path, const char *text)
{
    const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return; /* the log is a convenience; the run file is the record */
    const ssize_t w = write(fd, text, strlen(text));
    (void)w;
    close(fd);
}

/* Start job j; returns its pid, or -1 with res->why set. side_by_side: more
 * than one job at a time, so the child's OpenMP threads wait passively
 * (train/run/qp_omp.h) unless the user chose a policy. */
static pid_t spawn(const qs_job *job, const sigset_t *child_mask, int side_by_side, qs_job_result *res)
{
    const int fd = open(job->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(res->why, sizeof res->why, "cannot open log %s: %s", job->log, strerror(errno));
        return -1;
    }
    char *hdr = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&hdr, &len);
    if (m) {
        char when[64];
        const time_t t = time(NULL);
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
        fprintf(m, "== qsweep %s: ", when);
        qs_shell_cmd(m, job->argv);
        fputc('\n', m);
        fclose(m);
        const ssize_t w = write(fd, hdr, len);
        (void)w;
        free(hdr);
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(res->why, sizeof res->why, "fork: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(128 + SIGTERM); /* qsweep died before prctl took effect */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_SETMASK, child_mask, NULL);
        const int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (side_by_side && !getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT"))
            setenv("OMP_WAIT_POLICY", "passive", 1);
        execv(job->argv[0], job->argv);
        dprintf(2, "qsweep: cannot run %s: %s\n", job->argv[0], strerror(errno));
        _exit(127);
    }
    close(fd);
    return pid;
}

typedef struct {
    int tty, total, done, failed, running, queued, stopping;
    double t_start, dur_sum;
    int dur_n;
    char last[256];
} progress;

static void show(progress *pr, const slot *slots, int nslots, int parallel, int final)
{
    const double now = now_s();
    char el[32], eta[48] = "ETA ?";
    qs_fmt_duration(now - pr->t_start, el, sizeof el);
    if (pr->dur_n > 0) {
        /* the mean run so far for every queued run, minus what running ones have done */
        const double mean = pr->dur_sum / pr->dur_n;
        double left = pr->queued * mean;
        for (int i = 0; i < nslots; i++)
            if (slots[i].pid > 0) left += mean > now - slots[i].t0 ? mean - (now - slots[i].t0) : 0;
        char d[32];
        qs_fmt_duration(left / (parallel > 0 ? parallel : 1), d, sizeof d);
        snprintf(eta, sizeof eta, "ETA %s", d);
    }
    if (pr->stopping) snprintf(eta, sizeof eta, pr->running ? "stopping" : "stopped");
    else if (!pr->queued && !pr->running) snprintf(eta, sizeof eta, "finished");
    char line[256];
    snprintf(line, sizeof line, "qsweep: %d/%d done, %d running, %d failed | %s elapsed | %s", pr->done, pr->total,
             pr->running, pr->failed, el, eta);
    if (pr->tty) {
        fprintf(stderr, "\r%s\033[K%s", line, final ? "\n" : "");
    } else {
        /* not a terminal: a line per change of the counts, not per second */
        char key[64];
        snprintf(key, sizeof key, "%d %d %d", pr->done, pr->running, pr->failed);
        if (strcmp(key, pr->last) || final) {
            fprintf(stderr, "%s\n", line);
            snprintf(pr->last, sizeof pr->last, "%s", key);
        }
    }
    fflush(stderr);
}

int qs_pool_run(const qs_job *jobs, int n, int parallel, const qs_pool_cb *cb, qs_job_result *res)
{
    if (parallel < 1) parallel = 1;
    sigset_t block, orig;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGCHLD);
    /* handlers that do nothing: a blocked signal whose action is "ignore"
     * might be dropped instead of staying pending for sigtimedwait */
    struct sigaction sa = {.sa_handler = noop}, old_int, old_term, old_chld;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGCHLD, &sa, &old_chld);
    sigprocmask(SIG_BLOCK, &block, &orig);
    /* children start with these unblocked, even if our caller had blocked them */
    sigset_t child_mask = orig;
    sigdelset(&child_mask, SIGINT);
    sigdelset(&child_mask, SIGTERM);
    sigdelset(&child_mask, SIGCHLD);

    slot *slots = calloc((size_t)parallel, sizeof *slots);
    progress pr = {.tty = isatty(2), .total = cb->total, .done = cb->already_done, .queued = n, .t_start = now_s()};
    for (int i = 0; i < n; i++) res[i] = (qs_job_result){QS_JOB_STOPPED, -1, 0, ""};
    int next = 0, stopping = 0, killed = 0;
    if (!slots) {
        fprintf(stderr, "qsweep: out of memory\n");
        stopping = 1;
    }
    show(&pr, slots, slots ? parallel : 0, parallel, 0);
    for (;;) {
        const int can_start = !stopping && next < n && pr.running < parallel;
        if (!can_start && !pr.running) break;
        if (!can_start) show(&pr, slots, parallel, parallel, 0);
        /* a signal already pending (e.g. one that came before the pool) is seen
         * before anything starts: poll when there is work to start, else wait */
        siginfo_t si;
        const int sig = sigtimedwait(&block, &si, &(struct timespec){can_start ? 0 : 1, 0});
        if (sig == SIGINT || sig == SIGTERM) {
            if (!stopping) {
                stopping = pr.stopping = 1;
                if (pr.tty) fputc('\n', stderr);
                fprintf(stderr, "qsweep: %s: stopping %d running run%s (SIGTERM)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
                        pr.running, pr.running == 1 ? "" : "s");
                for (int i = 0; i < parallel; i++)
                    if (slots[i].pid > 0) kill(slots[i].pid, SIGTERM);
            } else if (!killed) {
                killed = 1;
                fprintf(stderr, "qsweep: second signal: SIGKILL to the remaining runs\n");
                for (int i = 0; i < parallel; i++)
                    if (slots[i].pid > 0) kill(slots[i].pid, SIGKILL);
            }
        }
        while (!stopping && next < n && pr.running < parallel) {
            const int j = next++;
            pr.queued--;
            if (cb->on_start) cb->on_start(j, cb->user);
            int s = 0;
            while (slots[s].pid > 0) s++;
            const pid_t pid = spawn(&jobs[j], &child_mask, parallel > 1, &res[j]);
            if (pid < 0) {
                res[j].outcome = QS_JOB_FAILED;
                res[j].exit_code = -1;
                if (cb->on_end) cb->on_end(j, &res[j], cb->user);
                pr.failed++;
                continue;
            }
            slots[s] = (slot){pid, j, now_s()};
            pr.running++;
        }
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
            int s = 0;
            while (s < parallel && slots[s].pid != pid) s++;
            if (s == parallel) continue; /* not ours */
            const int j = slots[s].job;
            qs_job_result *r = &res[j];
            r->seconds = now_s() - slots[s].t0;
            r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            if (WIFEXITED(st) && WEXITSTATUS(st) == 0) r->outcome = QS_JOB_OK;
            else if (WIFEXITED(st) && WEXITSTATUS(st) == 3) r->outcome = QS_JOB_DIVERGED;
            else if (stopping) r->outcome = QS_JOB_STOPPED; /* our SIGTERM, or its effect */
            else r->outcome = QS_JOB_FAILED;
            char foot[128];
            snprintf(foot, sizeof foot, "== qsweep: exit %d after %.1f s%s\n", r->exit_code, r->seconds,
                     r->outcome == QS_JOB_STOPPED ? " (stopped by qsweep)" : "");
            log_line(jobs[j].log, foot);
            if (cb->on_end) cb->on_end(j, r, cb->user);
            slots[s].pid = 0;
            pr.running--;
            if (r->outcome == QS_JOB_OK || r->outcome == QS_JOB_DIVERGED) {
                pr.done++;
                pr.dur_sum += r->seconds;
                pr.dur_n++;
            } else if (r->outcome == QS_JOB_FAILED) {
                pr.failed++;
            }
        }
    }
    if (slots) show(&pr, slots, parallel, parallel, 1);
    free(slots);
    /* a signal that came after the last child ended still means "stop" */
    sigset_t stopsigs;
    sigemptyset(&stopsigs);
    sigaddset(&stopsigs, SIGINT);
    sigaddset(&stopsigs, SIGTERM);
    if (sigtimedwait(&stopsigs, NULL, &(struct timespec){0, 0}) > 0) stopping = 1;
    sigprocmask(SIG_SETMASK, &orig, NULL);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGCHLD, &old_chld, NULL);
    return stopping ? 1 : 0;
}
