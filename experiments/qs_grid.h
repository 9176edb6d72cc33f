/* qs_grid.h — an experiment's grid expanded into runs.
 *
 * Owns: the run list (cartesian product of the [grid] axes in file order,
 * the first axis varying slowest, like nested loops), run names, the files
 * of a run inside the sweep folder, and each run's exact qtrain command:
 *   QTRAIN [base options, file order] [axis options, axis order]
 *          --out DIR/runs/NAME.h5 --resume --quiet --threads T
 * A name is `axis=value` joined by '_' (no axes: "base"), made a safe file
 * name: a recipe's ',' becomes '+', every byte outside [A-Za-z0-9.+=-]
 * becomes '-'. Two runs whose names collide are an error at the axis line.
 *
 * Noise twins ([sweep] noise_floor = RECIPE, ...): after the grid, every run
 * of such a recipe gets a twin, named NAME_data_seed=D, that adds
 * --data-seed D with D = its data seed (data_seed's value, else seed's,
 * else qtrain's default) + QS_NOISE_SEED_OFFSET: the same initial weights,
 * other batches, stochastic rounding and Hadamard signs. The gap of a twin
 * to its run is the noise floor of the study. */
#ifndef QS_GRID_H
#define QS_GRID_H

#include <stddef.h>

#include "qs_ini.h"

#define QS_NOISE_SEED_OFFSET 1000

typedef struct {
    char name[256];
    int *vi;          /* value index per axis (a twin: its run's) */
    int twin_of;      /* -1, or the run this one is the noise twin of */
    char **argv;      /* NULL-terminated, argv[0] = qtrain */
    int argc;
    char h5[4352], log[4352], exitfile[4352];  /* DIR/runs/NAME.h5, DIR/logs/NAME.log, DIR/runs/NAME.exit */
} qs_run;

typedef struct {
    qs_run *runs;
    int n, threads;
    int ngrid;        /* runs[0..ngrid) are the grid, the rest noise twins */
    char dir[4096];   /* absolute sweep folder */
} qs_plan;

/* dir: the sweep folder (made absolute, not created); threads: per run. */
int qs_grid_expand(const qs_experiment *e, const char *qtrain, const char *dir, int threads, qs_plan *p, char *err,
                   size_t errlen);
void qs_grid_free(qs_plan *p);

/* The value of axis a in run r. */
const char *qs_grid_value(const qs_experiment *e, const qs_run *r, int a);
/* A run's value of a key: its axis value, else [base]'s, else NULL. */
const char *qs_grid_get(const qs_experiment *e, const qs_run *r, const char *key);
/* A run's recipe: qs_grid_get, else qtrain's default "bf16". */
const char *qs_grid_recipe(const qs_experiment *e, const qs_run *r);
/* The sanitized form of one value, as it appears in names. */
void qs_grid_safe(const char *value, char *buf, size_t len);

/* Make a path absolute against the working directory (no symlinks resolved,
 * nothing needs to exist). */
int qs_abspath(const char *path, char *buf, size_t len);

#endif
