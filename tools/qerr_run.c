/* qerr_run.c — read qerr's inputs one at a time and compute every tensor x
 * format row, on --threads worker threads.
 *
 * Files are read one after another and their data freed once their rows are
 * computed, so memory holds one file's tensors, not the whole run's. Each
 * worker takes the next tensor index and writes its results into that
 * tensor's own slots; rows are then appended in tensor order on the main
 * thread, so the output never depends on the thread count. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "qerr.h"
#include "qp_h5read.h"
#include "qp_raw.h"
#include "qp_safetensors.h"
#include "qp_tensor_file.h"

enum { SLOT_OK = 0, SLOT_SKIP_RHT = 1, SLOT_FAIL = -1 };

typedef struct {
    const qerr_opts *o;
    const char *file;
    const qp_tensor_list *l;
    qp_metrics *m;          /* l->n x nvar */
    int *status;            /* l->n x nvar */
    atomic_size_t next, done;
    int progress;
    pthread_mutex_t lock;
    struct timespec last;
} work;

static void compute_tensor(work *w, size_t i)
{
    const qp_tensor *t = &w->l->t[i];
    const qerr_opts *o = w->o;
    float *scratch = malloc((size_t)t->numel * sizeof *scratch);
    for (int v = 0; v < o->nvar; v++) {
        const qerr_variant *var = &o->var[v];
        int *st = &w->status[i * (size_t)o->nvar + v];
        if (var->rht && t->cols % QK_RHT != 0) {
            *st = SLOT_SKIP_RHT;
            continue;
        }
        if (!scratch) {
            *st = SLOT_FAIL;
            continue;
        }
        qp_qopts qo = {0};
        qo.stochastic = var->sr != 0;
        qo.seed = o->seed;
        qo.stream = qp_metrics_name_stream(t->name); /* qp_metrics.h */
        const int rc = qp_metrics_for_format(var->fmt, t->data, t->rows, t->cols, &qo, var->rht, o->seed,
                                             scratch, &w->m[i * (size_t)o->nvar + v]);
        *st = rc == 0 ? SLOT_OK : SLOT_FAIL;
    }
    free(scratch);
}

static double seconds_since(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + 1e-9 * (double)(b->tv_nsec - a->tv_nsec);
}

static void report_progress(work *w)
{
    const size_t done = atomic_fetch_add(&w->done, 1) + 1;
    if (!w->progress) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&w->lock);
    if (seconds_since(&w->last, &now) >= 0.1 || done == w->l->n) {
        fprintf(stderr, "\rqerr: %s: %zu/%zu tensors", w->file, done, w->l->n);
        fflush(stderr);
        w->last = now;
    }
    pthread_mutex_unlock(&w->lock);
}

static void *worker(void *arg)
{
    work *w = arg;
#ifdef _OPENMP
    /* Parallel across tensors already: the quantizer's own OpenMP regions
     * would only oversubscribe the cores. */
    if (w->o->threads > 1) omp_set_num_threads(1);
#endif
    for (;;) {
        const size_t i = atomic_fetch_add(&w->next, 1);
        if (i >= w->l->n) break;
        compute_tensor(w, i);
        report_progress(w);
    }
    return NULL;
}

static void compute_all(work *w)
{
    const int nthreads = w->o->threads < 1 ? 1 : w->o->threads;
    pthread_t tid[256];
    int started = 0;
    for (int k = 1; k < nthreads && k < 256; k++) {
        if (pthread_create(&tid[started], NULL, worker, w) != 0) break; /* fewer threads still finish */
        started++;
    }
    worker(w);
    for (int k = 0; k < started; k++) pthread_join(tid[k], NULL);
    if (w->progress) fprintf(stderr, "\r\033[K");
}

static void push_row(qerr_rows *rows, qerr_row *r, int *oom)
{
    if (rows->n == rows->cap) {
        const size_t cap = rows->cap ? 2 * rows->cap : 64;
        qerr_row *p = realloc(rows->r, cap * sizeof *p);
        if (!p) {
            *oom = 1;
            free(r->tensor);
            free(r->hist);
            return;
        }
        rows->r = p;
        rows->cap = cap;
    }
    rows->r[rows->n++] = *r;
}

void qerr_rows_free(qerr_rows *rows)
{
    for (size_t i = 0; i < rows->n; i++) free(rows->r[i].tensor), free(rows->r[i].hist);
    free(rows->r);
    memset(rows, 0, sizeof *rows);
}

static int want_tensor(const char *name, void *user)
{
    const qerr_opts *o = user;
    return !o->have_match || regexec(&o->match, name, 0, NULL, 0) == 0;
}

static void print_note(const char *msg, void *user)
{
    (void)user;
    fprintf(stderr, "qerr: note: %s\n", msg);
}

static int has_suffix(const char *s, const char *suf)
{
    const size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcasecmp(s + n - k, suf) == 0;
}

static int read_input(const qerr_opts *o, const qerr_input *in, qp_tensor_list *l, char *err, size_t errlen)
{
    const qp_read_opts ro = {want_tensor, print_note, (void *)o};
    if (in->kind == QERR_IN_RAW) {
        if (qp_raw_read(in->path, in->path, in->rows, in->cols, l, err, errlen)) return -1;
        if (!want_tensor(in->path, (void *)o)) {
            qp_tensor_list_free(l);
            qp_tensor_list_init(l);
        }
        return 0;
    }
    /* The extension decides when it names a format, so a broken .h5 file is
     * reported as "not an HDF5 file" rather than as a bad safetensors header;
     * otherwise the HDF5 signature does. */
    const int h5 = has_suffix(in->path, ".h5") || has_suffix(in->path, ".hdf5") ||
                   has_suffix(in->path, ".hdf") || has_suffix(in->path, ".he5");
    if (h5 || (!has_suffix(in->path, ".safetensors") && qp_h5_is_hdf5(in->path)))
        return qp_h5_read(in->path, &ro, l, err, errlen);
    return qp_safetensors_read(in->path, &ro, l, err, errlen);
}

static int rows_for_input(const qerr_opts *o, const qerr_input *in, const qp_tensor_list *l,
                          qerr_rows *rows, size_t *order, char *err, size_t errlen)
{
    const size_t nv = (size_t)o->nvar;
    work w = {.o = o, .file = in->path, .l = l};
    w.m = calloc(l->n * nv + 1, sizeof *w.m);
    w.status = calloc(l->n * nv + 1, sizeof *w.status);
    if (!w.m || !w.status) {
        free(w.m);
        free(w.status);
        snprintf(err, errlen, "%s: out of memory", in->path);
        return -1;
    }
    atomic_init(&w.next, 0);
    atomic_init(&w.done, 0);
    /* A progress line only where a person watches, and only when it helps. */
    w.progress = l->n >= 16 && isatty(STDERR_FILENO);
    pthread_mutex_init(&w.lock, NULL);
    clock_gettime(CLOCK_MONOTONIC, &w.last);
    w.last.tv_sec -= 1;
    compute_all(&w);
    pthread_mutex_destroy(&w.lock);
    int rc = 0;

    int oom = 0;
    for (size_t i = 0; rc == 0 && i < l->n; i++) {
        const qp_tensor *t = &l->t[i];
        char nb[256];
        int noted = 0;
        for (size_t v = 0; v < nv; v++) {
            const int st = w.status[i * nv + v];
            if (st == SLOT_SKIP_RHT) {
                if (!noted)
                    fprintf(stderr, "qerr: note: %s: tensor '%s': cols %lld is not a multiple of %d, skipped for +rht\n",
                            in->path, qp_escape_name(t->name, nb, sizeof nb), (long long)t->cols, QK_RHT);
                noted = 1;
                continue;
            }
            if (st == SLOT_FAIL) {
                snprintf(err, errlen, "%s: tensor '%s': %s: out of memory", in->path,
                         qp_escape_name(t->name, nb, sizeof nb), o->var[v].name);
                rc = -1;
                break;
            }
            qerr_row r = {in->path, strdup(t->name), &o->var[v], t->rows, t->cols, w.m[i * nv + v],
                          qerr_hist_text(&w.m[i * nv + v].bsd), (*order)++};
            if (!r.tensor || !r.hist) oom = 1, free(r.tensor), free(r.hist);
            else push_row(rows, &r, &oom);
            if (oom) {
                snprintf(err, errlen, "out of memory");
                rc = -1;
                break;
            }
        }
    }
    free(w.m);
    free(w.status);
    return rc;
}

int qerr_run(const qerr_opts *o, qerr_rows *rows, char *err, size_t errlen)
{
    size_t order = 0;
    memset(rows, 0, sizeof *rows);
    for (int k = 0; k < o->nin; k++) {
        qp_tensor_list l;
        qp_tensor_list_init(&l);
        if (read_input(o, &o->in[k], &l, err, errlen)) {
            qerr_rows_free(rows);
            return -1;
        }
        /* Empty tensors have nothing to quantize; keep the others. */
        size_t keep = 0;
        for (size_t i = 0; i < l.n; i++) {
            if (l.t[i].numel == 0) {
                char nb[256];
                fprintf(stderr, "qerr: note: %s: tensor '%s' is empty, skipped\n", o->in[k].path,
                        qp_escape_name(l.t[i].name, nb, sizeof nb));
                free(l.t[i].name);
                free(l.t[i].data);
                continue;
            }
            l.t[keep++] = l.t[i];
        }
        l.n = keep;
        const int rc = rows_for_input(o, &o->in[k], &l, rows, &order, err, errlen);
        qp_tensor_list_free(&l);
        if (rc) {
            qerr_rows_free(rows);
            return -1;
        }
    }
    return 0;
}
