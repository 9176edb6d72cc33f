/* qs_sched.c — sbatch, squeue, sacct and DIR/slurm.jobs (see qs_sched.h). */
#define _GNU_SOURCE /* pipe2 */
#include "qs_sched.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_OUTPUT (64u << 20) /* squeue on a big cluster lists many tasks; more than this is not ours */

int qs_sched_which(const char *prog, char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; p;) {
        const char *colon = strchr(p, ':');
        const int n = colon ? (int)(colon - p) : (int)strlen(p);
        if ((size_t)snprintf(buf, len, "%.*s/%s", n ? n : 1, n ? p : ".", prog) < len) {
            struct stat st;
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0) return 0;
        }
        p = colon ? colon + 1 : NULL;
    }
    return -1;
}

/* A growing buffer for a child's output. */
typedef struct {
    char *s;
    size_t len, cap;
} buf_t;

static int buf_add(buf_t *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        if (b->len + n + 1 > MAX_OUTPUT) return -1;
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) return -1;
        b->s = ns, b->cap = cap;
    }
    memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = '\0';
    return 0;
}

/* The last non-empty line of text, cut to len. */
static void last_line(const char *text, char *out, size_t len)
{
    const char *best = NULL, *end = NULL;
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n');
        const char *e = nl ? nl : l + strlen(l);
        const char *c = l;
        while (c < e && isspace((unsigned char)*c)) c++;
        if (c < e) best = l, end = e;
        l = nl ? nl + 1 : NULL;
    }
    if (!best) {
        snprintf(out, len, "(no message)");
        return;
    }
    snprintf(out, len, "%.*s", (int)(end - best), best);
}

/* Run argv (argv[0] looked up on PATH) with stdin from /dev/null; collect
 * stdout and stderr. Returns the exit status (128 + signal when killed), or
 * -1 when it could not run (err says why). */
static int run_capture(char *const *argv, buf_t *out, buf_t *errout, char *err, size_t errlen)
{
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "%s: pipe: %s", argv[0], strerror(errno));
        return -1;
    }
    if (pipe2(pe, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "%s: pipe: %s", argv[0], strerror(errno));
        close(po[0]), close(po[1]);
        return -1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "%s: fork: %s", argv[0], strerror(errno));
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
        return -1;
    }
    if (pid == 0) {
        const int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]), close(pe[1]);
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    buf_t *dst[2] = {out, errout};
    int open_fds = 2, overflow = 0;
    while (open_fds) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (fds[k].fd < 0 || !fds[k].revents) continue;
            char chunk[8192];
            const ssize_t r = read(fds[k].fd, chunk, sizeof chunk);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                close(fds[k].fd);
                fds[k].fd = -1;
                open_fds--;
            } else if (buf_add(dst[k], chunk, (size_t)r)) {
                overflow = 1;
            }
        }
    }
    for (int k = 0; k < 2; k++)
        if (fds[k].fd >= 0) close(fds[k].fd);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            snprintf(err, errlen, "%s: waitpid: %s", argv[0], strerror(errno));
            return -1;
        }
    if (overflow) {
        snprintf(err, errlen, "%s: output too large or out of memory", argv[0]);
        return -1;
    }
    if (!out->s) buf_add(out, "", 0);
    if (!errout->s) buf_add(errout, "", 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void qs_sched_tasklist(const int *idx, int n, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && idx[j + 1] == idx[j] + 1) j++;
        const int w = j > i ? snprintf(buf + o, len - o, "%s%d-%d", o ? "," : "", idx[i], idx[j])
                            : snprintf(buf + o, len - o, "%s%d", o ? "," : "", idx[i]);
        if (w < 0 || (size_t)w >= len - o) break;
        o += (size_t)w;
        i = j + 1;
    }
}

/* "0-3,5" into flags over [0, n): -1 if it is not such a list or names a
 * task outside [0, n). */
static int parse_tasks(const char *s, int n, unsigned char *in)
{
    memset(in, 0, (size_t)n);
    if (!*s) return -1;
    for (const char *c = s;;) {
        char *end;
        errno = 0;
        const long a = strtol(c, &end, 10);
        if (end == c || errno || a < 0 || !isdigit((unsigned char)*c)) return -1;
        long b = a;
        c = end;
        if (*c == '-') {
            c++;
            if (!isdigit((unsigned char)*c)) return -1;
            b = strtol(c, &end, 10);
            if (errno || b < a) return -1;
            c = end;
        }
        if (b >= n) return -1;
        for (long k = a; k <= b; k++) in[k] = 1;
        if (!*c) return 0;
        if (*c != ',') return -1;
        c++;
    }
}

static int read_jobs(const char *dir, qs_sched *s, char *err, size_t errlen)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/slurm.jobs", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char *in = malloc((size_t)(s->n ? s->n : 1));
    char line[16384];
    int lineno = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        long long job = 0;
        char tasks[16384];
        if (!in || sscanf(line, "%lld %16383s", &job, tasks) != 2 || job <= 0 || parse_tasks(tasks, s->n, in)) {
            snprintf(err, errlen, "%s:%d: not a qsweep record ('JOBID TASKS' with tasks of this sweep's %d runs)", path,
                     lineno, s->n);
            rc = -1;
            break;
        }
        long long *nj = realloc(s->jobs, (size_t)(s->njobs + 1) * sizeof *nj);
        if (!nj) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        s->jobs = nj;
        s->jobs[s->njobs++] = job;
        for (int i = 0; i < s->n; i++)
            if (in[i]) s->task[i].job = job; /* later lines win */
    }
    fclose(f);
    free(in);
    return rc;
}

/* -j JOB,JOB,... */
static char *job_list(const qs_sched *s)
{
    char *list = malloc((size_t)s->njobs * 24 + 1);
    if (!list) return NULL;
    size_t o = 0;
    list[0] = '\0';
    for (int j = 0; j < s->njobs; j++) o += (size_t)sprintf(list + o, "%s%lld", j ? "," : "", s->jobs[j]);
    return list;
}

/* The run of array job `job`, task `task`, if it is that run's latest task. */
static qs_task *task_of(qs_sched *s, long long job, long task)
{
    if (task < 0 || task >= s->n || s->task[task].job != job) return NULL;
    return &s->task[task];
}

static void ask_queue(qs_sched *s, const char *list)
{
    char *argv[] = {"squeue", "-h", "-r", "-j", (char *)list, "-o", "%F|%K|%T", NULL};
    buf_t out = {0}, eo = {0};
    char err[300];
    const int rc = run_capture(argv, &out, &eo, err, sizeof err);
    if (rc < 0) {
        snprintf(s->queue_note, sizeof s->queue_note, "%s", err);
    } else if (rc != 0 && strstr(eo.s, "Invalid job id")) {
        s->have_queue = 1; /* every job has left the queue, and Slurm forgot them */
    } else if (rc != 0) {
        last_line(eo.s, err, sizeof err);
        snprintf(s->queue_note, sizeof s->queue_note, "squeue exited %d: %.250s", rc, err);
    } else {
        s->have_queue = 1;
        for (char *l = strtok(out.s, "\n"); l; l = strtok(NULL, "\n")) {
            long long job;
            long task;
            char state[24];
            if (sscanf(l, "%lld|%ld|%23s", &job, &task, state) != 3) continue; /* "N/A": not an array task */
            qs_task *t = task_of(s, job, task);
            if (t) snprintf(t->queue, sizeof t->queue, "%s", state);
        }
    }
    free(out.s), free(eo.s);
}

/* sacct's MaxRSS ("2516K", "12.5M", "0", "") in KiB; -1 when empty or not a size. */
static long long rss_kib(const char *v)
{
    char *end;
    errno = 0;
    const double x = strtod(v, &end);
    if (end == v || errno || x < 0) return -1;
    double k;
    switch (*end) {
    case '\0': k = 1.0 / 1024; break; /* bytes */
    case 'K': k = 1; break;
    case 'M': k = 1024; break;
    case 'G': k = 1024.0 * 1024; break;
    case 'T': k = 1024.0 * 1024 * 1024; break;
    default: return -1;
    }
    return (long long)(x * k + 0.5);
}

/* One line of sacct -P -o JobID,State,ExitCode,Elapsed,MaxRSS,NodeList split
 * at '|'. The JobID of an allocation is "JOB_TASK", or "JOB_[1-3,5%2]" for
 * tasks not started yet (pending ones are listed together); a step's is
 * "JOB_TASK.STEP" (batch, extern, 0, ...): it adds its MaxRSS only. */
enum { F_ID, F_STATE, F_EXIT, F_ELAPSED, F_RSS, F_NODES, NFIELDS };

static void acct_line(qs_sched *s, char **f)
{
    char *id = f[F_ID];
    char *us = strchr(id, '_');
    if (!us) return;
    *us = '\0';
    char *end;
    const long long job = strtoll(id, &end, 10);
    if (*end || job <= 0) return;
    char *t = us + 1;
    if (*t != '[') {
        const long task = strtol(t, &end, 10);
        if (end == t || (*end && *end != '.')) return;
        qs_task *q = task_of(s, job, task);
        if (!q) return;
        const long long rss = rss_kib(f[F_RSS]);
        if (rss > q->maxrss_kib) q->maxrss_kib = rss;
        if (*end == '.') return; /* a step: its memory only */
        /* "CANCELLED by 0": the first word is the state */
        if (sscanf(f[F_STATE], "%23s", q->acct) != 1) q->acct[0] = '\0';
        snprintf(q->exit_code, sizeof q->exit_code, "%s", f[F_EXIT]);
        snprintf(q->elapsed, sizeof q->elapsed, "%s", f[F_ELAPSED]);
        snprintf(q->nodes, sizeof q->nodes, "%s", strcmp(f[F_NODES], "None assigned") ? f[F_NODES] : "");
        return;
    }
    t++;
    t[strcspn(t, "]%")] = '\0';
    char state[24];
    if (sscanf(f[F_STATE], "%23s", state) != 1) return;
    unsigned char *in = malloc((size_t)(s->n ? s->n : 1));
    if (in && !parse_tasks(t, s->n, in))
        for (int i = 0; i < s->n; i++)
            if (in[i] && s->task[i].job == job) snprintf(s->task[i].acct, sizeof s->task[i].acct, "%s", state);
    free(in);
}

static void ask_acct(qs_sched *s, const char *list)
{
    char *argv[] = {"sacct", "-n", "-P", "-j", (char *)list, "-o", "JobID,State,ExitCode,Elapsed,MaxRSS,NodeList",
                    NULL};
    buf_t out = {0}, eo = {0};
    char err[300];
    const int rc = run_capture(argv, &out, &eo, err, sizeof err);
    if (rc < 0) {
        snprintf(s->acct_note, sizeof s->acct_note, "%s", err);
    } else if (rc != 0) {
        /* without slurmdbd: "Slurm accounting storage is disabled", exit 1 */
        last_line(eo.s[0] ? eo.s : out.s, err, sizeof err);
        snprintf(s->acct_note, sizeof s->acct_note, "sacct exited %d: %.250s", rc, err);
    } else {
        s->have_acct = 1;
        for (char *l = strtok(out.s, "\n"); l; l = strtok(NULL, "\n")) {
            char *f[NFIELDS];
            int k = 0;
            for (char *c = l; k < NFIELDS; k++) {
                f[k] = c;
                char *bar = c ? strchr(c, '|') : NULL;
                if (bar) *bar = '\0';
                c = bar ? bar + 1 : NULL;
                if (!c && k + 1 < NFIELDS) break;
            }
            if (k == NFIELDS) acct_line(s, f);
        }
    }
    free(out.s), free(eo.s);
}

int qs_sched_load(const char *dir, int nruns, int with_acct, qs_sched *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->n = nruns;
    s->task = calloc((size_t)(nruns ? nruns : 1), sizeof *s->task);
    if (!s->task) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < nruns; i++) s->task[i].maxrss_kib = -1;
    if (read_jobs(dir, s, err, errlen)) {
        qs_sched_free(s);
        return -1;
    }
    if (!s->njobs) {
        /* nothing submitted: nothing can be queued */
        s->have_queue = 1;
        snprintf(s->acct_note, sizeof s->acct_note, "nothing submitted");
        return 0;
    }
    char *list = job_list(s);
    if (!list) {
        qs_sched_free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ask_queue(s, list);
    if (with_acct) ask_acct(s, list);
    free(list);
    return 0;
}

void qs_sched_free(qs_sched *s)
{
    free(s->task), free(s->jobs);
    s->task = NULL, s->jobs = NULL;
}

int qs_sched_submit(const char *dir, const char *script, const int *idx, int n, long long *job, char *err,
                    size_t errlen)
{
    const size_t cap = (size_t)n * 24 + 16;
    char *tasks = malloc(cap), *arg = malloc(cap + 16);
    if (!tasks || !arg) {
        free(tasks), free(arg);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    qs_sched_tasklist(idx, n, tasks, cap);
    snprintf(arg, cap + 16, "--array=%s", tasks);
    char *argv[] = {"sbatch", "--parsable", arg, (char *)script, NULL};
    buf_t out = {0}, eo = {0};
    char msg[600];
    int rc = run_capture(argv, &out, &eo, msg, sizeof msg);
    char *end = NULL;
    /* --parsable: "JOBID" or "JOBID;CLUSTER" */
    const long long id = rc == 0 ? strtoll(out.s, &end, 10) : 0;
    if (rc < 0) {
        snprintf(err, errlen, "%s", msg);
    } else if (rc != 0) {
        last_line(eo.s[0] ? eo.s : out.s, msg, sizeof msg);
        snprintf(err, errlen, "sbatch refused the array (exit %d): %s", rc, msg);
    } else if (id <= 0 || end == out.s || (*end && *end != ';' && *end != '\n')) {
        last_line(out.s, msg, sizeof msg);
        snprintf(err, errlen, "sbatch printed no job id: %s", msg);
        rc = -1;
    }
    free(out.s), free(eo.s), free(arg);
    if (rc) {
        free(tasks);
        return -1;
    }
    *job = id;
    char path[4400];
    snprintf(path, sizeof path, "%s/slurm.jobs", dir);
    FILE *f = fopen(path, "a");
    int bad = !f;
    if (f) {
        fprintf(f, "%lld %s\n", id, tasks);
        if (fflush(f) != 0 || fsync(fileno(f)) != 0) bad = 1;
        if (fclose(f) != 0) bad = 1;
    }
    if (bad)
        snprintf(err, errlen, "Slurm accepted job %lld (tasks %.200s) but %s cannot be written: %s; add the line "
                 "'%lld %.200s' to it by hand", id, tasks, path, strerror(errno), id, tasks);
    free(tasks);
    return bad ? -1 : 0;
}
