/* qp_omp.h — how the trainer's OpenMP threads wait.
 *
 * Owns: the choice of OpenMP's waiting policy for a run. Each training step
 * is a few hundred parallel regions; between them, and at their barriers,
 * libgomp's threads spin by default (OMP_WAIT_POLICY unset: ~300000 spins
 * before sleeping). On a machine whose cores are shared with other work
 * (other runs of a sweep, other users' builds) a spinning thread holds a core
 * its partner needs, the partner waits for a scheduler slice, and each
 * region costs milliseconds: a 2-thread run beside two 1-thread runs was
 * measured 20-60x slower than alone. Passive waiting (threads sleep at once,
 * and the scheduler favours sleepers when they wake) keeps such a run at a
 * fair share, but costs a wake-up (a futex, tens of microseconds) at every
 * region: on cores nothing else wants, that is most of a small model's step.
 * So qtrain chooses when it starts, unless the user chose a policy
 * (OMP_WAIT_POLICY or GOMP_SPINCOUNT in the environment):
 *   - a bounded spin (GOMP_SPINCOUNT=QP_OMP_SPIN_COUNT, then sleep) when this
 *     process's CPUs have room for all its threads with nothing else
 *     runnable on them (qp_omp_idle_cpus: the runnable tasks of
 *     /proc/loadavg, sampled, against the CPUs of its affinity mask);
 *   - passive waiting otherwise, and for one thread.
 * The spin is bounded so that a run joined later by others slows down to a
 * share rather than collapsing; qsweep, which starts runs side by side,
 * hands its runs passive waiting when it runs more than one at a time.
 *
 * The thread count is chosen the same way when the user leaves it to qtrain
 * (--threads auto, the default): the CPUs of the affinity mask that the
 * samples typically find idle, at least one. Beside two busy 1-thread runs
 * on 2 CPUs that is one thread, which never waits for a partner at a
 * barrier: a 2-thread run there waits for a scheduler slice at every region
 * that its partner's CPU spends on the other run (measured 6-22 ms per step
 * where alone it takes 3-5). Results do not depend on the count: the
 * model's kernels reduce in fixed blocks and the GEMMs split into blocks
 * fixed by their shape (train/precision/qp_gemm.c).
 *
 * libgomp reads its environment when the program is loaded, so the choice
 * is applied by setting it and re-executing the program (qp_omp_apply,
 * first thing in main, before MPI or any parallel region); the run file
 * records the policy in force (qp_omp_describe). */
#ifndef QP_OMP_H
#define QP_OMP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QP_OMP_KEEP,    /* the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT set): leave it */
    QP_OMP_PASSIVE, /* set OMP_WAIT_POLICY=passive */
    QP_OMP_SPIN,    /* set GOMP_SPINCOUNT=QP_OMP_SPIN_COUNT */
} qp_omp_choice;

/* libgomp's spins before a waiting thread sleeps (its default is 300000) */
#define QP_OMP_SPIN_COUNT "10000"

/* The choice for an environment with these values of OMP_WAIT_POLICY and
 * GOMP_SPINCOUNT (NULL: unset), for a run of `threads` threads on a machine
 * with idle_cpus CPUs free for it. */
qp_omp_choice qp_omp_choose(const char *wait_policy, const char *spincount, int threads, int idle_cpus);

/* CPUs of this process's affinity mask with nothing runnable on them, from
 * five samples of /proc/loadavg 10 ms apart (the runnable tasks, this one
 * excluded): *least counts against the most tasks seen (the waiting
 * policy's answer: spin only where nothing was seen), *typical against
 * their median (the thread count's: a task that came and went does not
 * halve the run); 0 when unreadable. QP_OMP_IDLE_CPUS=N in the environment
 * answers N for both (tests). */
void qp_omp_idle_cpus(int *least, int *typical);

/* The run's thread count as argv gives it (--threads N or --threads=N), 0
 * for auto (--threads auto, or no --threads: qtrain's default). */
int qp_omp_threads_arg(char **argv);

/* --threads auto's count: the one qp_omp_apply chose before it re-executed
 * the program (QP_OMP_THREADS in the environment), else the typical idle
 * CPUs sampled now; at least 1, at most the affinity mask's count. */
int qp_omp_auto_threads(void);

/* --threads auto as the run goes: between steps, qp_omp_adapt_threads
 * samples (at most every QP_OMP_ADAPT_MS) the tasks runnable on the machine
 * that are not this process's own threads, and answers the count for the
 * next step: the CPUs of the affinity mask the median of the last
 * QP_OMP_ADAPT_WINDOW samples leaves idle, at least 1, at most the count the
 * run started with. A run started on idle CPUs that others join drops to
 * what they leave it (a 2-thread run beside two busy 1-thread runs waits at
 * every region for its partner's CPU), and takes its threads back when they
 * finish. The results do not change (qp_gemm.c's fixed blocks).
 * QP_OMP_IDLE_FILE=PATH answers each sample with the number in PATH
 * instead (tests). */
#define QP_OMP_ADAPT_MS 100
#define QP_OMP_ADAPT_WINDOW 5
typedef struct {
    int start;                           /* the count the run started with */
    int current;                         /* the count in force */
    double next_ms;                      /* when to sample next (CLOCK_MONOTONIC, ms) */
    int busy[QP_OMP_ADAPT_WINDOW], n;    /* other runnable tasks, the last samples (ring) */
} qp_omp_adapt;
void qp_omp_adapt_init(qp_omp_adapt *a, int start);
int qp_omp_adapt_threads(qp_omp_adapt *a);

/* Apply the choice to this process: choose --threads auto's count
 * (QP_OMP_THREADS); when the environment must change, set it and
 * re-execute /proc/self/exe with the same arguments (marked with
 * QP_OMP_APPLIED=1 so it happens once), and set quant/'s parallel minimum
 * for the policy in force (qp_omp_parallel_min). Returns when nothing needs
 * doing or the re-exec failed (the run then goes on with libgomp's defaults, which
 * qp_omp_describe reports). */
void qp_omp_apply(char **argv);

/* The fewest elements a tensor loop splits among threads
 * (qp_set_parallel_min) under OMP_WAIT_POLICY's value wait_policy (NULL:
 * unset): QP_OMP_PARALLEL_MIN_PASSIVE when threads wait passively, where
 * each parallel region wakes a sleeping thread that may have to wait for a
 * CPU other work holds (a 2-layer 64-wide 2-thread run beside two 1-thread
 * runs, passive, 12 runs each: with tensors split from 32k elements 9 took
 * 11.9-24.2 ms per step; from 256k, 10 took 6.4-7.4 ms); the default when
 * they spin, where splitting pays from 32k elements. */
#define QP_OMP_PARALLEL_MIN_PASSIVE ((int64_t)1 << 18)
int64_t qp_omp_parallel_min(const char *wait_policy);

/* The policy in force, for the run file: e.g. "passive (qtrain's default:
 * CPUs busy)", "spin 10000, then sleep (qtrain's default: CPUs idle)",
 * "active (OMP_WAIT_POLICY)", "GOMP_SPINCOUNT=1000 (environment)",
 * "libgomp default (spin, then sleep)". */
void qp_omp_describe(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
