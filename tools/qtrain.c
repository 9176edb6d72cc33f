/* qtrain.c — the command line of the trainer: options in, qp_train_run out.
 * Exit codes: 0 done, 1 runtime failure, 2 bad input, 3 diverged. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_dist.h"
#include "qp_omp.h"
#include "qp_train_args.h"
#include "qp_trainer.h"
#include "qp_version.h"

/* Ctrl-C and SIGTERM stop the run at the next step boundary. Both are
 * blocked in every thread (the mask is set first thing in main, before any
 * thread starts, and every thread inherits it) and taken by one thread that
 * waits for them, so no handler ever interrupts a system call of the
 * trainer, HDF5, OpenMP or MPI. With a handler instead, about one stop in
 * two hundred on a loaded machine aborted as the run file closed (HDF5's
 * metadata cache freeing a block whose end had been overwritten: free():
 * invalid pointer); the mechanism inside HDF5 was not found, and in 1000
 * stops under the same load with the waiting thread none did. */
static sigset_t stop_signals;

static void *wait_for_stop(void *arg)
{
    (void)arg;
    for (;;) {
        int sig;
        if (sigwait(&stop_signals, &sig) == 0) qp_train_stop_requested = 1;
    }
    return NULL;
}

static void on_signal(int sig)
{
    (void)sig;
    qp_train_stop_requested = 1;
}

/* The waiting thread; if it cannot start, a handler that only sets the flag. */
static void catch_stop_signals(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, wait_for_stop, NULL) == 0) {
        pthread_detach(t);
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    pthread_sigmask(SIG_UNBLOCK, &stop_signals, NULL);
}

/* Under mpirun every rank runs this; rank 0 speaks for all when they agree
 * (bad input, divergence: every rank sees the same), a runtime failure of
 * one rank takes the others down (MPI_Abort) rather than leave them waiting. */
static int finish(int rc, const char *err)
{
    if (rc != QP_EXIT_OK && (qp_dist_rank() == 0 || rc == QP_EXIT_RUNTIME))
        fprintf(stderr, "qtrain: %s\n", err[0] ? err : "failed");
    if (rc == QP_EXIT_RUNTIME) qp_dist_abort(rc);
    qp_dist_finalize();
    return rc;
}

int main(int argc, char **argv)
{
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL); /* (kept across qp_omp_apply's re-execution) */
    qp_omp_apply(argv); /* may re-execute this program with OpenMP's waiting policy set */
    const int di = qp_dist_init(&argc, &argv);
    if (di == -2) {
        const char *r = getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : getenv("PMI_RANK");
        if (!r || atoi(r) == 0)
            fprintf(stderr, "qtrain: started by mpirun with several ranks, but built without MPI "
                            "(install libopenmpi-dev and rebuild)\n");
        return QP_EXIT_BAD_INPUT;
    }
    if (di) {
        fprintf(stderr, "qtrain: MPI failed to start\n");
        return QP_EXIT_RUNTIME;
    }
    qp_train_opts o;
    qp_train_opts_default(&o);
    char err[1024] = "";
    const int pa = qp_train_parse_args(argc, argv, &o, err, sizeof err);
    if (pa == QP_ARGS_HELP || pa == QP_ARGS_VERSION || pa == QP_ARGS_MAN) {
        if (qp_dist_rank() == 0) {
            if (pa == QP_ARGS_HELP) qp_train_usage(stdout);
            else if (pa == QP_ARGS_MAN) qp_train_man(stdout);
            else printf("qtrain %s\n", qp_version());
        }
        return finish(0, err);
    }
    if (pa != QP_ARGS_OK) return finish(QP_EXIT_BAD_INPUT, err);
    if (o.explain) return finish(qp_dist_rank() == 0 ? qp_train_explain(&o, stdout, err, sizeof err) : QP_EXIT_OK, err);
    /* Stop at a step boundary on Ctrl-C / SIGTERM: the run file stays whole. */
    catch_stop_signals();
    /* Past a file size limit (ulimit -f) a write fails with EFBIG and the run
     * stops with a message, instead of the signal killing it mid-write. */
    signal(SIGXFSZ, SIG_IGN);
    const int rc = qp_train_run(&o, err, sizeof err);
    return finish(rc, err);
}
