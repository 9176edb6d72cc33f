/* qs_ini.h — the experiment file: parsing and checking.
 *
 * Owns: the experiment format (documented by the commented examples in
 * experiments/ (the .ini files) and in docs/qsweep.md) and its in-memory form:
 *   [base]   key = value         any qtrain value option (qs_opts.h), once
 *   [grid]   key = v1, v2, ...   an axis per key, in file order
 *            exclude = k1=v k2=w  combinations left out (after the axes they name)
 *   [sweep]  baseline = RECIPE, target_loss = X, threads_per_run = N,
 *            noise_floor = RECIPE[, RECIPE...] (recipes of the sweep),
 *            attribute = blocks (per-layer attribution, qs_grid.h; the
 *            baseline must be bf16 or fp32),
 *            contrast = AXIS (each recipe's gap at every value of a grid
 *            axis against its first value, qs_summary.h; not seed, not
 *            recipe, at least two values)
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

typedef enum { QS_ATTRIBUTE_NONE = 0, QS_ATTRIBUTE_BLOCKS, QS_ATTRIBUTE_COUNT } qs_attribute;
extern const char *const qs_attribute_names[QS_ATTRIBUTE_COUNT]; /* "none", "blocks" */

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
    /* [sweep] attribute = blocks: every run of a recipe other than the
     * baseline gets a run per block with only that block in its recipe
     * (qs_grid.h) */
    qs_attribute attribute;
    /* [sweep] contrast = AXIS: the key of a grid axis whose values the
     * summary contrasts each recipe's gap across (qs_summary.h); "" none */
    char contrast[64];
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

/* Where a canonical text's (qs_ini_canonical's, n bytes) experiment starts:
 * its "[base]" line, the comment lines above it left out, so a folder's
 * identity does not change with them; NULL when it has no [base] line. */
const char *qs_ini_identity(const char *text, size_t n);

#endif
