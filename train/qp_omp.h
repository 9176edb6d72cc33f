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
 * fair share. So qtrain waits passively unless the user chose a policy
 * (OMP_WAIT_POLICY or GOMP_SPINCOUNT in the environment).
 *
 * libgomp reads its environment when the program is loaded, so the choice
 * is applied by setting it and re-executing the program (qp_omp_apply,
 * first thing in main, before MPI or any parallel region); the run file
 * records the policy in force (qp_omp_describe). */
#ifndef QP_OMP_H
#define QP_OMP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QP_OMP_KEEP,    /* the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT set): leave it */
    QP_OMP_PASSIVE, /* set OMP_WAIT_POLICY=passive */
} qp_omp_choice;

/* The choice for an environment with these values of OMP_WAIT_POLICY and
 * GOMP_SPINCOUNT (NULL: unset). */
qp_omp_choice qp_omp_choose(const char *wait_policy, const char *spincount);

/* Apply the choice to this process: when the environment must change, set
 * it and re-execute /proc/self/exe with the same arguments (marked with
 * QP_OMP_APPLIED=1 so it happens once). Returns when nothing needs doing or
 * the re-exec failed (the run then goes on with libgomp's defaults, which
 * qp_omp_describe reports). */
void qp_omp_apply(char **argv);

/* The policy in force, for the run file: e.g. "passive (qtrain's default)",
 * "active (OMP_WAIT_POLICY)", "GOMP_SPINCOUNT=1000 (environment)",
 * "libgomp default (spin, then sleep)". */
void qp_omp_describe(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
