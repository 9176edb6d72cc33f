/* qp_dist.h — the ranks of a data-parallel run (MPI), or one process.
 *
 * Owns: every cross-process call the trainer makes. Built against MPI
 * (QP_HAVE_MPI) it uses MPI_COMM_WORLD when the program was started by
 * mpirun (or any launcher that sets up MPI); without MPI, or when MPI is not
 * initialised (qp_dist_init not called, or the run is a plain process), it
 * is one rank of one and every collective is the identity. All collectives
 * are blocking, called by every rank in the same order, and add their wall
 * time to a counter (qp_dist_comm_ms) the trainer logs as /train/comm_ms. */
#ifndef QP_DIST_H
#define QP_DIST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Initialise MPI when built with it and started by a launcher (idempotent).
 * Returns 0; -1 when MPI failed to start; -2 when built without MPI but
 * started by mpirun with more than one rank. */
int qp_dist_init(int *argc, char ***argv);
/* Finalise MPI if qp_dist_init started it. */
void qp_dist_finalize(void);
/* Kill every rank (MPI_Abort) with `code`; in one process: nothing. */
void qp_dist_abort(int code);
int qp_dist_rank(void);
int qp_dist_size(void);
/* 1 when built with MPI. */
int qp_dist_have_mpi(void);

void qp_dist_barrier(void);
/* In place, over every rank; identical result on every rank. */
void qp_dist_sum_f32(float *v, int64_t n);
void qp_dist_sum_f64(double *v, int64_t n);
void qp_dist_max_f32(float *v, int64_t n);
/* Root's bytes to everyone. */
void qp_dist_bcast(void *buf, int64_t bytes, int root);
/* Every rank's `bytes` bytes of send into recv (size x bytes, rank order). */
void qp_dist_allgather(const void *send, void *recv, int64_t bytes);

/* Milliseconds spent in the collectives above since the start. */
double qp_dist_comm_ms(void);
/* Adds time spent in collectives outside this module (the GPU all-reduce). */
void qp_dist_add_comm_ms(double ms);
/* This rank's index among the ranks on its node: OMPI_COMM_WORLD_LOCAL_RANK
 * (or MPI_LOCALRANKID, SLURM_LOCALID) when the launcher sets it, else the
 * rank in MPI_Comm_split_type(MPI_COMM_TYPE_SHARED); 0 in one process. */
int qp_dist_local_rank(void);

#ifdef __cplusplus
}
#endif
#endif
