/* test_runlog.c — train/runfile/qp_runlog: what lands in the file, read back with
 * the HDF5 C API: every /train and /eval value bit for bit, the tables'
 * columns, attributes; flush and a SIGKILL (only flushed rows survive, and
 * the killed file resumes); resume cutting every series at a step; steps
 * that go back, unknown states, over-long strings; error messages; the
 * writer's lock against a second writer.
 *
 *   test_runlog WORKDIR */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>

#include "qp_h5open.h"
#include "qp_runlog.h"
#include "qp_test.h"

static char WORK[512];

static const char *wpath(const char *name)
{
    static char p[4][700];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", WORK, name);
    unlink(p[k]);
    return p[k];
}

static qp_train_row trow(int64_t s)
{
    const double d = (double)s;
    return (qp_train_row){.step = s, .loss = 2.0 + 1.0 / d, .lr = 1e-3 * d, .grad_norm = 0.25 * d,
                          .step_ms = 10.0 + d, .data_wait_ms = 0.5, .tokens_per_s = 1e5 / d,
                          .batch_hash = (uint64_t)s * 0xD1B54A32D192ED03ull, .comm_ms = 0.125 * d,
                          .power_w = 300.0 + d, .energy_j = 1e3 * d, .gpu_util = 50.0, .grad_comm_rel_err = 1e-3 * d,
                          .gemm_ms = 3.0 + 1.0 / d, .quant_ms = 1.0 / (d + 1), .attn_ms = 0.75 * d,
                          .rowops_ms = (s % 3 ? NAN : 0.5), .optim_ms = 0.25 + d};
}

/* ---- reading the file back ---- */

static hid_t open_ro(const char *path, int swmr)
{
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    const hid_t f = H5Fopen(path, H5F_ACC_RDONLY | (swmr ? H5F_ACC_SWMR_READ : 0), fapl);
    H5Pclose(fapl);
    return f;
}

static int64_t nrows(hid_t f, const char *ds)
{
    const hid_t d = H5Dopen2(f, ds, H5P_DEFAULT);
    if (d < 0) return -1;
    const hid_t s = H5Dget_space(d);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(s, &n, NULL);
    H5Sclose(s);
    H5Dclose(d);
    return (int64_t)n;
}

/* Read a whole 1-D dataset (member == NULL) or one column of a table. */
static int read_col(hid_t f, const char *ds, const char *member, hid_t type, size_t size, void *out)
{
    const hid_t d = H5Dopen2(f, ds, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t mt = type;
    if (member) {
        mt = H5Tcreate(H5T_COMPOUND, size);
        H5Tinsert(mt, member, 0, type);
    }
    const herr_t rc = H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
    if (member) H5Tclose(mt);
    H5Dclose(d);
    return rc < 0 ? -1 : 0;
}

#define SW 600 /* string buffer per row */
static int read_strs(hid_t f, const char *ds, const char *member, char (*out)[SW])
{
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, SW);
    const int rc = read_col(f, ds, member, t, SW, out);
    H5Tclose(t);
    return rc;
}

static int64_t *read_i64(hid_t f, const char *ds, const char *member, int64_t n)
{
    int64_t *v = calloc((size_t)n + 1, 8);
    if (read_col(f, ds, member, H5T_NATIVE_INT64, 8, v)) CHECK(0, "read %s.%s", ds, member ? member : "");
    return v;
}

static double *read_f64(hid_t f, const char *ds, const char *member, int64_t n)
{
    double *v = calloc((size_t)n + 1, 8);
    if (read_col(f, ds, member, H5T_NATIVE_DOUBLE, 8, v)) CHECK(0, "read %s.%s", ds, member ? member : "");
    return v;
}

static int attr_str(hid_t f, const char *name, char *dst, size_t len)
{
    const hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    if (a < 0) return -1;
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8); /* HDF5 does not convert between character sets */
    char *s = NULL;
    const int rc = H5Aread(a, t, &s) < 0 ? -1 : 0;
    if (rc == 0) snprintf(dst, len, "%s", s);
    if (s) H5free_memory(s);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

static herr_t count_attr(hid_t o, const char *name, const H5A_info_t *info, void *n)
{
    (void)o, (void)name, (void)info;
    ++*(int *)n;
    return 0;
}

static int nattrs(hid_t f)
{
    int n = 0;
    hsize_t idx = 0;
    H5Aiterate2(f, H5_INDEX_NAME, H5_ITER_INC, &idx, count_attr, &n);
    return n;
}

/* Train rows are exactly trow(first..last): every column of the schema's
 * /train, bit for bit. */
static void check_train(hid_t f, int64_t first, int64_t last, const char *what)
{
    const int64_t n = last - first + 1;
    const qp_runset *rs = &qp_runsets[QP_RS_TRAIN];
    int ok = 1;
    for (int k = 0; k < rs->ncols; k++) {
        char ds[96];
        snprintf(ds, sizeof ds, "/train/%s", rs->cols[k].name);
        CHECK(nrows(f, ds) == n, "%s: %s has %lld rows, want %lld", what, ds, (long long)nrows(f, ds), (long long)n);
        const hid_t type = rs->cols[k].kind == QP_RC_F64   ? H5T_NATIVE_DOUBLE
                           : rs->cols[k].kind == QP_RC_U64 ? H5T_NATIVE_UINT64
                                                           : H5T_NATIVE_INT64;
        uint64_t *v = calloc((size_t)n + 1, 8);
        CHECK(read_col(f, ds, NULL, type, 8, v) == 0, "%s: read %s", what, ds);
        for (int64_t i = 0; i < n; i++) {
            const qp_train_row r = trow(first + i);
            ok &= memcmp(&v[i], (const char *)&r + rs->cols[k].offset, 8) == 0;
        }
        free(v);
    }
    CHECK(ok, "%s: train values of steps %lld..%lld bit for bit", what, (long long)first, (long long)last);
}

/* ---- tests ---- */

static void test_create_read(void)
{
    const char *p = wpath("full.h5");
    char err[512] = "";
    const qp_kv attrs[] = {{"model", "gpt-tiny"}, {"lr", "6e-4"}, {"note", "\xc2\xb5-batch"}, {"empty", ""}};
    qp_runlog *l = qp_runlog_create(p, attrs, 4, err, sizeof err);
    CHECK(l, "create: %s", err);
    if (!l) return;
    int ok = qp_runlog_status(l, 0, "running", "started", err, sizeof err) == 0;
    for (int64_t s = 1; s <= 2500; s++) { /* > 2 chunks of 1024 rows */
        const qp_train_row r = trow(s);
        ok &= qp_runlog_train(l, &r, err, sizeof err) == 0;
        if (s % 100 == 0) ok &= qp_runlog_eval(l, s, 1.0 / (double)s, err, sizeof err) == 0;
        if (s % 10 == 0) {
            const qp_qerr_row q = {s, (int32_t)(s % 12), "attn_qkv", "dy", "wgrad", 0.1, 20.0, 1e-4, 0.01, 448.0,
                                   (double)s};
            ok &= qp_runlog_qerr(l, &q, err, sizeof err) == 0;
        }
        if (s % 500 == 0) {
            const qp_event_row e = {s, 3, "fc", "w", "overflow", 2.0, 1.0, (double)s};
            ok &= qp_runlog_event(l, &e, err, sizeof err) == 0;
        }
        if (s == 1234) ok &= qp_runlog_divergence(l, s, NAN, "loss is nan", "skip_step", err, sizeof err) == 0;
    }
    ok &= qp_runlog_status(l, 2500, "done", "finished 2500 steps", err, sizeof err) == 0;
    CHECK(ok, "appends: %s", err);
    CHECK(qp_runlog_close(l, err, sizeof err) == 0, "close: %s", err);

    const hid_t f = open_ro(p, 0); /* cleanly closed: opens without SWMR */
    CHECK(f >= 0, "plain open of a closed run file");
    if (f < 0) return;
    check_train(f, 1, 2500, "full");
    CHECK(nrows(f, "/eval/step") == 25 && nrows(f, "/eval/val_loss") == 25, "25 eval rows");
    int64_t *es = read_i64(f, "/eval/step", NULL, 25);
    double *ev = read_f64(f, "/eval/val_loss", NULL, 25);
    CHECK(es[24] == 2500 && es[0] == 100 && ev[3] == 1.0 / 400.0, "eval values");
    free(es), free(ev);

    CHECK(nrows(f, "/quant/error") == 250, "250 qerr rows");
    int64_t *qs = read_i64(f, "/quant/error", "step", 250), *ql = read_i64(f, "/quant/error", "layer", 250);
    double *qscale = read_f64(f, "/quant/error", "scale", 250), *qamax = read_f64(f, "/quant/error", "amax", 250);
    static char str[2600][SW];
    read_strs(f, "/quant/error", "gemm", str);
    CHECK(qs[249] == 2500 && ql[249] == 2500 % 12 && qscale[7] == 80.0 && qamax[0] == 448.0 &&
              !strcmp(str[5], "attn_qkv"),
          "qerr columns: step %lld layer %lld gemm '%s'", (long long)qs[249], (long long)ql[249], str[5]);
    read_strs(f, "/quant/error", "operand", str);
    CHECK(!strcmp(str[0], "dy"), "qerr operand '%s'", str[0]);
    read_strs(f, "/quant/error", "pass", str);
    CHECK(!strcmp(str[249], "wgrad"), "qerr pass '%s'", str[249]);
    free(qs), free(ql), free(qscale), free(qamax);

    CHECK(nrows(f, "/events/recalib") == 5, "5 recalib events");
    double *old = read_f64(f, "/events/recalib", "old_scale", 5), *ea = read_f64(f, "/events/recalib", "amax", 5);
    read_strs(f, "/events/recalib", "kind", str);
    CHECK(old[0] == 2.0 && ea[4] == 2500.0 && !strcmp(str[2], "overflow"), "recalib columns");
    free(old), free(ea);

    CHECK(nrows(f, "/events/divergence") == 1, "1 divergence row");
    double *dl = read_f64(f, "/events/divergence", "loss", 1);
    CHECK(isnan(dl[0]), "divergence loss NaN kept");
    read_strs(f, "/events/divergence", "reason", str);
    CHECK(!strcmp(str[0], "loss is nan"), "divergence reason '%s'", str[0]);
    read_strs(f, "/events/divergence", "action", str);
    CHECK(!strcmp(str[0], "skip_step"), "divergence action '%s'", str[0]);
    free(dl);

    CHECK(nrows(f, "/status") == 2, "2 status rows");
    read_strs(f, "/status", "state", str);
    CHECK(!strcmp(str[0], "running") && !strcmp(str[1], "done"), "states '%s' '%s'", str[0], str[1]);
    read_strs(f, "/status", "message", str);
    CHECK(!strcmp(str[1], "finished 2500 steps"), "status message '%s'", str[1]);

    char v[64];
    CHECK(nattrs(f) == 5, "4 root attributes and runfile_schema, got %d", nattrs(f));
    for (int i = 0; i < 4; i++)
        CHECK(attr_str(f, attrs[i].key, v, sizeof v) == 0 && !strcmp(v, attrs[i].value), "attribute %s = '%s'",
              attrs[i].key, v);
    H5Fclose(f);
}

/* A child writes and flushes 10 steps, buffers 5 more and is SIGKILLed:
 * exactly the 10 flushed steps are in the file, which still opens (SWMR
 * read) and can be resumed. */
static void test_kill_resume(void)
{
    const char *p = wpath("killed.h5");
    int fds[2];
    if (pipe(fds)) return;
    const pid_t pid = fork();
    if (pid == 0) {
        char err[512];
        qp_runlog *l = qp_runlog_create(p, NULL, 0, err, sizeof err);
        int ok = l && qp_runlog_status(l, 0, "running", "", err, sizeof err) == 0;
        for (int64_t s = 1; ok && s <= 15; s++) {
            const qp_train_row r = trow(s);
            ok = qp_runlog_train(l, &r, err, sizeof err) == 0 && (s != 10 || qp_runlog_flush(l, err, sizeof err) == 0);
        }
        if (!ok) fprintf(stderr, "child: %s\n", err);
        (void)!write(fds[1], ok ? "y" : "n", 1);
        for (;;) pause();
    }
    close(fds[1]);
    char c = 0;
    CHECK(read(fds[0], &c, 1) == 1 && c == 'y', "child wrote and flushed");
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    close(fds[0]);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child was killed");

    hid_t f = open_ro(p, 1);
    CHECK(f >= 0, "killed run file opens for SWMR reading");
    if (f >= 0) {
        check_train(f, 1, 10, "after kill");
        CHECK(nrows(f, "/status") == 1, "status row survives the kill");
        H5Fclose(f);
    }
    char err[512] = "";
    qp_runlog *l = qp_runlog_resume(p, 7, err, sizeof err);
    CHECK(l, "resume after SIGKILL: %s", err);
    if (!l) return;
    int ok = 1;
    for (int64_t s = 8; s <= 12; s++) {
        const qp_train_row r = trow(s);
        ok &= qp_runlog_train(l, &r, err, sizeof err) == 0;
    }
    ok &= qp_runlog_status(l, 12, "stopped", "by test", err, sizeof err) == 0;
    CHECK(ok, "append after resume: %s", err);
    CHECK(qp_runlog_close(l, err, sizeof err) == 0, "close: %s", err);
    f = open_ro(p, 0);
    CHECK(f >= 0, "resumed and closed file opens without SWMR");
    if (f >= 0) {
        check_train(f, 1, 12, "after kill and resume");
        CHECK(nrows(f, "/status") == 2, "status rows after resume");
        H5Fclose(f);
    }
}

static qp_runlog *make_run(const char *p, int64_t last)
{
    char err[512];
    const qp_kv attrs[] = {{"a", "1"}, {"b", "2"}};
    qp_runlog *l = qp_runlog_create(p, attrs, 2, err, sizeof err);
    if (!l) return NULL;
    int ok = qp_runlog_status(l, 0, "running", "", err, sizeof err) == 0;
    for (int64_t s = 1; s <= last; s++) {
        const qp_train_row r = trow(s);
        ok &= qp_runlog_train(l, &r, err, sizeof err) == 0;
        if (s % 10 == 0) ok &= qp_runlog_eval(l, s, (double)s, err, sizeof err) == 0;
        if (s % 5 == 0)
            for (int k = 0; k < 2; k++) {
                const qp_qerr_row q = {s, k, "fc", "x", "fprop", 0, 0, 0, 0, 0, 0};
                ok &= qp_runlog_qerr(l, &q, err, sizeof err) == 0;
            }
        if (s % 20 == 0) {
            const qp_event_row e = {s, 0, "fc", "w", "periodic", 1, 1, 1};
            ok &= qp_runlog_event(l, &e, err, sizeof err) == 0;
        }
        if (s == 30) ok &= qp_runlog_divergence(l, s, 9.0, "spike", "rollback", err, sizeof err) == 0;
    }
    ok &= qp_runlog_status(l, last, "done", "", err, sizeof err) == 0;
    CHECK(ok, "make_run: %s", err);
    return l;
}

static void test_resume_cut(void)
{
    const char *p = wpath("cut.h5");
    char err[512] = "";
    qp_runlog *l = make_run(p, 50);
    CHECK(l && qp_runlog_close(l, err, sizeof err) == 0, "make_run/close: %s", err);

    l = qp_runlog_resume(p, 25, err, sizeof err);
    CHECK(l, "resume at 25: %s", err);
    if (!l) return;
    qp_train_row r = trow(25);
    CHECK(qp_runlog_train(l, &r, err, sizeof err) != 0 && strstr(err, "never go back"),
          "step 25 again after resume at 25 is refused: %s", err);
    CHECK(qp_runlog_close(l, err, sizeof err) == 0, "close: %s", err);
    hid_t f = open_ro(p, 0);
    if (f >= 0) {
        check_train(f, 1, 25, "cut at 25");
        int64_t *es = read_i64(f, "/eval/step", NULL, 2);
        CHECK(nrows(f, "/eval/step") == 2 && nrows(f, "/eval/val_loss") == 2 && es[0] == 10 && es[1] == 20,
              "eval cut to steps 10, 20");
        CHECK(nrows(f, "/quant/error") == 10, "qerr cut to 10 rows, has %lld", (long long)nrows(f, "/quant/error"));
        CHECK(nrows(f, "/events/recalib") == 1, "recalib cut to 1 row");
        CHECK(nrows(f, "/events/divergence") == 0, "divergence at 30 dropped");
        CHECK(nrows(f, "/status") == 1, "status 'done' at 50 dropped");
        char v[8];
        CHECK(nattrs(f) == 3 && attr_str(f, "b", v, sizeof v) == 0 && !strcmp(v, "2"), "attributes kept");
        free(es);
        H5Fclose(f);
    }

    /* resume at a step past the end keeps everything; then go on */
    l = qp_runlog_resume(p, 1000, err, sizeof err);
    CHECK(l, "resume at 1000: %s", err);
    if (!l) return;
    int ok = 1;
    for (int64_t s = 26; s <= 30; s++) {
        r = trow(s);
        ok &= qp_runlog_train(l, &r, err, sizeof err) == 0;
    }
    CHECK(ok, "append 26..30: %s", err);
    CHECK(qp_runlog_close(l, err, sizeof err) == 0, "close: %s", err);
    if ((f = open_ro(p, 0)) >= 0) {
        check_train(f, 1, 30, "resumed past the end");
        H5Fclose(f);
    }

    /* /train datasets of different lengths (as a kill between two of them
     * could leave) are cut to a common length */
    if ((f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT)) >= 0) {
        const hsize_t n = 20;
        const hid_t d = H5Dopen2(f, "/train/lr", H5P_DEFAULT);
        CHECK(H5Dset_extent(d, &n) >= 0, "shorten /train/lr");
        H5Dclose(d);
        H5Fclose(f);
    }
    l = qp_runlog_resume(p, 28, err, sizeof err);
    CHECK(l && qp_runlog_close(l, err, sizeof err) == 0, "resume with a short /train/lr: %s", err);
    if ((f = open_ro(p, 0)) >= 0) {
        check_train(f, 1, 20, "common length");
        H5Fclose(f);
    }

    l = qp_runlog_resume(p, 0, err, sizeof err);
    CHECK(l && qp_runlog_close(l, err, sizeof err) == 0, "resume at 0: %s", err);
    if ((f = open_ro(p, 0)) >= 0) {
        CHECK(nrows(f, "/train/step") == 0 && nrows(f, "/quant/error") == 0 && nrows(f, "/status") == 1,
              "resume at 0 keeps only step-0 rows");
        H5Fclose(f);
    }
}

static void test_validation(void)
{
    const char *p = wpath("valid.h5");
    char err[512] = "";
    qp_runlog *l = qp_runlog_create(p, NULL, 0, err, sizeof err);
    CHECK(l, "create: %s", err);
    if (!l) return;
    qp_train_row r = trow(5);
    CHECK(qp_runlog_train(l, &r, err, sizeof err) == 0, "step 5: %s", err);
    CHECK(qp_runlog_train(l, &r, err, sizeof err) != 0 && strstr(err, "step 5 after step 5"), "repeat: %s", err);
    CHECK(!strchr(err, '\n') && !strncmp(err, p, strlen(p)), "message is one line naming the file: %s", err);
    r = trow(4);
    CHECK(qp_runlog_train(l, &r, err, sizeof err) != 0, "step 4 after 5 is refused");
    r = trow(6);
    CHECK(qp_runlog_train(l, &r, err, sizeof err) == 0, "step 6: %s", err);
    CHECK(qp_runlog_eval(l, 6, 1.0, err, sizeof err) == 0 && qp_runlog_eval(l, 6, 2.0, err, sizeof err) == 0,
          "two evals at one step: %s", err);
    CHECK(qp_runlog_eval(l, 5, 1.0, err, sizeof err) != 0, "eval going back is refused");

    const char *long_gemm = "a_gemm_name_that_is_longer_than_32_bytes";
    qp_qerr_row q = {6, 0, long_gemm, "x", "fprop", 0, 0, 0, 0, 0, 0};
    CHECK(qp_runlog_qerr(l, &q, err, sizeof err) != 0 && strstr(err, "gemm") && strstr(err, "32"),
          "over-long gemm is refused: %s", err);
    q.gemm = NULL; /* stored as "" */
    CHECK(qp_runlog_qerr(l, &q, err, sizeof err) == 0, "NULL gemm: %s", err);

    CHECK(qp_runlog_status(l, 6, "paused", "", err, sizeof err) != 0 && strstr(err, "unknown run state 'paused'"),
          "unknown state: %s", err);
    CHECK(qp_runlog_status(l, 6, NULL, "", err, sizeof err) != 0, "NULL state is refused");
    char msg[1 + 2 * 600 + 1] = "a"; /* 'a' then 600 two-byte characters: cut at 511 bytes */
    for (int i = 0; i < 600; i++) memcpy(msg + 1 + 2 * i, "\xc3\xa9", 2);
    msg[sizeof msg - 1] = 0;
    CHECK(qp_runlog_status(l, 6, "failed", msg, err, sizeof err) == 0, "long status message: %s", err);
    char reason[300];
    memset(reason, 'r', sizeof reason - 1);
    reason[sizeof reason - 1] = 0;
    CHECK(qp_runlog_divergence(l, 6, 1.0, reason, "a_far_too_long_action_name_here_xx", err, sizeof err) != 0,
          "over-long action is refused");
    CHECK(qp_runlog_divergence(l, 6, 1.0, reason, "stop", err, sizeof err) == 0, "long reason: %s", err);
    CHECK(qp_runlog_close(l, err, sizeof err) == 0, "close: %s", err);

    const hid_t f = open_ro(p, 0);
    if (f < 0) return;
    int64_t *st = read_i64(f, "/train/step", NULL, 2);
    CHECK(nrows(f, "/train/step") == 2 && st[0] == 5 && st[1] == 6, "only the accepted train rows");
    CHECK(nrows(f, "/eval/step") == 2 && nrows(f, "/quant/error") == 1, "only the accepted eval and qerr rows");
    static char s[4][SW];
    read_strs(f, "/quant/error", "gemm", s);
    CHECK(s[0][0] == 0, "NULL gemm stored as ''");
    CHECK(nrows(f, "/status") == 1, "one status row");
    read_strs(f, "/status", "message", s);
    CHECK(strlen(s[0]) == 511 && !memcmp(s[0], msg, 511), "message cut to 511 bytes at a character boundary (%zu)",
          strlen(s[0]));
    read_strs(f, "/events/divergence", "reason", s);
    CHECK(nrows(f, "/events/divergence") == 1 && strlen(s[0]) == 256, "reason cut to 256 bytes (%zu)", strlen(s[0]));
    free(st);
    H5Fclose(f);
}

/* Run fn(arg) in a child that cannot write to the directory `ro` (an
 * unprivileged uid when we are root, who would ignore the mode). */
static int run_unprivileged(int (*fn)(const char *), const char *arg)
{
    const pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) || setuid(65534))) _exit(3);
        _exit(fn(arg));
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 4;
}

static int create_denied(const char *p)
{
    char err[512] = "";
    qp_runlog *l = qp_runlog_create(p, NULL, 0, err, sizeof err);
    if (l) return 1;
    char want[700];
    snprintf(want, sizeof want, "%s: cannot create: Permission denied", p);
    if (strcmp(err, want)) {
        fprintf(stderr, "got '%s'\n", err);
        return 2;
    }
    return 0;
}

static void test_errors(void)
{
    char err[512] = "", want[800];
    const char *p = wpath("nodir/x.h5");
    CHECK(!qp_runlog_create(p, NULL, 0, err, sizeof err), "create in a missing directory fails");
    snprintf(want, sizeof want, "%s: cannot create: No such file or directory", p);
    CHECK(!strcmp(err, want), "message: %s", err);

    p = wpath("dup.h5");
    const qp_kv dup[] = {{"k", "1"}, {"k", "2"}};
    CHECK(!qp_runlog_create(p, dup, 2, err, sizeof err) && strstr(err, "'k' given twice"), "duplicate key: %s", err);
    CHECK(access(p, F_OK) != 0, "nothing created for a bad attribute list");

    p = wpath("missing.h5");
    CHECK(!qp_runlog_resume(p, 0, err, sizeof err), "resume of a missing file fails");
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", p);
    CHECK(!strcmp(err, want), "message: %s", err);

    p = wpath("text.h5");
    FILE *t = fopen(p, "w");
    fputs("not hdf5\n", t);
    fclose(t);
    CHECK(!qp_runlog_resume(p, 0, err, sizeof err) && strstr(err, "cannot open") && !strchr(err, '\n'),
          "resume of a text file: %s", err);
    char back[32] = "";
    t = fopen(p, "r");
    CHECK(t && fgets(back, sizeof back, t) && !strcmp(back, "not hdf5\n"), "the text file is untouched");
    if (t) fclose(t);

    p = wpath("other.h5");
    hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    CHECK(!qp_runlog_resume(p, 0, err, sizeof err) && strstr(err, "not a run file: no /train/step"),
          "resume of another HDF5 file: %s", err);

    p = wpath("adir");
    mkdir(p, 0755);
    CHECK(!qp_runlog_create(p, NULL, 0, err, sizeof err) && strstr(err, "Is a directory"), "create over a dir: %s",
          err);
    rmdir(p);

    char ro[600];
    snprintf(ro, sizeof ro, "%s/ro", WORK);
    mkdir(ro, 0755);
    chmod(ro, 0555);
    p = wpath("ro/run.h5");
    CHECK(run_unprivileged(create_denied, p) == 0, "create in a read-only directory: Permission denied");
    chmod(ro, 0755);
}

/* A second writer, while the first is alive, can neither resume nor
 * recreate the file. */
static void test_lock(void)
{
    const char *p = wpath("locked.h5");
    int up[2], down[2];
    if (pipe(up) || pipe(down)) return;
    const pid_t pid = fork();
    if (pid == 0) {
        char err[512], c;
        qp_runlog *l = qp_runlog_create(p, NULL, 0, err, sizeof err);
        int ok = l != NULL;
        for (int64_t s = 1; ok && s <= 6; s++) {
            if (s == 4) ok = write(up[1], "y", 1) == 1 && read(down[0], &c, 1) == 1;
            const qp_train_row r = trow(s);
            ok = ok && qp_runlog_train(l, &r, err, sizeof err) == 0 && qp_runlog_flush(l, err, sizeof err) == 0;
        }
        ok = ok && qp_runlog_close(l, err, sizeof err) == 0;
        if (!ok) fprintf(stderr, "child: %s\n", err);
        _exit(ok ? 0 : 1);
    }
    char c = 0, err[512] = "";
    CHECK(read(up[0], &c, 1) == 1 && c == 'y', "child is writing");
    CHECK(!qp_runlog_resume(p, 0, err, sizeof err) && strstr(err, "another process is writing"),
          "resume while another process writes: %s", err);
    CHECK(!qp_runlog_create(p, NULL, 0, err, sizeof err) && strstr(err, "another process is writing"),
          "create while another process writes: %s", err);
    (void)!write(down[1], "g", 1);
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child finished its run");
    const hid_t f = open_ro(p, 0);
    CHECK(f >= 0, "the child's file is intact");
    if (f >= 0) {
        check_train(f, 1, 6, "locked file");
        H5Fclose(f);
    }
    close(up[0]), close(up[1]), close(down[0]), close(down[1]);
}

/* A reader (qsweep --summarize, qplot, --status) holding a run file open
 * while its qtrain resumes or recreates it must not fail that qtrain: HDF5's
 * default open would hold a shared flock() and the writer would get EAGAIN. */
static void test_reader_does_not_block_writer(void)
{
    const char *p = wpath("read_while_written.h5");
    char err[512] = "";
    qp_runlog *l = qp_runlog_create(p, NULL, 0, err, sizeof err);
    for (int64_t s = 1; l && s <= 3; s++) {
        const qp_train_row r = trow(s);
        qp_runlog_train(l, &r, err, sizeof err);
    }
    CHECK(l && qp_runlog_close(l, err, sizeof err) == 0, "the first run: %s", err);
    for (int swmr = 0; swmr <= 1; swmr++) {
        int up[2], down[2];
        if (pipe(up) || pipe(down)) return;
        const pid_t pid = fork();
        if (pid == 0) {
            char c;
            close(up[0]), close(down[1]);
            const hid_t f = (hid_t)qp_h5_open_read(p, swmr);
            if (f < 0) fprintf(stderr, "reader: cannot open %s\n", p);
            const int ok = f >= 0 && write(up[1], "y", 1) == 1 && read(down[0], &c, 1) == 1;
            if (f >= 0) H5Fclose(f);
            _exit(ok ? 0 : 1);
        }
        close(up[1]), close(down[0]); /* a reader that dies is an end of file, not a hang */
        char c = 0;
        CHECK(read(up[0], &c, 1) == 1 && c == 'y', "the reader (swmr %d) has the file open", swmr);
        l = qp_runlog_resume(p, 3, err, sizeof err);
        CHECK(l != NULL, "resume while a reader (swmr %d) has the file open: %s", swmr, err);
        if (l) {
            const qp_train_row r = trow(4);
            CHECK(qp_runlog_train(l, &r, err, sizeof err) == 0 && qp_runlog_close(l, err, sizeof err) == 0,
                  "the resumed run writes: %s", err);
        }
        l = qp_runlog_create(p, NULL, 0, err, sizeof err);
        CHECK(l != NULL, "create while a reader (swmr %d) has the file open: %s", swmr, err);
        for (int64_t s = 1; l && s <= 3; s++) {
            const qp_train_row r = trow(s);
            qp_runlog_train(l, &r, err, sizeof err);
        }
        if (l) qp_runlog_close(l, err, sizeof err);
        (void)!write(down[1], "g", 1);
        int st;
        waitpid(pid, &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the reader (swmr %d) finished", swmr);
        close(up[0]), close(down[1]);
    }
}

int main(int argc, char **argv)
{
    snprintf(WORK, sizeof WORK, "%s", argc > 1 ? argv[1] : "runlog_unit");
    if (mkdir(WORK, 0755) && errno != EEXIST) {
        perror(WORK);
        return 1;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    test_create_read();
    test_kill_resume();
    test_resume_cut();
    test_validation();
    test_errors();
    test_lock();
    test_reader_does_not_block_writer();
    return qp_test_finish("test_runlog");
}
