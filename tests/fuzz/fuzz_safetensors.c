/* fuzz_safetensors.c — libFuzzer target for the safetensors parser
 * (io/qp_safetensors.h, which brings the JSON parser along).
 *
 * Besides "no crash, no sanitizer report", every input checks the parser's
 * contract: success means a list whose shapes, sizes and data agree; failure
 * means one line that starts with the label and an untouched list. Any
 * breach aborts, so libFuzzer keeps the input. The same function is replayed
 * over the corpus by fuzz_replay.c in the ordinary test run. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_safetensors.h"
#include "qp_tensor_file.h"

static void count_note(const char *msg, void *user)
{
    if (!msg[0] || strchr(msg, '\n')) abort();
    ++*(int *)user;
}

static int every_other(const char *name, void *user)
{
    (void)user;
    return strlen(name) % 2 == 0;
}

static void check_list(const qp_tensor_list *l)
{
    volatile float sink = 0;
    for (size_t i = 0; i < l->n; i++) {
        const qp_tensor *t = &l->t[i];
        int64_t numel;
        if (t->ndim < 0 || t->ndim > QP_TENSOR_MAX_DIMS) abort();
        if (qp_shape_numel(t->ndim, t->shape, &numel) || numel != t->numel) abort();
        if ((numel > 0) != (t->data != NULL)) abort();
        if (numel > 0 && t->rows * t->cols != numel) abort();
        for (int64_t k = 0; k < numel; k++) sink += t->data[k]; /* every element readable */
    }
    for (size_t i = 0; i < l->n_meta; i++)
        if (!l->meta[i].key || !l->meta[i].value) abort();
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[QP_ERR_LEN];
    int notes = 0;
    const qp_read_opts plain = {NULL, count_note, &notes}, filtered = {every_other, count_note, &notes};
    for (int pass = 0; pass < 2; pass++) {
        qp_tensor_list l;
        qp_tensor_list_init(&l);
        err[0] = '\0';
        const int rc = qp_safetensors_parse(data, size, "fuzz", pass ? &filtered : &plain, &l, err, sizeof err);
        if (rc == 0) {
            check_list(&l);
        } else {
            if (rc != -1 || strncmp(err, "fuzz: ", 6) != 0 || strchr(err, '\n') || l.n || l.n_meta) abort();
        }
        qp_tensor_list_free(&l);
    }
    return 0;
}
