/* qs_cli.c — qsweep's command line (see qs_cli.h). */
#include "qs_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { O_PLAN, O_OUT, O_JOBS, O_DATA, O_QTRAIN, O_DRY_RUN, O_SLURM, O_SUBMIT, O_SUMMARIZE, O_STATUS, O_HELP, O_VERSION,
       O_MAN, O_COUNT };
const qp_cli_opt qs_cli_options[] = {
    {.id = O_PLAN, .name = "plan", .arg = "FILE",
     .help = "find the cheapest recipe within a loss budget: the [plan] section of FILE (docs/qsweep.md, \"Plans\"); "
             "--out defaults to sweeps/NAME for FILE NAME.ini"},
    {.id = O_OUT, .name = "out", .arg = "DIR",
     .help = "the sweep's folder: runs/NAME.h5 (run files), logs/NAME.log (each run's output), "
             "summary.{h5,csv,md}, qsweep.ini (the experiment as run)"},
    {.id = O_JOBS, .name = "jobs", .short_name = 'j', .arg = "N",
     .help = "runs at a time, an integer in 1..1024 (default 1); each gets --threads threads_per_run from [sweep], "
             "else max(1, cores / N)"},
    {.id = O_DATA, .name = "data", .arg = "FILE",
     .help = "train on FILE instead of [base] data (relative to the working directory)"},
    {.id = O_QTRAIN, .name = "qtrain", .arg = "PATH", .help = "the trainer (default: qtrain beside this qsweep)"},
    {.id = O_DRY_RUN, .name = "dry-run",
     .help = "check every run's options as qtrain would, print every run's name and exact qtrain command; run "
             "nothing"},
    {.id = O_SLURM, .name = "slurm",
     .help = "write DIR/qsweep.sbatch, a Slurm job array (task i = run i), with the resources of the experiment's "
             "[slurm] section; run nothing"},
    {.id = O_SUBMIT, .name = "submit",
     .help = "also submit it (sbatch) for the runs not done and not queued (a rerun resumes interrupted runs "
             "from their checkpoints); the job id goes to DIR/slurm.jobs"},
    {.id = O_SUMMARIZE, .name = "summarize", .arg = "DIR",
     .help = "rebuild DIR's summary from the run files there now (also while runs go on)"},
    {.id = O_STATUS, .name = "status", .arg = "DIR",
     .help = "per run: done, diverged, pending, running, failed, interrupted, ... from the run files and Slurm "
             "(squeue, and sacct where accounting is on)"},
    {.id = O_HELP, .name = "help", .short_name = 'h', .help = "this text"},
    {.id = O_VERSION, .name = "version", .help = "print qsweep's version and exit"},
    {.id = O_MAN, .name = "man", .help = "print this manual as a roff man page and exit"},
};
const int qs_cli_n_options = (int)(sizeof qs_cli_options / sizeof qs_cli_options[0]);
_Static_assert(sizeof qs_cli_options / sizeof qs_cli_options[0] == O_COUNT, "a row per option");

int qs_cli_parse(int argc, char **argv, qs_cli *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->jobs = 1;
    err[0] = '\0';
    qp_cli_iter it = {1, false};
    for (;;) {
        const char *val;
        const int k = qp_cli_next(&it, argc, argv, qs_cli_options, qs_cli_n_options, &val, err, errlen);
        if (k == QP_CLI_DONE) break;
        if (k == QP_CLI_BAD) return QS_CLI_BAD;
        if (k == QP_CLI_ARG) {
            if (c->file) {
                snprintf(err, errlen, "one experiment file at a time ('%.200s' and '%.200s')", c->file, val);
                return QS_CLI_BAD;
            }
            c->file = val;
            continue;
        }
        long long n;
        switch (qs_cli_options[k].id) {
        case O_HELP: return QS_CLI_HELP;
        case O_VERSION: return QS_CLI_VERSION;
        case O_MAN: return QS_CLI_MAN;
        case O_DRY_RUN: c->dry_run = 1; break;
        case O_SLURM: c->slurm = 1; break;
        case O_SUBMIT: c->submit = c->slurm = 1; break;
        case O_JOBS:
            if (qp_cli_int("--jobs", val, 1, 1024, &n, err, errlen)) return QS_CLI_BAD;
            c->jobs = (int)n;
            break;
        case O_PLAN: c->plan = val; break;
        case O_OUT: c->out = val; break;
        case O_DATA: c->data = val; break;
        case O_QTRAIN: c->qtrain = val; break;
        case O_SUMMARIZE: c->summarize = val; break;
        case O_STATUS: c->status = val; break;
        case O_COUNT: snprintf(err, errlen, "no such option"); return QS_CLI_BAD;
        }
    }
    if (c->summarize && c->status) {
        snprintf(err, errlen, "--summarize and --status exclude each other");
        return QS_CLI_BAD;
    }
    if (c->plan) {
        if (c->file || c->summarize || c->status || c->slurm) {
            snprintf(err, errlen, "--plan FILE takes no other experiment file, --summarize, --status or --slurm");
            return QS_CLI_BAD;
        }
        return QS_CLI_OK;
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
