/* qs_ini.h — the experiment file: parsing and checking.
 *
 * Owns: the experiment format (documented by the commented examples in
 * experiments/ (the .ini files) and in docs/qsweep.md) and its in-memory form:
 *   [base]   key = value         any qtrain value option (qs_opts.h), once
 *   [grid]   key = v1, v2, ...   an axis per key, in file order
 *            exclude = k1=v k2=w  combinations left out (after the axes they name)
 *   [sweep]  baseline = RECIPE, target_loss = X, threads_per_run = N,
 *            noise_floor = RECIPE[, RECIPE...] (recipes of the sweep)
 *   [slurm]  partition, account, time, cpus_per_task, gpus_per_task, ntasks,
 *            mpi: the job array's resources (qs_slurm.h); may change
 *            between submissions, like [sweep]
 * Lines: `# ...` or `; ...` comments, blank lines, [section], key = value.
 * In a recipe, `|` stands for the comma of qtrain's --recipe syntax (so a
 * grid value can hold modifiers and rules, docs/recipes.md):
 * `nvfp4|bf16-last=0|~L0=bf16` is --recipe nvfp4,bf16-last=0,~L0=bf16. Every error is one `FILE:LINE: message`; nothing is
 * kept from a file with an error. A relative data path is taken from the
 * experiment file's folder. */
#ifndef QS_INI_H
#define QS_INI_H

#include <stddef.h>

#define QS_MAX_NOISE 8
#define QS_MAX_EXCLUDE_CONDS 8

typedef struct {
    char *key;        /* canonical option key (qs_opts.h) */
    char *value;      /* as qtrain takes it ('|' already turned into ',') */
    int line;
} qs_kv;

typedef struct {
    char *key;
    char **values;    /* as qtrain takes them */
    int nvalues, line;
} qs_axis;

/* [slurm]: what the job array asks Slurm for. Unset: "" / 0 (gpus_per_task -1). */
typedef struct {
    char partition[128], account[128]; /* #SBATCH --partition / --account */
    char time[32];                     /* --time, in one of Slurm's formats */
    char mpi[32];                      /* srun --mpi= for ntasks > 1 (default pmix); mpirun: mpirun -np */
    int cpus_per_task;                 /* default: the threads per run */
    int gpus_per_task;                 /* -1: 1 if a run uses --device cuda, else none */
    int ntasks;                        /* MPI ranks per run (srun qtrain); default 1 */
} qs_slurm_opts;

typedef struct {
    char path[4096];          /* the file read */
    qs_kv *base;              /* [base] in file order; data is absolute */
    int nbase, base_line;     /* base_line: the [base] header, or 0 */
    qs_axis *axes;
    int naxes;
    char baseline[1024];      /* recipe (at most QP_RECIPE_SPEC_MAX bytes); default "bf16" */
    double target_loss;       /* NaN: not set */
    int threads_per_run;      /* 0: not set (cores / -j) */
    qs_slurm_opts slurm;
    /* [sweep] noise_floor = R1, R2: every run of these recipes gets a twin
     * with the same initial weights and another data seed (qs_grid.h) */
    char noise[QS_MAX_NOISE][160];
    int nnoise;
    /* [grid] exclude = KEY=VALUE KEY=VALUE ...: the combinations whose
     * axes have all these values are not run (a triangular grid); each
     * condition is an axis index and a value index */
    struct {
        int n, axis[QS_MAX_EXCLUDE_CONDS], value[QS_MAX_EXCLUDE_CONDS], line;
    } *excl;
    int nexcl;
} qs_experiment;

/* data_override: a data file replacing [base] data (the CLI's --data), or NULL.
 * check_data: require the data file to exist (off for --summarize, whose
 * corpus may have moved). Returns 0, or -1 with err = "FILE:LINE: message". */
int qs_ini_load(const char *path, const char *data_override, int check_data, qs_experiment *e, char *err,
                size_t errlen);
/* The same from text in memory (len bytes, NUL bytes included); path names
 * it in messages and anchors a relative data path. */
int qs_ini_parse(const char *path, const char *text, size_t len, const char *data_override, int check_data,
                 qs_experiment *e, char *err, size_t errlen);
void qs_ini_free(qs_experiment *e);

/* The value of a [base] key, or NULL. */
const char *qs_ini_base(const qs_experiment *e, const char *key);
/* The axis named key, or -1. */
int qs_ini_axis(const qs_experiment *e, const char *key);

/* The experiment as a canonical file (what runs depends on: [base] and
 * [grid]; then [sweep] and [slurm]), written into DIR/qsweep.ini so --summarize and a
 * later run know the sweep. *identity_len: bytes of the [base]+[grid] part,
 * which must match for a rerun into the same DIR. malloc'd; NULL on OOM. */
char *qs_ini_canonical(const qs_experiment *e, size_t *identity_len);

#endif
