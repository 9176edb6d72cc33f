/* qp_gnuplot.c — gnuplot variables and invocation (see qp_gnuplot.h). */
#define _GNU_SOURCE /* pipe2 */
#include "qp_gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void qp_gpv_init(qp_gpvars *v)
{
    memset(v, 0, sizeof *v);
}

void qp_gpv_free(qp_gpvars *v)
{
    free(v->s);
    memset(v, 0, sizeof *v);
}

static void put(qp_gpvars *v, const char *s, size_t n)
{
    if (v->oom) return;
    if (v->len + n + 1 > v->cap) {
        size_t cap = v->cap ? v->cap : 256;
        while (v->len + n + 1 > cap) cap *= 2;
        char *ns = realloc(v->s, cap);
        if (!ns) {
            v->oom = 1;
            return;
        }
        v->s = ns;
        v->cap = cap;
    }
    memcpy(v->s + v->len, s, n);
    v->len += n;
    v->s[v->len] = '\0';
}

static void puts_(qp_gpvars *v, const char *s)
{
    put(v, s, strlen(s));
}

static void begin(qp_gpvars *v, const char *name)
{
    if (v->len) puts_(v, "; ");
    puts_(v, name);
    puts_(v, "=");
}

/* Inside '...' gnuplot knows one escape: '' for a quote. */
static void quoted(qp_gpvars *v, const char *s)
{
    for (; *s; s++) {
        if (*s == '\'') put(v, "'", 1);
        put(v, s, 1);
    }
}

void qp_gpv_str(qp_gpvars *v, const char *name, const char *value)
{
    begin(v, name);
    puts_(v, "'");
    quoted(v, value);
    puts_(v, "'");
}

void qp_gpv_num(qp_gpvars *v, const char *name, double value)
{
    char buf[64];
    /* gnuplot reads "1" as an integer, and 1/2 as 0: always write a float */
    snprintf(buf, sizeof buf, "%.17g", value);
    if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
    begin(v, name);
    puts_(v, buf);
}

void qp_gpv_int(qp_gpvars *v, const char *name, long long value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", value);
    begin(v, name);
    puts_(v, buf);
}

void qp_gpv_words(qp_gpvars *v, const char *name, const char *const *words, int n)
{
    begin(v, name);
    puts_(v, "'");
    for (int i = 0; i < n; i++) {
        if (i) puts_(v, " ");
        puts_(v, "\"");
        for (const char *c = words[i]; *c; c++) /* a double quote would end the word early */
            put(v, *c == '"' ? "_" : *c == '\'' ? "''" : c, *c == '\'' ? 2 : 1);
        puts_(v, "\"");
    }
    puts_(v, "'");
}

/* ---- running it ------------------------------------------------------- */

/* The line of gnuplot's stderr worth showing: its message ("... line 12:
 * warning: ..."), not the echoed command or the caret under it. */
static void first_message(char *text, char *out, size_t len)
{
    char *pick = NULL, *fallback = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '^') p++;
        if (!*p) continue;
        if (!fallback) fallback = line;
        if (strstr(line, "line ") && strchr(line, ':')) {
            pick = line;
            break;
        }
    }
    if (!pick) pick = fallback ? fallback : "(empty message)";
    while (*pick == ' ') pick++;
    snprintf(out, len, "%s", pick);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

int qp_gnuplot_run(const char *script, const qp_gpvars *vars, char *err, size_t errlen)
{
    if (vars->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const char *exe = getenv("QP_GNUPLOT");
    if (!exe || !*exe) exe = "gnuplot";
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot run %s: pipe: %s", exe, strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot run %s: fork: %s", exe, strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL); /* qplot --follow blocks SIGINT/SIGTERM */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        setpgid(0, 0);
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            dup2(nul, 1);
        }
        dup2(fd[1], 2);
        execlp(exe, exe, "-d", "-e", vars->s ? vars->s : "", script, (char *)NULL);
        dprintf(2, "cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    /* Keep the start of stderr (the first message is what we report) and
     * drain the rest so gnuplot never blocks on a full pipe. */
    char buf[16384];
    size_t got = 0;
    for (;;) {
        char chunk[4096];
        ssize_t k = read(fd[0], chunk, sizeof chunk);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        size_t take = (size_t)k < sizeof buf - 1 - got ? (size_t)k : sizeof buf - 1 - got;
        memcpy(buf + got, chunk, take);
        got += take;
    }
    buf[got] = '\0';
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            snprintf(err, errlen, "%s: waitpid: %s", exe, strerror(errno));
            return -1;
        }
    int ok_exit = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok_exit && got == 0) return 0;
    if (got) {
        char msg[512];
        first_message(buf, msg, sizeof msg);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !strncmp(msg, "cannot run", 10))
            snprintf(err, errlen, "%s", msg);
        else
            snprintf(err, errlen, "gnuplot (%s): %s", base_name(script), msg);
    } else if (WIFSIGNALED(status))
        snprintf(err, errlen, "gnuplot (%s) killed by signal %d", base_name(script), WTERMSIG(status));
    else
        snprintf(err, errlen, "gnuplot (%s) exited with status %d", base_name(script), WEXITSTATUS(status));
    return -1;
}
