/* test_data_loader.c — the prefetching loader: depths 0, 1 and 4 hand out
 * the same batches as qp_dataset_batch, in index order; a held batch is not
 * overwritten while the thread runs ahead; destroy returns whatever the
 * thread is doing; bad arguments are refused. A watchdog turns a hang into a
 * failure. */
#include "qp_data.h"
#include "qp_test.h"
#include "test_data_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { NB = 200, B = 4, T = 32 };
static char err[512];

static void sleep_ms(int ms)
{
    const struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* NB batches from `start` through a loader of `depth`, each checked against
 * qp_dataset_batch; the per-batch hashes go to hashes[2*k] (inputs) and
 * hashes[2*k+1] (targets). */
static void run_loader(const qp_dataset *d, int split, int depth, int64_t start, uint64_t *hashes)
{
    qp_loader *l = qp_loader_create(d, split, 99, B, T, depth, start, err, sizeof err);
    CHECK(l != NULL, "depth %d: %s", depth, err);
    if (!l) return;
    static int32_t in[B * T], tg[B * T], held_in[B * T], held_tg[B * T];
    int bad_index = 0, bad_data = 0, bad_wait = 0, bad_held = 0;
    for (int k = 0; k < NB; k++) {
        const int32_t *pi, *pt;
        int64_t index = -1;
        double wait = -1;
        if (qp_loader_next(l, &pi, &pt, &index, &wait)) {
            CHECK(0, "depth %d: next failed at batch %d", depth, k);
            break;
        }
        bad_index += index != start + k;
        bad_wait += !(isfinite(wait) && wait >= 0);
        qp_dataset_batch(d, split, 99, start + k, B, T, in, tg);
        bad_data += memcmp(pi, in, sizeof in) != 0 || memcmp(pt, tg, sizeof tg) != 0;
        hashes[2 * k] = qp_batch_hash(pi, B * T);
        hashes[2 * k + 1] = qp_batch_hash(pt, B * T);
        /* Hold the batch while the thread fills every free slot, then look
         * again: the pointers must still show the same tokens. */
        if (k % 50 == 0) {
            memcpy(held_in, pi, sizeof held_in);
            memcpy(held_tg, pt, sizeof held_tg);
            sleep_ms(5);
            bad_held += memcmp(pi, held_in, sizeof held_in) != 0 || memcmp(pt, held_tg, sizeof held_tg) != 0;
        }
    }
    CHECK(bad_index == 0, "depth %d: %d batches out of index order", depth, bad_index);
    CHECK(bad_data == 0, "depth %d: %d batches differ from qp_dataset_batch", depth, bad_data);
    CHECK(bad_wait == 0, "depth %d: %d wait times negative or not finite", depth, bad_wait);
    CHECK(bad_held == 0, "depth %d: %d held batches were overwritten", depth, bad_held);
    qp_loader_destroy(l);
}

static void test_depths(const qp_dataset *d)
{
    static uint64_t h[3][2 * NB];
    const int depths[3] = {0, 1, 4};
    for (int split = 0; split < 2; split++) {
        for (int k = 0; k < 3; k++) run_loader(d, split, depths[k], 17, h[k]);
        CHECK(memcmp(h[0], h[1], sizeof h[0]) == 0, "split %d: depth 0 and 1 hash sequences differ", split);
        CHECK(memcmp(h[0], h[2], sizeof h[0]) == 0, "split %d: depth 0 and 4 hash sequences differ", split);
        int distinct = 0;
        for (int k = 1; k < NB; k++) distinct += h[0][2 * k] != h[0][2 * k - 2];
        CHECK(distinct == NB - 1, "split %d: consecutive batches repeat", split);
    }
}

/* Destroy with the thread blocked on a full ring, mid-way, or not yet
 * started: each must return. */
static void test_destroy(const qp_dataset *d)
{
    const int32_t *pi, *pt;
    int64_t index;
    double wait;
    qp_loader *l = qp_loader_create(d, QP_SPLIT_TRAIN, 1, B, T, 3, 0, err, sizeof err);
    CHECK(l != NULL, "create: %s", err);
    if (l) {
        sleep_ms(50); /* the ring fills in microseconds; the thread then waits for space */
        qp_loader_destroy(l);
    }
    l = qp_loader_create(d, QP_SPLIT_TRAIN, 1, B, T, 2, 0, err, sizeof err);
    if (l) {
        CHECK(qp_loader_next(l, &pi, &pt, &index, &wait) == 0 && index == 0, "first batch");
        sleep_ms(50);
        qp_loader_destroy(l);
    }
    /* Many short lives, stopping at every stage of the thread's loop. */
    unsigned long long s = 5;
    int failed = 0;
    for (int r = 0; r < 300; r++) {
        l = qp_loader_create(d, r & 1, r, B, T, 1 + r % 4, r, err, sizeof err);
        if (!l) {
            failed++;
            continue;
        }
        const int take = (int)(qp_test_next(&s) % 6);
        for (int k = 0; k < take; k++) failed += qp_loader_next(l, &pi, &pt, &index, &wait) != 0 || index != r + k;
        if (qp_test_next(&s) & 1) sleep_ms(1);
        qp_loader_destroy(l);
    }
    CHECK(failed == 0, "%d failures across short-lived loaders", failed);
    qp_loader_destroy(NULL);
}

static void test_bad_arguments(const qp_dataset *d)
{
    const int64_t nva = qp_dataset_tokens(d, QP_SPLIT_VAL);
    qp_loader *l = qp_loader_create(d, QP_SPLIT_VAL, 1, B, (int)nva, 2, 0, err, sizeof err);
    CHECK(l == NULL && strstr(err, "val split") && strstr(err, "needs at least"), "T = val tokens: '%s'", err);
    qp_loader_destroy(l);
    l = qp_loader_create(d, QP_SPLIT_VAL, 1, B, (int)nva - 1, 2, 0, err, sizeof err);
    CHECK(l != NULL, "T = val tokens - 1: %s", err);
    qp_loader_destroy(l);
    const int bad[][4] = {{0, B, T, 1}, {0, 0, T, 1}, {0, B, 0, 1}, {0, B, T, -1}, {2, B, T, 1}};
    for (int k = 0; k < 5; k++) {
        err[0] = '\0';
        l = qp_loader_create(d, bad[k][0], 1, bad[k][1], bad[k][2], bad[k][3], k == 0 ? -1 : 0, err, sizeof err);
        CHECK(l == NULL && err[0] != '\0', "bad arguments %d accepted", k);
        qp_loader_destroy(l);
    }
}

int main(void)
{
    alarm(60); /* a hung destroy or next kills the test instead of ctest's timeout */
    td_init();
    enum { N = 50000 };
    uint8_t *bytes = malloc(N);
    unsigned long long s = 11;
    for (int i = 0; i < N; i++) bytes[i] = (uint8_t)qp_test_next(&s);
    const char *p = td_path("loader.dat");
    td_write(p, bytes, N);
    free(bytes);
    qp_dataset *d = qp_dataset_open(p, 0.1, err, sizeof err);
    CHECK(d != NULL, "open: %s", err);
    if (d) {
        test_depths(d);
        test_destroy(d);
        test_bad_arguments(d);
        qp_dataset_close(d);
    }
    td_cleanup();
    return qp_test_finish("test_data_loader");
}
