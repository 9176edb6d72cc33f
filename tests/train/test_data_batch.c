/* test_data_batch.c — qp_data batches: the split and its rounding, batches
 * against the documented formula, determinism, the split boundary and the
 * target shift, too-short data, FNV-1a hashes, (when present) the
 * tinyshakespeare corpus, and the fixed (validation) batches. */
#include "qp_data.h"
#include "qp_test.h"
#include "test_data_util.h"

#include <stdint.h>
#include <stdlib.h>

#define CORPUS QP_DATA_CORPUS

static char err[512];

/* A shard whose token i is i: every token names its own position, so a batch
 * shows exactly which positions it read. */
static const char *position_shard(const char *name, int n)
{
    uint16_t *tok = malloc(n * sizeof *tok);
    for (int i = 0; i < n; i++) tok[i] = (uint16_t)i;
    const char *p = td_path(name);
    td_write_shard(p, 20240520, 1, n, tok, n);
    free(tok);
    return p;
}

static void test_open_and_split(void)
{
    /* 1001 tokens, val_frac 0.1: 100.1 val tokens round down to 100. */
    uint8_t bytes[1001];
    for (int i = 0; i < 1001; i++) bytes[i] = (uint8_t)(i * 7);
    const char *p = td_path("split.txt");
    td_write(p, bytes, sizeof bytes);
    qp_dataset *d = qp_dataset_open(p, 0.1, err, sizeof err);
    CHECK(d != NULL, "open: %s", err);
    if (!d) return;
    CHECK(strcmp(qp_dataset_kind(d), "bytes") == 0, "kind %s", qp_dataset_kind(d));
    CHECK(qp_dataset_vocab(d) == 256, "vocab %d", qp_dataset_vocab(d));
    CHECK(qp_dataset_tokens(d, QP_SPLIT_VAL) == 100, "val %lld", (long long)qp_dataset_tokens(d, QP_SPLIT_VAL));
    CHECK(qp_dataset_tokens(d, QP_SPLIT_TRAIN) == 901, "train %lld",
          (long long)qp_dataset_tokens(d, QP_SPLIT_TRAIN));
    CHECK(qp_dataset_tokens(d, 2) == -1, "unknown split");
    qp_dataset_close(d);

    const double bad[] = {0.0, 1.0, -0.25, 1.5, NAN};
    for (int k = 0; k < 5; k++) {
        err[0] = '\0';
        d = qp_dataset_open(p, bad[k], err, sizeof err);
        CHECK(d == NULL && strstr(err, "val_frac") && strstr(err, p), "val_frac %g: '%s'", bad[k], err);
        qp_dataset_close(d);
    }

    /* Too few tokens at open: each split needs one input and its target. */
    const char *empty = td_path("empty.txt"), *three = td_path("three.txt");
    td_write(empty, "", 0);
    td_write(three, "abc", 3);
    d = qp_dataset_open(empty, 0.5, err, sizeof err);
    CHECK(d == NULL && strstr(err, "too few tokens"), "empty: '%s'", err);
    d = qp_dataset_open(three, 0.5, err, sizeof err); /* 2 train, 1 val */
    CHECK(d == NULL && strstr(err, "too few tokens"), "three: '%s'", err);
    d = qp_dataset_open(td_path("missing.txt"), 0.1, err, sizeof err);
    CHECK(d == NULL && strstr(err, "missing.txt") && strstr(err, "No such file"), "missing: '%s'", err);
    d = qp_dataset_open(td_dir, 0.1, err, sizeof err);
    CHECK(d == NULL && strstr(err, "not a regular file"), "directory: '%s'", err);
}

/* Batches equal the reference, twice over, and move with seed and index. */
static void test_against_reference(void)
{
    enum { N = 20000 };
    uint8_t *bytes = malloc(N);
    int32_t *tok = malloc(N * sizeof *tok);
    unsigned long long s = 42;
    for (int i = 0; i < N; i++) tok[i] = bytes[i] = (uint8_t)qp_test_next(&s);
    const char *p = td_path("random.dat");
    td_write(p, bytes, N);
    qp_dataset *d = qp_dataset_open(p, 0.05, err, sizeof err);
    CHECK(d != NULL, "open: %s", err);
    if (!d) goto out;
    const int64_t ntr = qp_dataset_tokens(d, QP_SPLIT_TRAIN), nva = qp_dataset_tokens(d, QP_SPLIT_VAL);
    CHECK(ntr == 19000 && nva == 1000, "split %lld/%lld", (long long)ntr, (long long)nva);

    const int shapes[][2] = {{1, 1}, {4, 16}, {8, 64}, {3, 999}};
    int32_t in[8 * 999], tg[8 * 999], rin[8 * 999], rtg[8 * 999], in2[8 * 999], tg2[8 * 999];
    for (int sh = 0; sh < 4; sh++)
        for (int split = 0; split < 2; split++)
            for (int64_t index = 0; index < 40; index += 7) {
                const int B = shapes[sh][0], T = shapes[sh][1];
                const int64_t base = split ? ntr : 0, n = split ? nva : ntr;
                const int rc = qp_dataset_batch(d, split, 1234, index, B, T, in, tg);
                CHECK(rc == 0, "batch rc %d", rc);
                td_ref_batch(tok, base, n, split, 1234, index, B, T, rin, rtg, NULL);
                CHECK(memcmp(in, rin, (size_t)B * T * 4) == 0 && memcmp(tg, rtg, (size_t)B * T * 4) == 0,
                      "B=%d T=%d split=%d index=%lld differs from the reference", B, T, split, (long long)index);
                qp_dataset_batch(d, split, 1234, index, B, T, in2, tg2);
                CHECK(memcmp(in, in2, (size_t)B * T * 4) == 0 && memcmp(tg, tg2, (size_t)B * T * 4) == 0,
                      "batch not repeatable");
            }

    /* Another seed, index or split gives other windows. */
    qp_dataset_batch(d, QP_SPLIT_TRAIN, 1234, 3, 8, 64, in, tg);
    qp_dataset_batch(d, QP_SPLIT_TRAIN, 1235, 3, 8, 64, in2, tg2);
    CHECK(memcmp(in, in2, 8 * 64 * 4) != 0, "seed ignored");
    qp_dataset_batch(d, QP_SPLIT_TRAIN, 1234, 4, 8, 64, in2, tg2);
    CHECK(memcmp(in, in2, 8 * 64 * 4) != 0, "index ignored");
    qp_dataset_close(d);
out:
    free(bytes);
    free(tok);
}

/* Position-valued tokens: every train window stays below the boundary and
 * every val window above it, targets are inputs + 1, and with a window one
 * short of three spans the offsets reach both ends of each split. */
static void test_boundary_and_shift(void)
{
    enum { N = 5000 };
    qp_dataset *d = qp_dataset_open(position_shard("positions5000.bin", N), 0.2, err, sizeof err);
    CHECK(d != NULL, "open: %s", err);
    if (!d) return;
    const int64_t ntr = qp_dataset_tokens(d, QP_SPLIT_TRAIN), nva = qp_dataset_tokens(d, QP_SPLIT_VAL);
    CHECK(ntr == 4000 && nva == 1000, "split %lld/%lld", (long long)ntr, (long long)nva);
    for (int split = 0; split < 2; split++) {
        const int64_t lo = split ? ntr : 0, n = split ? nva : ntr;
        const int Ts[] = {1, 17, (int)n - 3, (int)n - 1};
        for (int k = 0; k < 4; k++) {
            const int B = 4, T = Ts[k];
            int32_t *in = malloc((size_t)B * T * 4), *tg = malloc((size_t)B * T * 4);
            int64_t min_in = INT64_MAX, max_tg = -1;
            int bad_range = 0, bad_shift = 0, bad_row = 0;
            for (int64_t index = 0; index < 60; index++) {
                if (qp_dataset_batch(d, split, 7, index, B, T, in, tg)) {
                    bad_range++;
                    continue;
                }
                for (int i = 0; i < B * T; i++) {
                    bad_range += in[i] < lo || tg[i] >= lo + n;
                    bad_shift += tg[i] != in[i] + 1;
                    min_in = in[i] < min_in ? in[i] : min_in;
                    max_tg = tg[i] > max_tg ? tg[i] : max_tg;
                }
                for (int i = 0; i < B; i++)
                    for (int t = 1; t < T; t++) bad_row += in[i * T + t] != in[i * T + t - 1] + 1;
            }
            CHECK(bad_range == 0, "split %d T=%d: %d tokens outside [%lld, %lld)", split, T, bad_range,
                  (long long)lo, (long long)(lo + n));
            CHECK(bad_shift == 0, "split %d T=%d: %d targets are not the next token", split, T, bad_shift);
            CHECK(bad_row == 0, "split %d T=%d: %d rows are not contiguous windows", split, T, bad_row);
            if (T >= n - 3) /* 1 or 3 possible offsets over 240 draws: both ends are reached */
                CHECK(min_in == lo && max_tg == lo + n - 1, "split %d T=%d: reached [%lld, %lld], split is [%lld, %lld]",
                      split, T, (long long)min_in, (long long)max_tg, (long long)lo, (long long)(lo + n - 1));
            free(in);
            free(tg);
        }
    }
    qp_dataset_close(d);
}

/* A split needs T + 1 tokens; the boundary case is the whole split. */
static void test_too_short(void)
{
    enum { N = 300 };
    qp_dataset *d = qp_dataset_open(position_shard("positions300.bin", N), 0.1, err, sizeof err); /* 270 / 30 */
    CHECK(d != NULL, "open: %s", err);
    if (!d) return;
    static int32_t in[2 * 300], tg[2 * 300];
    CHECK(qp_dataset_batch(d, QP_SPLIT_VAL, 1, 0, 2, 30, in, tg) == -1, "val with T=30 of 30 tokens succeeded");
    CHECK(qp_dataset_batch(d, QP_SPLIT_VAL, 1, 0, 2, 29, in, tg) == 0, "val with T=29 of 30 tokens failed");
    CHECK(in[0] == 270 && tg[28] == 299 && in[29] == 270, "whole-split window: %d..%d, row 2 at %d", in[0], tg[28],
          in[29]);
    CHECK(qp_dataset_batch(d, QP_SPLIT_TRAIN, 1, 0, 2, 270, in, tg) == -1, "train with T=270 succeeded");
    CHECK(qp_dataset_batch(d, QP_SPLIT_TRAIN, 1, 0, 2, 269, in, tg) == 0, "train with T=269 failed");
    CHECK(qp_dataset_batch(d, QP_SPLIT_TRAIN, 1, 0, 0, 8, in, tg) == -1, "B=0 accepted");
    CHECK(qp_dataset_batch(d, QP_SPLIT_TRAIN, 1, 0, 2, 0, in, tg) == -1, "T=0 accepted");
    CHECK(qp_dataset_batch(d, 2, 1, 0, 2, 8, in, tg) == -1, "split 2 accepted");
    CHECK(qp_dataset_batch(d, QP_SPLIT_TRAIN, 1, -1, 2, 8, in, tg) == -1, "index -1 accepted");
    qp_dataset_close(d);
}

/* FNV-1a 64 over each token's four little-endian bytes, worked by hand. */
static void test_hash(void)
{
    const uint64_t basis = 0xcbf29ce484222325ull, prime = 0x100000001b3ull;
    CHECK(qp_batch_hash(NULL, 0) == basis, "empty hash");

    const int32_t tok[3] = {1, 256, -1};
    const uint8_t le[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff};
    uint64_t h = basis;
    for (int i = 0; i < 12; i++) h = (h ^ le[i]) * prime;
    CHECK(qp_batch_hash(tok, 3) == h, "hash %016llx, by hand %016llx", (unsigned long long)qp_batch_hash(tok, 3),
          (unsigned long long)h);
    CHECK(h == 0x50b26df106c3b41bull, "by-hand hash %016llx (Python: 50b26df106c3b41b)", (unsigned long long)h);

    /* The token 0x64636261 is the bytes "abcd"; the published FNV-1a 64 of
     * "a" pins the constants. */
    const int32_t abcd = 0x64636261;
    h = basis;
    for (const char *c = "abcd"; *c; c++) h = (h ^ (uint8_t)*c) * prime;
    CHECK(qp_batch_hash(&abcd, 1) == h, "token 0x64636261 hashes unlike \"abcd\"");
    CHECK(((basis ^ 'a') * prime) == 0xaf63dc4c8601ec8cull, "FNV-1a(\"a\") constants");

    const int32_t swapped[3] = {256, 1, -1};
    CHECK(qp_batch_hash(swapped, 3) != qp_batch_hash(tok, 3), "hash ignores order");
}

/* The real corpus, read back through the library against fread. */
static void test_corpus(void)
{
    FILE *f = fopen(CORPUS, "rb");
    if (!f) {
        printf("note: %s not found; corpus check skipped\n", CORPUS);
        return;
    }
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *bytes = malloc(size);
    int32_t *tok = malloc(size * sizeof *tok);
    const size_t got = fread(bytes, 1, size, f);
    fclose(f);
    CHECK(got == (size_t)size, "fread %zu of %ld", got, size);
    for (long i = 0; i < size; i++) tok[i] = bytes[i];
    qp_dataset *d = qp_dataset_open(CORPUS, 0.1, err, sizeof err);
    CHECK(d != NULL, "open corpus: %s", err);
    if (d) {
        const int64_t ntr = qp_dataset_tokens(d, QP_SPLIT_TRAIN), nva = qp_dataset_tokens(d, QP_SPLIT_VAL);
        CHECK(strcmp(qp_dataset_kind(d), "bytes") == 0 && qp_dataset_vocab(d) == 256, "corpus kind");
        CHECK(nva == (int64_t)(0.1 * size) && ntr + nva == size, "corpus split %lld/%lld of %ld", (long long)ntr,
              (long long)nva, size);
        enum { B = 8, T = 256 };
        static int32_t in[B * T], tg[B * T], rin[B * T], rtg[B * T];
        int bad = 0;
        for (int split = 0; split < 2; split++)
            for (int64_t index = 0; index < 50; index++) {
                qp_dataset_batch(d, split, 2024, index, B, T, in, tg);
                td_ref_batch(tok, split ? ntr : 0, split ? nva : ntr, split, 2024, index, B, T, rin, rtg, NULL);
                bad += memcmp(in, rin, sizeof in) != 0 || memcmp(tg, rtg, sizeof tg) != 0;
            }
        CHECK(bad == 0, "%d corpus batches differ from the reference", bad);
        qp_dataset_close(d);
    }
    free(bytes);
    free(tok);
}

/* The fixed batches (the validation set every run shares): windows spread
 * evenly over the whole split, the first at its start, the last ending at
 * its end, none overlapping; the same whatever the seed (there is none);
 * the most a set may hold covers the split with stride T. */
static void test_fixed(void)
{
    const int n = 5001, B = 3, T = 8;
    const char *p = position_shard("fixed.bin", n);
    qp_dataset *d = qp_dataset_open(p, 0.2, err, sizeof err);
    CHECK(d != NULL, "open: %s", err);
    if (!d) return;
    const int64_t nv = qp_dataset_tokens(d, QP_SPLIT_VAL), base = n - nv;
    const int64_t most = qp_dataset_fixed_batches(d, QP_SPLIT_VAL, B, T);
    CHECK(most == (nv - 1) / T / B, "most %lld for %lld val tokens", (long long)most, (long long)nv);
    int32_t in[3 * 8], tg[3 * 8];
    for (int64_t nb = 1; nb <= most; nb += (nb < 5 ? 1 : 7)) {
        int64_t prev = -1;
        for (int64_t k = 0; k < nb; k++) {
            CHECK(qp_dataset_fixed_batch(d, QP_SPLIT_VAL, k, nb, B, T, in, tg) == 0, "batch %lld of %lld",
                  (long long)k, (long long)nb);
            for (int i = 0; i < B; i++) {
                const int64_t w = k * B + i, nw = nb * B, off = in[i * T] - base;
                const int64_t want = nw > 1 ? w * (nv - 1 - T) / (nw - 1) : 0;
                CHECK(off == want, "nb %lld window %lld at %lld, want %lld", (long long)nb, (long long)w,
                      (long long)off, (long long)want);
                CHECK(prev < 0 || off - prev >= T, "windows overlap: %lld after %lld", (long long)off, (long long)prev);
                for (int t = 0; t < T; t++)
                    CHECK(in[i * T + t] == base + off + t && tg[i * T + t] == base + off + t + 1, "window content");
                prev = off;
            }
        }
        CHECK(nb == 1 || prev + T + 1 == nv, "the last window ends at the split's end (nb %lld)", (long long)nb);
    }
    CHECK(qp_dataset_fixed_batch(d, QP_SPLIT_VAL, 0, most + 1, B, T, in, tg) == -1, "a set larger than the split");
    CHECK(qp_dataset_fixed_batch(d, QP_SPLIT_VAL, 4, 4, B, T, in, tg) == -1, "index past the set");
    CHECK(qp_dataset_fixed_batch(d, QP_SPLIT_VAL, -1, 4, B, T, in, tg) == -1, "negative index");
    qp_dataset_close(d);
}

int main(void)
{
    td_init();
    test_open_and_split();
    test_against_reference();
    test_boundary_and_shift();
    test_too_short();
    test_hash();
    test_corpus();
    test_fixed();
    td_cleanup();
    return qp_test_finish("test_data_batch");
}
