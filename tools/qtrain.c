/* qtrain.c — the command line of the trainer: options in, qp_train_run out.
 * Exit codes: 0 done, 1 runtime failure, 2 bad input, 3 diverged. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_train_args.h"
#include "qp_trainer.h"

static void on_signal(int sig)
{
    (void)sig;
    qp_train_stop_requested = 1;
}

int main(int argc, char **argv)
{
    qp_train_opts o;
    qp_train_opts_default(&o);
    char err[1024] = "";
    const int pa = qp_train_parse_args(argc, argv, &o, err, sizeof err);
    if (pa == QP_ARGS_HELP) {
        qp_train_usage(stdout);
        return 0;
    }
    if (pa != QP_ARGS_OK) {
        fprintf(stderr, "qtrain: %s\n", err);
        return QP_EXIT_BAD_INPUT;
    }
    /* Stop at a step boundary on Ctrl-C / SIGTERM: the run file stays whole. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* Past a file size limit (ulimit -f) a write fails with EFBIG and the run
     * stops with a message, instead of the signal killing it mid-write. */
    signal(SIGXFSZ, SIG_IGN);
    const int rc = qp_train_run(&o, err, sizeof err);
    if (rc != QP_EXIT_OK) fprintf(stderr, "qtrain: %s\n", err[0] ? err : "failed");
    return rc;
}
