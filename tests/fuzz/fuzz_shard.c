/* fuzz_shard.c — libFuzzer target for the trainer's data files
 * (train/run/qp_data.c): llm.c token-shard headers and bodies, and plain byte
 * files. The input is written to a temporary file (tmpfs where there is one)
 * under two names — NAME.bin, which must be a shard, and NAME.txt, read as
 * bytes unless it starts with the shard magic — and opened with
 * qp_dataset_open, as qtrain does.
 *
 * Contract: a rejected file gives one line starting with its path; an
 * accepted one has a consistent split, and every batch drawn from it holds
 * in-vocabulary tokens with targets = inputs shifted by one. Any breach
 * aborts. Replayed over the corpus by fuzz_replay.c in the ordinary build. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qp_data.h"

static char dir[64];

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        abort();
    }
    if (size && fwrite(data, 1, size, f) != size) abort();
    if (fclose(f)) abort();
}

static void check(const char *path, size_t size, double val_frac)
{
    char err[512];
    err[0] = '\0';
    qp_dataset *d = qp_dataset_open(path, val_frac, err, sizeof err);
    if (!d) {
        const size_t n = strlen(path);
        if (strncmp(err, path, n) || strncmp(err + n, ": ", 2) || !err[n + 2] || strchr(err, '\n')) abort();
        return;
    }
    const int vocab = qp_dataset_vocab(d);
    const int shard = !strcmp(qp_dataset_kind(d), "llmc-shard");
    if (vocab != (shard ? 50257 : 256)) abort();
    const int64_t nt = qp_dataset_tokens(d, QP_SPLIT_TRAIN), nv = qp_dataset_tokens(d, QP_SPLIT_VAL);
    const int64_t total = shard ? ((int64_t)size - 1024) / 2 : (int64_t)size;
    if (nt < 2 || nv < 2 || nt + nv != total) abort();
    if (qp_dataset_tokens(d, 7) != -1) abort();
    const int B = 1 + (int)(size % 3);
    for (int T = 1; T <= 9; T += 4) {
        int32_t in[3 * 9], tg[3 * 9];
        for (int split = 0; split < 2; split++) {
            const int64_t n = split ? nv : nt;
            const int rc = qp_dataset_batch(d, split, 1234, (int64_t)size, B, T, in, tg);
            if ((rc == 0) != (n >= T + 1)) abort();
            if (rc) continue;
            for (int i = 0; i < B; i++)
                for (int t = 0; t < T; t++) {
                    const int32_t a = in[i * T + t], b = tg[i * T + t];
                    if (a < 0 || a >= vocab || b < 0 || b >= vocab) abort();
                    if (t + 1 < T && in[i * T + t + 1] != b) abort();
                }
        }
    }
    if (qp_dataset_batch(d, 0, 1, -1, B, 1, NULL, NULL) != -1) abort();
    if (qp_dataset_batch(d, 0, 1, 0, 0, 1, NULL, NULL) != -1) abort();
    if (qp_dataset_batch(d, 0, 1, 0, 1, 0, NULL, NULL) != -1) abort();
    qp_dataset_close(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) snprintf(dir, sizeof dir, "%s", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    char bin[128], txt[128];
    snprintf(bin, sizeof bin, "%s/qp-fuzz-shard-%d.bin", dir, (int)getpid());
    snprintf(txt, sizeof txt, "%s/qp-fuzz-shard-%d.txt", dir, (int)getpid());
    write_file(bin, data, size);
    check(bin, size, 0.1);
    check(bin, size, 0.5);
    rename(bin, txt);
    check(txt, size, 0.1);
    unlink(txt);
    return 0;
}
