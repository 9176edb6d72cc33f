/* tensor_dump.c — test helper: read a tensor file with io/ exactly as qerr
 * does and write what came out, for the numpy comparisons in
 * test_convert.py.
 *   tensor_dump FILE OUT      (FILE: *.h5 -> HDF5 reader, else safetensors)
 * OUT gets the float32 data of every tensor back to back; stdout gets one
 * line per tensor: OFFSET NUMEL ROWS COLS DTYPE NDIM DIM... NAME
 * (OFFSET in floats; NAME last, so it may hold spaces). Notes go to stderr.
 * Exit 2 with the reader's one-line error on failure. */
#include <stdio.h>
#include <string.h>

#include "qp_h5read.h"
#include "qp_safetensors.h"

static void note(const char *msg, void *user)
{
    (void)user;
    fprintf(stderr, "note: %s\n", msg);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tensor_dump FILE OUT\n");
        return 2;
    }
    const size_t n = strlen(argv[1]);
    const int h5 = n > 3 && !strcmp(argv[1] + n - 3, ".h5");
    const qp_read_opts ro = {NULL, note, NULL};
    qp_tensor_list l;
    char err[QP_ERR_LEN];
    qp_tensor_list_init(&l);
    if ((h5 ? qp_h5_read(argv[1], &ro, &l, err, sizeof err)
            : qp_safetensors_read(argv[1], &ro, &l, err, sizeof err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    FILE *out = fopen(argv[2], "wb");
    if (!out) {
        perror(argv[2]);
        return 2;
    }
    long long off = 0;
    for (size_t i = 0; i < l.n; i++) {
        const qp_tensor *t = &l.t[i];
        printf("%lld %lld %lld %lld %s %d", off, (long long)t->numel, (long long)t->rows, (long long)t->cols,
               qp_dtype_name(t->dtype), t->ndim);
        for (int d = 0; d < t->ndim; d++) printf(" %lld", (long long)t->shape[d]);
        printf(" %s\n", t->name);
        if (t->numel && fwrite(t->data, sizeof(float), (size_t)t->numel, out) != (size_t)t->numel) {
            perror(argv[2]);
            return 2;
        }
        off += t->numel;
    }
    qp_tensor_list_free(&l);
    return fclose(out) == 0 ? 0 : 2;
}
