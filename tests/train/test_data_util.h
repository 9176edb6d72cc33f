/* test_data_util.h — what the qp_data tests share: a scratch directory, file
 * and shard writers, and an independent reference for a batch. The
 * reference restates the documented formula on a plain int32 token array, so
 * a test compares the library's file decoding and indexing against it. */
#ifndef TEST_DATA_UTIL_H
#define TEST_DATA_UTIL_H

#include "qp_rng.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TD_MAX_FILES 64
static char td_dir[256];
static char td_files[TD_MAX_FILES][320];
static int td_nfiles;

/* A fresh directory under $TMPDIR (or /tmp); exits if it cannot be made,
 * since no check could run without it. */
static inline void td_init(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(td_dir, sizeof td_dir, "%s/qp_data_test_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(td_dir)) {
        perror("mkdtemp");
        exit(2);
    }
}

/* The path of scratch file `name`, removed by td_cleanup. */
static inline const char *td_path(const char *name)
{
    if (td_nfiles == TD_MAX_FILES) {
        fprintf(stderr, "test_data_util: too many scratch files\n");
        exit(2);
    }
    char *p = td_files[td_nfiles++];
    snprintf(p, sizeof td_files[0], "%s/%s", td_dir, name);
    return p;
}

static inline void td_cleanup(void)
{
    for (int i = 0; i < td_nfiles; i++) unlink(td_files[i]);
    rmdir(td_dir);
}

static inline void td_write(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

/* An llm.c shard with the given header fields and `n` tokens written (which
 * may disagree with `count`, to make broken files); little-endian bytes. */
static inline void td_write_shard(const char *path, int32_t magic, int32_t version, int32_t count, const uint16_t *tok,
                           size_t n)
{
    const size_t len = 1024 + 2 * n;
    uint8_t *b = calloc(1, len);
    const int32_t h[3] = {magic, version, count};
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 4; j++) b[4 * k + j] = (uint8_t)((uint32_t)h[k] >> (8 * j));
    for (size_t i = 0; i < n; i++) {
        b[1024 + 2 * i] = (uint8_t)tok[i];
        b[1024 + 2 * i + 1] = (uint8_t)(tok[i] >> 8);
    }
    td_write(path, b, len);
    free(b);
}

/* Batch `index` of a split that starts at tok[base] and holds n tokens. */
static inline void td_ref_batch(const int32_t *tok, int64_t base, int64_t n, int split, uint64_t seed, int64_t index,
                         int B, int T, int32_t *in, int32_t *tg, int64_t *offs)
{
    for (int i = 0; i < B; i++) {
        const int64_t off = (int64_t)(qp_rng_u32(seed, (uint64_t)split, (uint64_t)(index * B + i)) % (uint64_t)(n - T));
        if (offs) offs[i] = off;
        for (int t = 0; t < T; t++) {
            in[i * T + t] = tok[base + off + t];
            tg[i * T + t] = tok[base + off + t + 1];
        }
    }
}

#endif
