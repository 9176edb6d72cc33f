/* qp_share.c — share/qprec/ beside the running executable (see qp_share.h). */
#include "qp_share.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int qp_exe_dir(char *buf, size_t len)
{
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(buf, len, "cannot read this executable's path (/proc/self/exe: %s)", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash) {
        snprintf(buf, len, "this executable's path has no folder: %s", self);
        return -1;
    }
    *slash = '\0';
    if ((size_t)snprintf(buf, len, "%s", self) >= len) {
        snprintf(buf, len, "this executable's folder's path is too long");
        return -1;
    }
    return 0;
}

int qp_share_path(const char *sub, char *buf, size_t len)
{
    char self[PATH_MAX];
    if (qp_exe_dir(self, sizeof self)) return snprintf(buf, len, "%s", self), -1;
    /* PREFIX/bin: drop "bin" */
    char *slash = strrchr(self, '/');
    if (!slash) {
        snprintf(buf, len, "this executable's path has no folder above its own: %s", self);
        return -1;
    }
    *slash = '\0';
    const int w = snprintf(buf, len, "%s/share/qprec%s%s", self, sub && *sub ? "/" : "", sub ? sub : "");
    if (w < 0 || (size_t)w >= len) {
        snprintf(buf, len, "the path of qprec's share/ folder is too long");
        return -1;
    }
    return 0;
}
