/* qp_dist.c — ranks and collectives (see qp_dist.h). */
#include "qp_dist.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#if QP_HAVE_MPI
#include <mpi.h>
#endif

static double comm_ms;

double qp_dist_comm_ms(void) { return comm_ms; }
void qp_dist_add_comm_ms(double ms) { comm_ms += ms; }

#if QP_HAVE_MPI
/* The node-local rank a launcher announces (-1: none). */
static int launcher_local_rank(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}
#endif

/* The world size a launcher announces (0: none). */
static int launcher_size(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 0) return atoi(v);
    }
    return getenv("PMIX_RANK") || getenv("PMI_RANK") ? 1 : 0;
}

#if QP_HAVE_MPI
static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int started; /* we called MPI_Init */

static int active(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

int qp_dist_have_mpi(void) { return 1; }

int qp_dist_init(int *argc, char ***argv)
{
    if (active()) return 0;
    /* A plain process (no mpirun) stays one rank without touching MPI. */
    if (!launcher_size()) return 0;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return -1;
    started = 1;
    return 0;
}

void qp_dist_finalize(void)
{
    if (started && active()) MPI_Finalize();
    started = 0;
}

void qp_dist_abort(int code)
{
    if (active() && qp_dist_size() > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

int qp_dist_rank(void)
{
    int r = 0;
    if (active()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int qp_dist_size(void)
{
    int n = 1;
    if (active()) MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

/* MPI counts are int: long arrays go in pieces. */
#define PIECE ((int64_t)1 << 30)

static void allreduce(void *v, int64_t n, MPI_Datatype t, size_t esize, MPI_Op op)
{
    if (qp_dist_size() < 2 || n <= 0) return;
    const double t0 = now_ms();
    for (int64_t i = 0; i < n; i += PIECE) {
        const int k = (int)(n - i < PIECE ? n - i : PIECE);
        MPI_Allreduce(MPI_IN_PLACE, (char *)v + (size_t)i * esize, k, t, op, MPI_COMM_WORLD);
    }
    comm_ms += now_ms() - t0;
}

int qp_dist_local_rank(void)
{
    const int env = launcher_local_rank();
    if (env >= 0) return env;
    if (!active() || qp_dist_size() < 2) return 0;
    MPI_Comm node;
    int r = 0;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, qp_dist_rank(), MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return 0;
    MPI_Comm_rank(node, &r);
    MPI_Comm_free(&node);
    return r;
}

void qp_dist_sum_f32(float *v, int64_t n) { allreduce(v, n, MPI_FLOAT, sizeof *v, MPI_SUM); }
void qp_dist_sum_f64(double *v, int64_t n) { allreduce(v, n, MPI_DOUBLE, sizeof *v, MPI_SUM); }
void qp_dist_max_f32(float *v, int64_t n) { allreduce(v, n, MPI_FLOAT, sizeof *v, MPI_MAX); }

void qp_dist_barrier(void)
{
    if (qp_dist_size() < 2) return;
    const double t0 = now_ms();
    MPI_Barrier(MPI_COMM_WORLD);
    comm_ms += now_ms() - t0;
}

void qp_dist_bcast(void *buf, int64_t bytes, int root)
{
    if (qp_dist_size() < 2) return;
    const double t0 = now_ms();
    for (int64_t i = 0; i < bytes; i += PIECE) {
        const int k = (int)(bytes - i < PIECE ? bytes - i : PIECE);
        MPI_Bcast((char *)buf + i, k, MPI_BYTE, root, MPI_COMM_WORLD);
    }
    comm_ms += now_ms() - t0;
}

void qp_dist_allgather(const void *send, void *recv, int64_t bytes)
{
    const int n = qp_dist_size();
    if (n < 2) {
        if (recv != send) memcpy(recv, send, (size_t)bytes);
        return;
    }
    const double t0 = now_ms();
    if (bytes <= PIECE) {
        MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    } else {
        /* one rank's piece at a time into its place */
        for (int r = 0; r < n; r++)
            for (int64_t i = 0; i < bytes; i += PIECE) {
                const int k = (int)(bytes - i < PIECE ? bytes - i : PIECE);
                char *dst = (char *)recv + (size_t)r * (size_t)bytes + i;
                if (r == qp_dist_rank()) memcpy(dst, (const char *)send + i, (size_t)k);
                MPI_Bcast(dst, k, MPI_BYTE, r, MPI_COMM_WORLD);
            }
    }
    comm_ms += now_ms() - t0;
}

#else /* one process */

int qp_dist_have_mpi(void) { return 0; }
int qp_dist_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return launcher_size() > 1 ? -2 : 0; /* N copies of one process would share one run file */
}
void qp_dist_finalize(void) {}
void qp_dist_abort(int code) { (void)code; }
int qp_dist_rank(void) { return 0; }
int qp_dist_size(void) { return 1; }
int qp_dist_local_rank(void) { return 0; }
void qp_dist_barrier(void) {}
void qp_dist_sum_f32(float *v, int64_t n) { (void)v, (void)n; }
void qp_dist_sum_f64(double *v, int64_t n) { (void)v, (void)n; }
void qp_dist_max_f32(float *v, int64_t n) { (void)v, (void)n; }
void qp_dist_bcast(void *buf, int64_t bytes, int root) { (void)buf, (void)bytes, (void)root; }
void qp_dist_allgather(const void *send, void *recv, int64_t bytes)
{
    if (recv != send) memcpy(recv, send, (size_t)bytes);
}
#endif
