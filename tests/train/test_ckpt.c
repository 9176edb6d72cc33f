/* test_ckpt.c — train/runfile/qp_ckpt: round trip bit for bit (NaN payloads, -0,
 * subnormals, 1-D..4-D, nested names, empty tensors), the stored CRC-32
 * against an independent bitwise CRC checked on "123456789", rotation to
 * PATH.prev, and every way a checkpoint can be bad: cut short at many
 * offsets, a flipped byte in a tensor, no marker, a lost tensor or checksum;
 * open_latest falling back to PATH.prev; failed writes (read-only directory,
 * PATH.tmp or PATH.prev in the way, bad arguments) leaving the previous
 * checkpoint as it was and no PATH.tmp behind.
 *
 *   test_ckpt WORKDIR */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>

#include "qp_ckpt.h"
#include "qp_test.h"

static char WORK[512];

/* The textbook bit-at-a-time CRC-32, independent of the library's table. */
static uint32_t crc_ref(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= b[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return ~c;
}

static const char *wpath(const char *name)
{
    static char p[4][700];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", WORK, name);
    char q[720];
    unlink(p[k]); /* and what an interrupted earlier run may have left */
    snprintf(q, sizeof q, "%s.prev/x", p[k]);
    unlink(q);
    snprintf(q, sizeof q, "%s.prev", p[k]);
    unlink(q), rmdir(q);
    snprintf(q, sizeof q, "%s.tmp", p[k]);
    unlink(q), rmdir(q);
    return p[k];
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    char *b = malloc(*n + 1);
    if (fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

static void spit(const char *path, const char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static const char *suffixed(const char *p, const char *suffix)
{
    static char b[2][720];
    static int k;
    k ^= 1;
    snprintf(b[k], sizeof b[k], "%s%s", p, suffix);
    return b[k];
}

/* ---- a model's worth of tensors ---- */

enum { NT = 5 };
static float wte[7 * 5], w4[2 * 3 * 2 * 4], bias[9], scalar[1], special[10];

static void fill(unsigned long long seed)
{
    for (size_t i = 0; i < sizeof wte / 4; i++) wte[i] = qp_test_normal(&seed);
    for (size_t i = 0; i < sizeof w4 / 4; i++) w4[i] = qp_test_normal(&seed) * 1e-3f;
    for (size_t i = 0; i < sizeof bias / 4; i++) bias[i] = (float)i - 4.0f;
    scalar[0] = (float)seed;
    const uint32_t bits[10] = {0x7FC00001u, 0xFFA00000u, 0x7F800000u, 0xFF800000u, 0x80000000u,
                               0x00000001u, 0x007FFFFFu, 0x7F7FFFFFu, 0x3F800000u, 0x00000000u};
    memcpy(special, bits, sizeof bits); /* NaN payloads, infinities, -0, subnormals, max */
}

static void tensors(qp_ckpt_tensor t[NT])
{
    t[0] = (qp_ckpt_tensor){"params/wte", wte, 2, {7, 5}};
    t[1] = (qp_ckpt_tensor){"params/h0/attn/w4", w4, 4, {2, 3, 2, 4}};
    t[2] = (qp_ckpt_tensor){"opt/m/bias", bias, 1, {9}};
    t[3] = (qp_ckpt_tensor){"scalar", scalar, 3, {1, 1, 1}};
    t[4] = (qp_ckpt_tensor){"params/special", special, 1, {10}};
}

static int write_ckpt(const char *p, int64_t step, char *err, size_t errlen)
{
    fill((unsigned long long)step + 1);
    qp_ckpt_tensor t[NT + 1];
    tensors(t);
    t[NT] = (qp_ckpt_tensor){"empty/none", NULL, 2, {0, 3}};
    const qp_ckpt_attr a[] = {{"step", 0, step, NULL},
                              {"recipe", 1, 0, "nvfp4 \xc2\xb5"},
                              {"big", 0, INT64_MIN + 1, NULL},
                              {"blank", 1, 0, ""}};
    return qp_ckpt_write(p, t, NT + 1, a, 4, err, errlen);
}

/* Everything in c is what write_ckpt(step) wrote, bit for bit. */
static void check_contents(qp_ckpt *c, int64_t step, const char *what)
{
    fill((unsigned long long)step + 1);
    qp_ckpt_tensor t[NT];
    tensors(t);
    char err[512] = "";
    for (int i = 0; i < NT; i++) {
        int64_t n = 1;
        for (int d = 0; d < t[i].ndim; d++) n *= t[i].shape[d];
        float *got = malloc((size_t)n * 4);
        CHECK(qp_ckpt_read(c, t[i].name, got, n, err, sizeof err) == 0 && !memcmp(got, t[i].data, (size_t)n * 4),
              "%s: tensor %s bit for bit: %s", what, t[i].name, err);
        free(got);
    }
    float none;
    CHECK(qp_ckpt_read(c, "empty/none", &none, 0, err, sizeof err) == 0, "%s: empty tensor: %s", what, err);
    int64_t v = 0;
    char s[64] = "";
    CHECK(qp_ckpt_attr_i64(c, "step", &v, err, sizeof err) == 0 && v == step, "%s: step %lld", what, (long long)v);
    CHECK(qp_ckpt_attr_i64(c, "big", &v, err, sizeof err) == 0 && v == INT64_MIN + 1, "%s: big", what);
    CHECK(qp_ckpt_attr_i64(c, "complete", &v, err, sizeof err) == 0 && v == NT + 1, "%s: marker = tensor count",
          what);
    CHECK(qp_ckpt_attr_str(c, "recipe", s, sizeof s, err, sizeof err) == 0 && !strcmp(s, "nvfp4 \xc2\xb5"),
          "%s: recipe '%s'", what, s);
    CHECK(qp_ckpt_attr_str(c, "blank", s, sizeof s, err, sizeof err) == 0 && s[0] == 0, "%s: blank", what);
}

static void test_crc(void)
{
    CHECK(crc_ref("123456789", 9) == 0xCBF43926u, "reference CRC-32 of \"123456789\"");
    /* The library's CRC over a tensor whose bytes are "12345678". */
    const char *p = wpath("crc.h5");
    float two[2];
    memcpy(two, "12345678", 8);
    const qp_ckpt_tensor t = {"t", two, 1, {2}};
    char err[512] = "";
    CHECK(qp_ckpt_write(p, &t, 1, NULL, 0, err, sizeof err) == 0, "write: %s", err);
    fill(77);
    qp_ckpt_tensor ts[NT];
    tensors(ts);
    const char *q = wpath("crc2.h5");
    CHECK(qp_ckpt_write(q, ts, NT, NULL, 0, err, sizeof err) == 0, "write: %s", err);

    const hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT), g = H5Fopen(q, H5F_ACC_RDONLY, H5P_DEFAULT);
    uint32_t crc = 0;
    hid_t a = H5Aopen_by_name(f, "t", "crc32", H5P_DEFAULT, H5P_DEFAULT);
    CHECK(H5Aread(a, H5T_NATIVE_UINT32, &crc) >= 0 && crc == 0x9AE0DAAFu && crc == crc_ref("12345678", 8),
          "stored CRC-32 of \"12345678\" is 0x9AE0DAAF, got 0x%08x", crc);
    H5Aclose(a);
    for (int i = 0; i < NT; i++) {
        int64_t n = 1;
        for (int d = 0; d < ts[i].ndim; d++) n *= ts[i].shape[d];
        a = H5Aopen_by_name(g, ts[i].name, "crc32", H5P_DEFAULT, H5P_DEFAULT);
        CHECK(H5Aread(a, H5T_NATIVE_UINT32, &crc) >= 0 && crc == crc_ref(ts[i].data, (size_t)n * 4),
              "stored CRC of %s matches the reference", ts[i].name);
        H5Aclose(a);
    }
    H5Fclose(f);
    H5Fclose(g);
}

static void test_round_trip_and_rotation(void)
{
    const char *p = wpath("rt.h5");
    char err[512] = "";
    CHECK(write_ckpt(p, 100, err, sizeof err) == 0, "write 100: %s", err);
    CHECK(!exists(suffixed(p, ".tmp")) && !exists(suffixed(p, ".prev")), "no .tmp, no .prev after the first write");
    qp_ckpt *c = qp_ckpt_open(p, err, sizeof err);
    CHECK(c, "open: %s", err);
    if (c) {
        check_contents(c, 100, "step 100");
        float x[3];
        CHECK(qp_ckpt_read(c, "opt/m/bias", x, 3, err, sizeof err) != 0 && strstr(err, "has 9 elements, not 3"),
              "wrong count: %s", err);
        CHECK(qp_ckpt_read(c, "params/nope", x, 3, err, sizeof err) != 0 && strstr(err, "no tensor 'params/nope'"),
              "missing tensor: %s", err);
        int64_t v;
        char s[4];
        CHECK(qp_ckpt_attr_i64(c, "nope", &v, err, sizeof err) != 0 && strstr(err, "no attribute 'nope'"),
              "missing attribute: %s", err);
        CHECK(qp_ckpt_attr_i64(c, "recipe", &v, err, sizeof err) != 0 && strstr(err, "not an integer"),
              "string read as integer: %s", err);
        CHECK(qp_ckpt_attr_str(c, "step", s, sizeof s, err, sizeof err) != 0, "integer read as string");
        CHECK(qp_ckpt_attr_str(c, "recipe", s, sizeof s, err, sizeof err) == 0 && !strcmp(s, "nvf"),
              "string cut to the buffer: '%s'", s);
        qp_ckpt_close(c);
    }
    CHECK(write_ckpt(p, 200, err, sizeof err) == 0, "write 200: %s", err);
    CHECK(write_ckpt(p, 300, err, sizeof err) == 0, "write 300: %s", err);
    const char *used = NULL;
    c = qp_ckpt_open_latest(p, &used, err, sizeof err);
    CHECK(c && used && !strcmp(used, p), "latest is PATH: %s", err);
    if (c) check_contents(c, 300, "step 300"), qp_ckpt_close(c);
    c = qp_ckpt_open(suffixed(p, ".prev"), err, sizeof err);
    CHECK(c, "PATH.prev opens: %s", err);
    if (c) check_contents(c, 200, "PATH.prev = step 200"), qp_ckpt_close(c);
    CHECK(!exists(suffixed(p, ".tmp")), "no PATH.tmp left");
}

/* Two checkpoints (200 in PATH.prev, 300 in PATH); PATH is then damaged. */
static const char *two_ckpts(const char *name)
{
    const char *p = wpath(name);
    char err[512] = "";
    CHECK(write_ckpt(p, 200, err, sizeof err) == 0 && write_ckpt(p, 300, err, sizeof err) == 0, "writes: %s", err);
    return p;
}

static void expect_fallback(const char *p, const char *why_part, const char *what)
{
    char err[512] = "";
    qp_ckpt *c = qp_ckpt_open(p, err, sizeof err);
    CHECK(!c && strstr(err, p) && strstr(err, why_part) && !strchr(err, '\n'), "%s: open fails naming '%s': %s",
          what, why_part, err);
    if (c) qp_ckpt_close(c);
    const char *used = NULL;
    c = qp_ckpt_open_latest(p, &used, err, sizeof err);
    CHECK(c && used && !strcmp(used, suffixed(p, ".prev")), "%s: open_latest falls back to PATH.prev: %s", what, err);
    if (c) check_contents(c, 200, what), qp_ckpt_close(c);
}

static void test_torn(void)
{
    const char *p = two_ckpts("torn.h5");
    size_t n = 0;
    char *whole = slurp(p, &n);
    CHECK(whole && n > 1000, "checkpoint read back (%zu bytes)", n);
    if (!whole) return;
    const size_t cuts[] = {0, 1, 7, 8, 96, 512, n / 3, n / 2, n - 200, n - 8, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        spit(p, whole, cuts[i]);
        char what[64];
        snprintf(what, sizeof what, "cut at %zu of %zu", cuts[i], n);
        expect_fallback(p, "", what);
    }
    spit(p, whole, n);
    char err[512];
    qp_ckpt *c = qp_ckpt_open(p, err, sizeof err);
    CHECK(c, "the whole file opens again: %s", err);
    qp_ckpt_close(c);
    free(whole);

    /* PATH gone (killed between the two renames): PATH.prev is the latest */
    unlink(p);
    expect_fallback(p, "No such file or directory", "PATH missing");
    /* both bad: one message naming both */
    spit(suffixed(p, ".prev"), "junk", 4);
    c = qp_ckpt_open_latest(p, NULL, err, sizeof err);
    CHECK(!c && strstr(err, p) && strstr(err, suffixed(p, ".prev")), "both bad: %s", err);
}

static void test_corrupt(void)
{
    const char *p = two_ckpts("corrupt.h5");
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t d = H5Dopen2(f, "params/h0/attn/w4", H5P_DEFAULT);
    const haddr_t off = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    CHECK(off != HADDR_UNDEF, "tensor data offset");
    size_t n = 0;
    char *b = slurp(p, &n);
    if (!b || off == HADDR_UNDEF) return;
    b[off + 13] ^= 0x10; /* one bit of one float */
    spit(p, b, n);
    free(b);
    expect_fallback(p, "tensor 'params/h0/attn/w4' is corrupt", "flipped bit");

    p = two_ckpts("nomarker.h5");
    f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(H5Adelete(f, "complete") >= 0, "delete the marker");
    H5Fclose(f);
    expect_fallback(p, "no 'complete' marker", "missing marker");

    p = two_ckpts("lost.h5");
    f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(H5Ldelete(f, "opt/m/bias", H5P_DEFAULT) >= 0, "delete a tensor");
    H5Fclose(f);
    expect_fallback(p, "holds 5 tensors, its 'complete' marker says 6", "lost tensor");

    p = two_ckpts("nocrc.h5");
    f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(H5Adelete_by_name(f, "scalar", "crc32", H5P_DEFAULT) >= 0, "delete a checksum");
    H5Fclose(f);
    expect_fallback(p, "tensor 'scalar' has no crc32", "missing checksum");

    p = two_ckpts("int.h5");
    f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    const hsize_t one = 1;
    const hid_t sp = H5Screate_simple(1, &one, NULL);
    H5Dclose(H5Dcreate2(f, "stray", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Sclose(sp);
    H5Fclose(f);
    expect_fallback(p, "'stray' is not a float32 tensor", "foreign dataset");
}

/* ---- failed writes leave the previous checkpoint alone ---- */

static size_t SIZE_BEFORE;
static char *BYTES_BEFORE, *PREV_BEFORE;
static size_t PREV_SIZE;

static void snapshot(const char *p)
{
    free(BYTES_BEFORE), free(PREV_BEFORE);
    BYTES_BEFORE = slurp(p, &SIZE_BEFORE);
    PREV_BEFORE = slurp(suffixed(p, ".prev"), &PREV_SIZE);
}

static void unchanged(const char *p, const char *what)
{
    size_t n = 0, m = 0;
    char *now = slurp(p, &n), *prev = slurp(suffixed(p, ".prev"), &m);
    CHECK(now && n == SIZE_BEFORE && !memcmp(now, BYTES_BEFORE, n), "%s: PATH unchanged", what);
    CHECK(prev && m == PREV_SIZE && !memcmp(prev, PREV_BEFORE, m), "%s: PATH.prev unchanged", what);
    free(now), free(prev);
    char err[512];
    qp_ckpt *c = qp_ckpt_open(p, err, sizeof err);
    CHECK(c, "%s: PATH still opens: %s", what, err);
    if (c) check_contents(c, 300, what), qp_ckpt_close(c);
}

static int write_denied(const char *p)
{
    char err[512] = "";
    if (write_ckpt(p, 400, err, sizeof err) == 0) return 1;
    if (!strstr(err, "Permission denied") || !strstr(err, p) || strchr(err, '\n')) {
        fprintf(stderr, "got '%s'\n", err);
        return 2;
    }
    return 0;
}

/* As an unprivileged uid when we are root, who would ignore the mode. */
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

static void test_failed_writes(void)
{
    char ro[600], err[512] = "";
    snprintf(ro, sizeof ro, "%s/ro", WORK);
    mkdir(ro, 0755);
    chmod(ro, 0755);
    const char *p = two_ckpts("ro/ck.h5");
    snapshot(p);
    chmod(ro, 0555);
    CHECK(run_unprivileged(write_denied, p) == 0, "write into a read-only directory: Permission denied");
    chmod(ro, 0755);
    unchanged(p, "read-only directory");
    CHECK(!exists(suffixed(p, ".tmp")), "read-only directory: no PATH.tmp");

    p = two_ckpts("blocked.h5");
    snapshot(p);
    mkdir(suffixed(p, ".tmp"), 0755); /* PATH.tmp cannot be created */
    CHECK(write_ckpt(p, 400, err, sizeof err) != 0 && strstr(err, "Is a directory"), "PATH.tmp a directory: %s", err);
    rmdir(suffixed(p, ".tmp"));
    unchanged(p, "PATH.tmp blocked");

    p = two_ckpts("noprev.h5");
    snapshot(p);
    unlink(suffixed(p, ".prev")); /* PATH cannot be renamed to PATH.prev */
    mkdir(suffixed(p, ".prev"), 0755);
    char inside[760];
    snprintf(inside, sizeof inside, "%s/x", suffixed(p, ".prev"));
    spit(inside, "x", 1);
    CHECK(write_ckpt(p, 400, err, sizeof err) != 0 && strstr(err, "cannot rename"), "PATH.prev in the way: %s", err);
    size_t n = 0;
    char *now = slurp(p, &n);
    CHECK(now && n == SIZE_BEFORE && !memcmp(now, BYTES_BEFORE, n), "PATH.prev in the way: PATH unchanged");
    CHECK(!exists(suffixed(p, ".tmp")), "PATH.prev in the way: no PATH.tmp");
    free(now);
    unlink(inside);
    rmdir(suffixed(p, ".prev"));

    p = two_ckpts("badargs.h5");
    snapshot(p);
    fill(1);
    qp_ckpt_tensor t[NT];
    tensors(t);
    t[1].ndim = 5;
    CHECK(qp_ckpt_write(p, t, NT, NULL, 0, err, sizeof err) != 0 && strstr(err, "5 dimensions"), "ndim 5: %s", err);
    tensors(t);
    t[2].shape[0] = -1;
    CHECK(qp_ckpt_write(p, t, NT, NULL, 0, err, sizeof err) != 0 && strstr(err, "bad shape"), "shape -1: %s", err);
    tensors(t);
    t[3].name = t[0].name;
    CHECK(qp_ckpt_write(p, t, NT, NULL, 0, err, sizeof err) != 0 && strstr(err, "params/wte"),
          "duplicate tensor name: %s", err);
    tensors(t);
    const qp_ckpt_attr marker = {"complete", 0, 1, NULL};
    CHECK(qp_ckpt_write(p, t, NT, &marker, 1, err, sizeof err) != 0 && strstr(err, "reserved"),
          "attribute named 'complete': %s", err);
    const qp_ckpt_attr dup[] = {{"a", 0, 1, NULL}, {"a", 1, 0, "x"}};
    CHECK(qp_ckpt_write(p, t, NT, dup, 2, err, sizeof err) != 0 && strstr(err, "given twice"), "duplicate attr: %s",
          err);
    unchanged(p, "bad arguments");
    CHECK(!exists(suffixed(p, ".tmp")), "bad arguments: no PATH.tmp");

    char want[800];
    p = wpath("missing.h5");
    CHECK(!qp_ckpt_open(p, err, sizeof err), "missing checkpoint");
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", p);
    CHECK(!strcmp(err, want), "message: %s", err);
    free(BYTES_BEFORE), free(PREV_BEFORE);
    BYTES_BEFORE = PREV_BEFORE = NULL;
}

int main(int argc, char **argv)
{
    snprintf(WORK, sizeof WORK, "%s", argc > 1 ? argv[1] : "ckpt_unit");
    if (mkdir(WORK, 0755) && errno != EEXIST) {
        perror(WORK);
        return 1;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    test_crc();
    test_round_trip_and_rotation();
    test_torn();
    test_corrupt();
    test_failed_writes();
    return qp_test_finish("test_ckpt");
}
