/* qs_grid.h — an experiment's grid expanded into runs.
 *
 * Owns: the run list (cartesian product of the [grid] axes in file order,
 * the first axis varying slowest, like nested loops), run names, the files
 * of a run inside the sweep folder, and each run's exact qtrain command:
 *   QTRAIN [base options, file order] [axis options, axis order]
 *          --out DIR/runs/NAME.h5 --resume --quiet --threads T
 * A name is `axis=value` joined by '_' (no axes: "base"), made a safe file
 * name: a recipe's ',' becomes '+', every byte outside [A-Za-z0-9.+=-]
 * becomes '-'. Two runs whose names collide are an error at the axis line. */
#ifndef QS_GRID_H
#define QS_GRID_H

#include <stddef.h>

#include "qs_ini.h"

typedef struct {
    char name[256];
    int *vi;          /* value index per axis */
    char **argv;      /* NULL-terminated, argv[0] = qtrain */
    int argc;
    char h5[4352], log[4352], exitfile[4352];  /* DIR/runs/NAME.h5, DIR/logs/NAME.log, DIR/runs/NAME.exit */
} qs_run;

typedef struct {
    qs_run *runs;
    int n, threads;
    char dir[4096];   /* absolute sweep folder */
} qs_plan;

/* dir: the sweep folder (made absolute, not created); threads: per run. */
int qs_grid_expand(const qs_experiment *e, const char *qtrain, const char *dir, int threads, qs_plan *p, char *err,
                   size_t errlen);
void qs_grid_free(qs_plan *p);

/* The value of axis a in run r. */
const char *qs_grid_value(const qs_experiment *e, const qs_run *r, int a);
/* The sanitized form of one value, as it appears in names. */
void qs_grid_safe(const char *value, char *buf, size_t len);

/* Make a path absolute against the working directory (no symlinks resolved,
 * nothing needs to exist). */
int qs_abspath(const char *path, char *buf, size_t len);

#endif
