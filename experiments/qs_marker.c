/* qs_marker.c — failure markers (see qs_marker.h). */
#include "qs_marker.h"
#include "qs_runfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int qs_marker_write(const char *path, int exit_code, const char *message)
{
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "exit %d\n", exit_code);
    for (const char *c = message; *c; c++) fputc(*c == '\n' ? ' ' : *c, f);
    fputc('\n', f);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

int qs_marker_read(const char *path, int *exit_code, char *message, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    int ok = fgets(line, sizeof line, f) && sscanf(line, "exit %d", exit_code) == 1;
    if (ok && len) {
        message[0] = '\0';
        if (fgets(message, (int)len, f)) message[strcspn(message, "\n")] = '\0';
    }
    fclose(f);
    return ok ? 0 : -1;
}

void qs_marker_remove(const char *path)
{
    unlink(path);
}

void qs_last_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    /* the tail is enough: qtrain's error is its last line */
    if (fseek(f, 0, SEEK_END) == 0) {
        const long end = ftell(f);
        fseek(f, end > 8192 ? end - 8192 : 0, SEEK_SET);
    }
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        /* only the last attempt counts: its header ("== qsweep DATE: cmd")
         * starts afresh; qsweep's footer ("== qsweep: exit ...") is skipped */
        if (!strncmp(line, "== qsweep ", 10)) buf[0] = '\0';
        else if (line[0] && strncmp(line, "== qsweep:", 10) != 0) snprintf(buf, len, "%s", line);
    }
    fclose(f);
}

int qs_run_failure(const char *h5, const char *log, qs_job_result *res, char *msg, size_t len)
{
    char err[600];
    msg[0] = '\0';
    if (res->outcome == QS_JOB_OK) {
        qs_runstats st;
        if (qs_runfile_read(h5, NAN, &st, err, sizeof err)) {
            res->outcome = QS_JOB_FAILED;
            snprintf(msg, len, "qtrain exited 0 but its run file is unreadable: %s", err);
        } else if (strcmp(st.state, "done")) {
            res->outcome = QS_JOB_FAILED;
            snprintf(msg, len, "qtrain exited 0 but its run file says '%s'", st.state);
        }
        qs_runstats_free(&st);
    }
    if (res->outcome != QS_JOB_FAILED) return 0;
    if (!msg[0]) {
        if (res->why[0]) snprintf(msg, len, "qsweep: %s", res->why);
        else qs_last_line(log, msg, len);
        if (!msg[0] && res->exit_code > 128) snprintf(msg, len, "killed by signal %d", res->exit_code - 128);
    }
    return 1;
}
