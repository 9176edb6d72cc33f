/* qerr.c — command line and main of qerr: quantization error of every
 * tensor in safetensors, HDF5 or raw float32 files, per number format.
 *
 * Everything is computed before anything is printed: a run that fails on any
 * input prints nothing on stdout and exits 2 (see qerr.h for the pieces). */
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qerr.h"
#include "qp_raw.h"

#ifndef QP_VERSION
#define QP_VERSION "unknown"
#endif

static void usage(FILE *f)
{
    fprintf(f,
"usage: qerr [options] FILE...\n"
"Quantization error of every float tensor in safetensors or HDF5 FILEs (HDF5 by\n"
"extension .h5/.hdf5/.hdf/.he5 or signature), per format. A tensor is rows x cols,\n"
"cols = its last dimension. Non-float tensors and empty ones are skipped (note).\n"
"  --formats LIST   comma list (default " QERR_DEFAULT_FORMATS "),\n"
"                   of: %s\n"
"  --rht            also FMT+rht: 16-point random Hadamard transform first, error\n"
"                   in the rotated basis (skipped, with a note, if cols %% 16 != 0)\n"
"  --rht-signs S    seed (default): signs from --seed; te: Transformer Engine's\n"
"                   transform, fixed signs on H's rows (FMT+rht-te)\n"
"  --sr             also FMT+sr: stochastic rounding (with --rht also FMT+rht+sr)\n"
"  --seed N         RHT signs and SR seed (default 1); SR stream = hash of the name\n"
"  --raw f32:RxC FILE  also FILE as little-endian float32, exactly R*C*4 bytes\n"
"  --match REGEX    only tensors whose name matches (POSIX extended)\n"
"  --sort KEY       any column, worst first: rel_l2 max_abs sat_frac zero_frac\n"
"                   n_nonfinite descending, snr_db cosine ascending, other numbers\n"
"                   descending, tensor format file ascending; n/a last, stable\n"
"  --top N          only the first N rows (after --sort)\n"
"  --summary        per format: tensors, mean rel_l2, mean snr_db (finite ones;\n"
"                   \"exact\" counts the rest), worst tensor by rel_l2\n"
"  --csv            CSV with header (inf for +inf, empty field = n/a)\n"
"  --json           array of objects; non-finite numbers are null (snr_db of an\n"
"                   exact result, block_scale_* of formats without block scales)\n"
"  --h5 OUT         also the printed rows as HDF5 table /qerr (+ /qerr_summary)\n"
"  --threads N      N tensors at a time, 1..256 (default 1; same output)\n"
"  -h, --help       this text;  -V, --version  the version\n"
"Columns: rel_l2 = ||x-y||/||x||, snr_db = 10 log10(||x||^2/||x-y||^2), max_abs,\n"
"cosine, sat_frac (saturated/elements), zero_frac (non-zeros flushed to 0/non-zeros),\n"
"amax, scale, n_blocks, block_scale_min/max/log2_mean, n_nonfinite (NaN/Inf inputs,\n"
"left out); text shows the main ones, --csv/--json/--h5 all, plus file.\n"
"Progress goes to stderr when it is a terminal and a file has >= 16 tensors.\n"
"Exit: 0 ok, 2 any error (one line on stderr, nothing on stdout).\n",
            qp_format_names());
}

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("qerr: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

int main(int argc, char **argv)
{
    qerr_opts o;
    qerr_rows rows;
    qerr_summary sum[QERR_MAX_VARIANTS];
    char err[QP_ERR_LEN];
    const int pa = qerr_parse_args(argc, argv, &o, err, sizeof err);
    if (pa == QERR_ARGS_HELP) {
        usage(stdout);
        return 0;
    }
    if (pa == QERR_ARGS_VERSION) {
        printf("qerr %s\n", QP_VERSION);
        return 0;
    }
    if (pa != QERR_ARGS_OK) die("%s", err);

    if (qerr_run(&o, &rows, err, sizeof err)) die("%s", err);
    if (rows.n == 0) fprintf(stderr, "qerr: note: no tensors to report%s\n", o.have_match ? " (--match)" : "");
    if (o.summary) qerr_summarize(&rows, &o, sum);
    if (o.sort_key) qerr_sort(&rows, qerr_col_by_name(o.sort_key));
    qerr_rows shown = rows;
    if (o.top >= 0 && (size_t)o.top < shown.n) shown.n = (size_t)o.top;

    if (o.h5_out && qerr_write_h5(o.h5_out, &shown, o.summary ? sum : NULL, o.nvar, &o, err, sizeof err))
        die("%s", err);

    int rc;
    if (o.summary)
        rc = o.json ? qerr_print_summary_json(stdout, sum, o.nvar)
           : o.csv  ? qerr_print_summary_csv(stdout, sum, o.nvar)
                    : qerr_print_summary_text(stdout, sum, o.nvar);
    else {
        /* The text table shows the file only when there is more than one. */
        rc = o.json ? qerr_print_json(stdout, &shown)
           : o.csv  ? qerr_print_csv(stdout, &shown)
                    : qerr_print_text(stdout, &shown, o.nin > 1);
    }
    if (rc || fflush(stdout) != 0) die("writing the report: %s", strerror(errno));

    qerr_rows_free(&rows);
    qerr_opts_free(&o);
    return 0;
}
