/* qs_cli.c — qsweep's command line (see qs_cli.h). */
#include "qs_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int qs_cli_parse(int argc, char **argv, qs_cli *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->jobs = 1;
    err[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return QS_CLI_HELP;
        if (!strcmp(a, "--dry-run")) { c->dry_run = 1; continue; }
        if (!strcmp(a, "--slurm")) { c->slurm = 1; continue; }
        if (!strcmp(a, "--submit")) { c->submit = c->slurm = 1; continue; }
        if (!strncmp(a, "-j", 2) && a[2]) val = a + 2; /* -j4 */
        else if (a[0] == '-' && a[1]) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "%s needs a value (see --help)", a);
                return QS_CLI_BAD;
            }
            val = argv[++i];
        }
        if (!val) {
            if (c->file) {
                snprintf(err, errlen, "one experiment file at a time ('%s' and '%s')", c->file, a);
                return QS_CLI_BAD;
            }
            c->file = a;
        } else if (!strncmp(a, "-j", 2) || !strcmp(a, "--jobs")) {
            char *end;
            errno = 0;
            const long n = strtol(val, &end, 10);
            if (!*val || *end || errno || n < 1 || n > 1024) {
                snprintf(err, errlen, "-j expects an integer in 1..1024, not '%s'", val);
                return QS_CLI_BAD;
            }
            c->jobs = (int)n;
        } else if (!strcmp(a, "--out")) c->out = val;
        else if (!strcmp(a, "--data")) c->data = val;
        else if (!strcmp(a, "--qtrain")) c->qtrain = val;
        else if (!strcmp(a, "--summarize")) c->summarize = val;
        else if (!strcmp(a, "--status")) c->status = val;
        else {
            snprintf(err, errlen, "unknown option '%s' (see --help)", a);
            return QS_CLI_BAD;
        }
    }
    if (c->summarize && c->status) {
        snprintf(err, errlen, "--summarize and --status exclude each other");
        return QS_CLI_BAD;
    }
    if (c->summarize || c->status) {
        if (c->file || c->out || c->dry_run || c->slurm || c->data) {
            snprintf(err, errlen, "%s DIR takes no experiment file or other options", c->status ? "--status" : "--summarize");
            return QS_CLI_BAD;
        }
        return QS_CLI_OK;
    }
    if (!c->file) {
        snprintf(err, errlen, "no experiment file (see --help)");
        return QS_CLI_BAD;
    }
    if (!c->out) {
        snprintf(err, errlen, "--out DIR is required (see --help)");
        return QS_CLI_BAD;
    }
    if (c->dry_run && c->slurm) {
        snprintf(err, errlen, "--dry-run and %s exclude each other", c->submit ? "--submit" : "--slurm");
        return QS_CLI_BAD;
    }
    return QS_CLI_OK;
}
