/* test_runlog_writer.c — writes a run file with known contents for
 * test_runlog_h5py.py, which recomputes every value (runlog_rows() below and
 * expected_rows() there must agree, formula for formula).
 *
 *   test_runlog_writer create PATH LAST FLUSH_EVERY SLEEP_MS
 *   test_runlog_writer resume PATH FROM LAST FLUSH_EVERY SLEEP_MS
 *
 * create writes steps 1..LAST, resume cuts the file to FROM and writes
 * FROM+1..LAST. After every FLUSH_EVERY steps it flushes and prints
 * "flushed S" (S: the last step flushed). SLEEP_MS < 0 means lockstep: after
 * each "flushed" line it waits for a line on stdin (until stdin closes), so
 * the reader decides when the writer goes on. Exit 0 when done, 1 with a message on error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qp_runlog.h"

static const char *const GEMMS[] = {"fc", "attn_qkv", "fc"};
static const char *const OPERANDS[] = {"x", "w", "dy"};
static const char *const PASSES[] = {"fprop", "fprop", "dgrad"};

static int step_rows(qp_runlog *l, int64_t s, char *err, size_t n)
{
    const double d = (double)s;
    const qp_train_row r = {
        .step = s,
        .loss = 3.0 + 1.0 / d,
        .lr = 6e-4 * d / (d + 100.0),
        .grad_norm = 0.5 + d * 0.125,
        .step_ms = 100.0 + (double)(s % 7),
        .data_wait_ms = (double)(s % 3) * 0.25,
        .tokens_per_s = 65536.0 / (0.1 + (double)(s % 7) * 0.001),
        .batch_hash = (uint64_t)s * 0x9E3779B97F4A7C15ull,
        .comm_ms = (double)(s % 5) * 0.5,
        .power_w = 250.0 + (double)(s % 11),
        .energy_j = 2.5 * d,
        .gpu_util = (double)(s % 101),
        .grad_comm_rel_err = (double)(s % 4) * 0.001,
        .gemm_ms = 40.0 + (double)(s % 9),
        .quant_ms = 10.0 + 0.5 * (double)(s % 4),
        .attn_ms = 20.0 + 0.25 * d,
        .rowops_ms = 5.0 + 1.0 / d,
        .optim_ms = 2.0 + (double)(s % 2),
        .threads = 1 + s % 3,
    };
    if (qp_runlog_train(l, &r, err, n)) return -1;
    if (s % 5 == 0 && qp_runlog_eval(l, s, 3.5 + 2.0 / d, err, n)) return -1;
    if (s % 2 == 0)
        for (int k = 0; k < 3; k++) {
            const qp_qerr_row q = {s, k, GEMMS[k], OPERANDS[k], PASSES[k], 0.01 * (k + 1) + d * 1e-6, 40.0 - k,
                                   k * 0.001, 0.5 / (d + k), 448.0 - d, 1.0 / (k + 1)};
            if (qp_runlog_qerr(l, &q, err, n)) return -1;
        }
    if (s % 7 == 0) {
        const qp_event_row e = {s, (int32_t)(s % 3), "fc", "w", "amax_history", 1.0 / d, 2.0 / d, d * 1.5};
        if (qp_runlog_event(l, &e, err, n)) return -1;
    }
    if (s == 9 && qp_runlog_divergence(l, s, 3.0 + 1.0 / d, "loss spike \xc3\x97" "3 at step 9", "skip_step", err, n))
        return -1;
    return 0;
}

static void pause_ms(long ms)
{
    const struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
    char err[512];
    const int resume = argc == 7 && !strcmp(argv[1], "resume");
    if (!resume && !(argc == 6 && !strcmp(argv[1], "create"))) {
        fprintf(stderr, "usage: %s create PATH LAST FLUSH_EVERY SLEEP_MS | resume PATH FROM LAST FLUSH_EVERY SLEEP_MS\n",
                argv[0]);
        return 2;
    }
    const char *path = argv[2];
    const int64_t from = resume ? atoll(argv[3]) : 0, last = atoll(argv[3 + resume]);
    const int64_t every = atoll(argv[4 + resume]);
    const long sleep_ms = atol(argv[5 + resume]);
    int lockstep = sleep_ms < 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    qp_runlog *l;
    if (resume) {
        l = qp_runlog_resume(path, from, err, sizeof err);
    } else {
        const qp_kv attrs[] = {{"model", "gpt-tiny"}, {"recipe", "nvfp4/\xc2\xb5" "batch"}, {"seed", "1234"},
                               {"empty", ""}};
        l = qp_runlog_create(path, attrs, 4, err, sizeof err);
    }
    if (!l) goto fail;
    char msg[64];
    snprintf(msg, sizeof msg, resume ? "resumed from step %lld" : "started", (long long)from);
    if (qp_runlog_status(l, from, "running", msg, err, sizeof err)) goto fail;
    for (int64_t s = from + 1; s <= last; s++) {
        if (step_rows(l, s, err, sizeof err)) goto fail;
        if ((s - from) % every == 0 || s == last) {
            if (qp_runlog_flush(l, err, sizeof err)) goto fail;
            printf("flushed %lld\n", (long long)s);
            char line[16];
            if (lockstep && !fgets(line, sizeof line, stdin)) lockstep = 0; /* reader gone: run free */
        }
        if (sleep_ms > 0) pause_ms(sleep_ms);
    }
    if (qp_runlog_status(l, last, "done", "finished", err, sizeof err)) goto fail;
    if (qp_runlog_close(l, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("closed\n");
    return 0;
fail:
    fprintf(stderr, "%s\n", err);
    if (l) qp_runlog_close(l, msg, sizeof msg);
    return 1;
}
