/* qs_dir.c — a sweep folder on disk (see qs_dir.h). */
#include "qs_dir.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

int qs_mkdir_p(const char *path)
{
    char buf[4400];
    if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf) return errno = ENAMETOOLONG, -1;
    for (char *c = buf + 1; *c; c++)
        if (*c == '/') {
            *c = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
            *c = '/';
        }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int qs_dir_make(const char *dir)
{
    char sub[4400];
    if ((size_t)snprintf(sub, sizeof sub, "%s/runs", dir) >= sizeof sub || qs_mkdir_p(sub)) return -1;
    snprintf(sub, sizeof sub, "%s/logs", dir);
    return qs_mkdir_p(sub);
}
