/* qerr.h — the pieces of the qerr tool and what they share.
 *
 * Owns: qerr's row (one tensor in one format variant), its column table (the
 * single list every output, --sort and the HDF5 table are driven by), and the
 * options. Files: qerr.c (main), qerr_args.c (command line), qerr_run.c (reading inputs,
 * computing metrics on N threads), qerr_cols.c (columns, sort, summary),
 * qerr_out.c (text, CSV, JSON), qerr_h5.c (--h5). */
#ifndef QERR_H
#define QERR_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qp_cli.h"
#include "qp_metrics.h"
#include "qp_quant.h"

#define QERR_MAX_VARIANTS (4 * QP_FMT_COUNT)

/* A format as reported: plain, +rht (+rht-te), +sr or +rht+sr. rht: a
 * qp_rht_kind (qp_hadamard.h). */
typedef struct {
    char name[48];
    qp_fmt fmt;
    int rht, sr;
} qerr_variant;

typedef enum { QERR_IN_FILE, QERR_IN_RAW } qerr_input_kind;

typedef struct {
    qerr_input_kind kind;
    const char *path;
    int64_t rows, cols;   /* raw only */
} qerr_input;

typedef struct {
    qerr_variant var[QERR_MAX_VARIANTS];
    int nvar;
    qerr_input *in;
    int nin;
    uint64_t seed;
    int threads;
    int csv, json, summary;
    const char *h5_out;
    const char *sort_key;  /* NULL: input order */
    long long top;         /* < 0: all */
    int have_match;
    regex_t match;
    const char *command;   /* the command line, for the --h5 attributes */
} qerr_opts;

#define QERR_DEFAULT_FORMATS "bf16,fp8-e4m3,mxfp8,mxfp4,nvfp4"

enum { QERR_ARGS_OK = 0, QERR_ARGS_HELP = 1, QERR_ARGS_VERSION = 3, QERR_ARGS_BAD = 2, QERR_ARGS_MAN = 4 };

/* qerr_args.c: the options, the one table the parser reads and --help and
 * --man print (qp_cli.h). */
extern const qp_cli_opt qerr_options[];
extern const int qerr_n_options;

/* qerr_args.c: parse argv[1..argc-1] into *o (defaults first). QERR_ARGS_OK,
 * QERR_ARGS_HELP, QERR_ARGS_VERSION, QERR_ARGS_MAN, or QERR_ARGS_BAD with a one-line message
 * (without "qerr: ") in err and nothing left to free. */
int qerr_parse_args(int argc, char **argv, qerr_opts *o, char *err, size_t errlen);
void qerr_opts_free(qerr_opts *o);

typedef struct {
    const char *file;          /* the input's path (not owned) */
    char *tensor;              /* owned */
    const qerr_variant *var;
    int64_t rows, cols;
    qp_metrics m;
    char *hist;                /* owned: m.bsd.hist as qerr_hist_text writes it */
    size_t order;              /* position in input order */
} qerr_row;

/* The non-empty bins of a block-scale histogram (qp_metrics.h) as
 * "BIN:COUNT" pairs, one space apart, BIN = zero, nan or floor(log2 scale);
 * "" without block scales. A new string (NULL: out of memory). */
char *qerr_hist_text(const qp_bscale_dist *d);

typedef struct {
    qerr_row *r;
    size_t n, cap;
} qerr_rows;

/* Per format variant, over its rows (--summary). */
typedef struct {
    const qerr_variant *var;
    int64_t tensors;
    int64_t exact;             /* rows with snr_db = +inf */
    double mean_rel_l2;        /* over rows with a finite rel_l2; NaN if none */
    double mean_snr_db;        /* over rows with a finite snr_db; NaN if none */
    double mean_sat_frac, mean_zero_frac;
    const char *worst_tensor;  /* largest rel_l2; NULL if none */
    const char *worst_file;
    double worst_rel_l2;
} qerr_summary;

typedef enum { QERR_STR, QERR_INT, QERR_REAL } qerr_kind;

typedef struct {
    const char *name;
    qerr_kind kind;
    int worst_low;             /* --sort: ascending (low values are the worst) */
    int in_text;               /* shown in the text table */
    const char *text_fmt;      /* printf format of a REAL in the text table */
    const char *(*str)(const qerr_row *);
    int64_t (*i64)(const qerr_row *);
    double (*f64)(const qerr_row *); /* NaN: not applicable (e.g. no block scales) */
} qerr_col;

extern const qerr_col qerr_cols[];
extern const int qerr_ncols;
const qerr_col *qerr_col_by_name(const char *name);
/* "a, b, c" of every column name (for the --sort error). */
const char *qerr_col_names(void);

/* qerr_cols.c */
void qerr_sort(qerr_rows *rows, const qerr_col *key);
/* s holds opts->nvar entries, in variant order. Call before qerr_sort, so
 * the sums run in input order and do not depend on the sort key. */
void qerr_summarize(const qerr_rows *rows, const qerr_opts *o, qerr_summary *s);

/* qerr_run.c: read every input and compute every row. Returns 0, or -1 with
 * the one-line error in err (nothing is left in rows then). */
int qerr_run(const qerr_opts *o, qerr_rows *rows, char *err, size_t errlen);
void qerr_rows_free(qerr_rows *rows);

/* qerr_out.c: write the report to f. Return 0, or -1 on a write error. */
int qerr_print_text(FILE *f, const qerr_rows *rows, int show_file);
int qerr_print_csv(FILE *f, const qerr_rows *rows);
int qerr_print_json(FILE *f, const qerr_rows *rows);
int qerr_print_summary_text(FILE *f, const qerr_summary *s, int n);
int qerr_print_summary_csv(FILE *f, const qerr_summary *s, int n);
int qerr_print_summary_json(FILE *f, const qerr_summary *s, int n);

/* qerr_h5.c: the rows (and the summary, if s) as HDF5 tables. */
int qerr_write_h5(const char *path, const qerr_rows *rows, const qerr_summary *s, int n,
                  const qerr_opts *o, char *err, size_t errlen);

#endif
