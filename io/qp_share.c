/* qp_share.c — share/qprec/ beside the running executable (see qp_share.h). */
#include "qp_share.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int qp_share_path(const char *sub, char *buf, size_t len)
{
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(buf, len, "cannot read this executable's path (/proc/self/exe: %s)", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    /* PREFIX/bin/tool: drop "tool", then "bin" */
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(self, '/');
        if (!slash) {
            snprintf(buf, len, "this executable's path has no folder above its own: %s", self);
            return -1;
        }
        *slash = '\0';
    }
    const int w = snprintf(buf, len, "%s/share/qprec%s%s", self, sub && *sub ? "/" : "", sub ? sub : "");
    if (w < 0 || (size_t)w >= len) {
        snprintf(buf, len, "the path of qprec's share/ folder is too long");
        return -1;
    }
    return 0;
}
