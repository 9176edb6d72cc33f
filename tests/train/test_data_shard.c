/* test_data_shard.c — llm.c shard parsing: the kind comes from the magic, a
 * good shard decodes to its tokens, and every broken header or body fails
 * with its own one-line message naming the file. */
#include "qp_data.h"
#include "qp_test.h"
#include "test_data_util.h"

#include <stdint.h>
#include <stdlib.h>

enum { N = 3000 };
static uint16_t tok[N + 1];
static char err[512];

/* Open must fail with a single-line message that names the file and holds
 * `want`. */
static void expect_error(const char *path, const char *want)
{
    err[0] = '\0';
    qp_dataset *d = qp_dataset_open(path, 0.1, err, sizeof err);
    CHECK(d == NULL, "%s opened, expected '%s'", path, want);
    qp_dataset_close(d);
    CHECK(strstr(err, want) != NULL, "%s: got '%s', expected '%s'", path, err, want);
    CHECK(strstr(err, path) != NULL, "message does not name the file: '%s'", err);
    CHECK(strchr(err, '\n') == NULL, "message is not one line: '%s'", err);
}

static void test_good_shard(const char *name)
{
    const char *p = td_path(name);
    td_write_shard(p, 20240520, 1, N, tok, N);
    qp_dataset *d = qp_dataset_open(p, 0.1, err, sizeof err);
    CHECK(d != NULL, "%s: %s", name, err);
    if (!d) return;
    CHECK(strcmp(qp_dataset_kind(d), "llmc-shard") == 0, "%s: kind %s", name, qp_dataset_kind(d));
    CHECK(qp_dataset_vocab(d) == 50257, "%s: vocab %d", name, qp_dataset_vocab(d));
    const int64_t ntr = qp_dataset_tokens(d, QP_SPLIT_TRAIN), nva = qp_dataset_tokens(d, QP_SPLIT_VAL);
    CHECK(ntr == 2700 && nva == 300, "%s: split %lld/%lld", name, (long long)ntr, (long long)nva);

    /* The whole split in one window (T = n - 1 leaves one offset, 0). */
    int32_t *in = malloc(N * 4), *tg = malloc(N * 4);
    int bad = 0;
    CHECK(qp_dataset_batch(d, QP_SPLIT_TRAIN, 9, 0, 1, (int)ntr - 1, in, tg) == 0, "whole train window");
    for (int i = 0; i < ntr - 1; i++) bad += in[i] != tok[i] || tg[i] != tok[i + 1];
    CHECK(qp_dataset_batch(d, QP_SPLIT_VAL, 9, 0, 1, (int)nva - 1, in, tg) == 0, "whole val window");
    for (int i = 0; i < nva - 1; i++) bad += in[i] != tok[ntr + i] || tg[i] != tok[ntr + i + 1];
    CHECK(bad == 0, "%s: %d tokens decode wrong", name, bad);

    /* Random batches against the reference on the int32 tokens. */
    int32_t *all = malloc(N * 4), rin[4 * 50], rtg[4 * 50];
    for (int i = 0; i < N; i++) all[i] = tok[i];
    bad = 0;
    for (int split = 0; split < 2; split++)
        for (int64_t index = 0; index < 30; index++) {
            qp_dataset_batch(d, split, 77, index, 4, 50, in, tg);
            td_ref_batch(all, split ? ntr : 0, split ? nva : ntr, split, 77, index, 4, 50, rin, rtg, NULL);
            bad += memcmp(in, rin, sizeof rin) != 0 || memcmp(tg, rtg, sizeof rtg) != 0;
        }
    CHECK(bad == 0, "%s: %d batches differ from the reference", name, bad);
    free(all);
    free(in);
    free(tg);
    qp_dataset_close(d);
}

static void test_broken(void)
{
    const char *p;
    p = td_path("magic.bin"); /* llm.c's later Llama 3 magic */
    td_write_shard(p, 20240801, 1, N, tok, N);
    expect_error(p, "bad magic 20240801");

    p = td_path("text.bin"); /* a .bin that is no shard at all */
    td_write(p, "hello, world, this is text", 26);
    expect_error(p, "not an llm.c shard");

    p = td_path("tiny.bin");
    td_write(p, "ab", 2);
    expect_error(p, "too short for the magic");

    p = td_path("version.bin");
    td_write_shard(p, 20240520, 7, N, tok, N);
    expect_error(p, "unsupported shard version 7");

    p = td_path("header.bin"); /* the magic, then 96 of the 1024 header bytes */
    uint8_t h[100] = {0x88, 0xd8, 0x34, 0x01, 1};
    td_write(p, h, sizeof h);
    expect_error(p, "truncated shard header");

    p = td_path("short.bin");
    td_write_shard(p, 20240520, 1, N, tok, N - 1);
    expect_error(p, "truncated shard: header says 3000 tokens");

    p = td_path("long.bin");
    td_write_shard(p, 20240520, 1, N, tok, N + 1);
    expect_error(p, "shard size mismatch: header says 3000 tokens");

    p = td_path("odd.bin"); /* one stray byte: not a whole token */
    uint8_t *b = malloc(1024 + 2 * N + 1);
    td_write_shard(p, 20240520, 1, N, tok, N);
    FILE *f = fopen(p, "rb");
    const size_t got = fread(b, 1, 1024 + 2 * N, f);
    fclose(f);
    b[got] = 0;
    td_write(p, b, got + 1);
    free(b);
    expect_error(p, "shard size mismatch");

    p = td_path("negative.bin");
    td_write_shard(p, 20240520, 1, -5, tok, 0);
    expect_error(p, "negative token count -5");

    const uint16_t saved = tok[1234];
    tok[1234] = 50257;
    p = td_path("range.bin");
    td_write_shard(p, 20240520, 1, N, tok, N);
    expect_error(p, "token 50257 at position 1234 is out of range");
    tok[1234] = 65535;
    const char *range2 = p = td_path("range2.bin");
    td_write_shard(p, 20240520, 1, N, tok, N);
    expect_error(p, "token 65535 at position 1234 is out of range");
    tok[1234] = saved;

    p = td_path("few.bin"); /* valid, but 3 tokens cannot make two splits */
    td_write_shard(p, 20240520, 1, 3, tok, 3);
    expect_error(p, "too few tokens");

    /* A small buffer truncates the message; no buffer is allowed too. */
    char small[8];
    memset(small, 'x', sizeof small);
    qp_dataset *d = qp_dataset_open(range2, 0.1, small, sizeof small);
    CHECK(d == NULL && memchr(small, '\0', sizeof small) != NULL, "short err buffer not terminated");
    d = qp_dataset_open(range2, 0.1, NULL, 0);
    CHECK(d == NULL, "NULL err buffer");
}

/* A file that merely looks binary but lacks the magic is bytes. */
static void test_bytes_not_shard(void)
{
    const char *p = td_path("notmagic.dat");
    uint8_t b[1024 + 64];
    for (size_t i = 0; i < sizeof b; i++) b[i] = (uint8_t)(i * 31 + 5);
    b[0] = 0x88; b[1] = 0xd8; b[2] = 0x34; b[3] = 0x03; /* one bit off the magic */
    td_write(p, b, sizeof b);
    qp_dataset *d = qp_dataset_open(p, 0.5, err, sizeof err);
    CHECK(d != NULL && strcmp(qp_dataset_kind(d), "bytes") == 0 && qp_dataset_vocab(d) == 256,
          "near-magic .dat: %s", d ? qp_dataset_kind(d) : err);
    if (d) CHECK(qp_dataset_tokens(d, QP_SPLIT_TRAIN) + qp_dataset_tokens(d, QP_SPLIT_VAL) == (int64_t)sizeof b,
                 "bytes file token count");
    qp_dataset_close(d);
}

int main(void)
{
    td_init();
    /* Every interesting value: 0, byte boundaries, the last GPT-2 token. */
    unsigned long long s = 3;
    for (int i = 0; i < N; i++) tok[i] = (uint16_t)(qp_test_next(&s) % 50257);
    tok[0] = 0; tok[1] = 255; tok[2] = 256; tok[3] = 50256; tok[N - 1] = 50256; tok[2800] = 0x1234;
    test_good_shard("good.bin");
    test_good_shard("good.tokens"); /* the magic, not the name, makes a shard */
    test_broken();
    test_bytes_not_shard();
    td_cleanup();
    return qp_test_finish("test_data_shard");
}
