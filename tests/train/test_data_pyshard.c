/* test_data_pyshard.c — reads a shard that numpy wrote (driven by
 * test_data_pyshard.py) and checks every token of both splits, and a run of
 * batches, against the int32 copy numpy wrote beside it.
 *
 * usage: test_data_pyshard SHARD EXPECTED_INT32 */
#include "qp_data.h"
#include "qp_test.h"
#include "test_data_util.h"

#include <stdint.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SHARD EXPECTED_INT32\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        perror(argv[2]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    const int64_t n = ftell(f) / 4;
    fseek(f, 0, SEEK_SET);
    int32_t *tok = malloc(n * 4);
    const size_t got = fread(tok, 4, n, f); /* little-endian host, as the build assumes */
    fclose(f);
    CHECK(got == (size_t)n && n == 12345, "expected tokens: %zu of %lld", got, (long long)n);

    char err[512];
    qp_dataset *d = qp_dataset_open(argv[1], 0.25, err, sizeof err);
    CHECK(d != NULL, "open: %s", err);
    if (d) {
        CHECK(strcmp(qp_dataset_kind(d), "llmc-shard") == 0 && qp_dataset_vocab(d) == 50257, "kind %s vocab %d",
              qp_dataset_kind(d), qp_dataset_vocab(d));
        const int64_t ntr = qp_dataset_tokens(d, QP_SPLIT_TRAIN), nva = qp_dataset_tokens(d, QP_SPLIT_VAL);
        CHECK(nva == 3086 && ntr + nva == n, "split %lld/%lld", (long long)ntr, (long long)nva);

        /* T = n - 1: one window, the whole split. */
        int32_t *in = malloc(n * 4), *tg = malloc(n * 4);
        int bad = 0;
        for (int split = 0; split < 2; split++) {
            const int64_t base = split ? ntr : 0, ns = split ? nva : ntr;
            CHECK(qp_dataset_batch(d, split, 1, 0, 1, (int)ns - 1, in, tg) == 0, "whole split %d", split);
            for (int64_t i = 0; i < ns - 1; i++) bad += in[i] != tok[base + i] || tg[i] != tok[base + i + 1];
        }
        CHECK(bad == 0, "%d tokens differ from numpy's", bad);

        enum { B = 6, T = 40 };
        int32_t rin[B * T], rtg[B * T];
        bad = 0;
        for (int split = 0; split < 2; split++)
            for (int64_t index = 0; index < 100; index++) {
                qp_dataset_batch(d, split, 5, index, B, T, in, tg);
                td_ref_batch(tok, split ? ntr : 0, split ? nva : ntr, split, 5, index, B, T, rin, rtg, NULL);
                bad += memcmp(in, rin, sizeof rin) != 0 || memcmp(tg, rtg, sizeof rtg) != 0;
            }
        CHECK(bad == 0, "%d batches differ from the reference", bad);
        free(in);
        free(tg);
        qp_dataset_close(d);
    }
    free(tok);
    return qp_test_finish("test_data_pyshard");
}
