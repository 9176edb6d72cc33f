/* fuzz_h5.c — structure-aware fuzz target for every HDF5 reader of ours:
 * checkpoints (train/runfile/qp_ckpt.c: qp_ckpt_open, qp_ckpt_read, the attribute
 * getters), the tensor reader qerr uses (io/qp_h5read.c), qplot's run
 * file reader (plots/qp_runread.c) and qsweep's (experiments/qs_runfile.c), both through
 * the one run-file reader (train/runfile/qp_runfile.c).
 *
 * Fuzzing raw HDF5 bytes mostly finds bugs inside libhdf5, which we cannot
 * fix. So the input is decoded into a description — datasets (names from
 * the checkpoint and run-file schemas, right and wrong dtypes, scalar/null/
 * rank 1..9 spaces, dims 0 to 2^62, contiguous, chunked, deflated or
 * compact, data written or not), per-dataset crc32 attributes (right, wrong, missing, wrong type or
 * shape) and root attributes (the 'complete' marker, shape keys, recipe;
 * integers, floats, strings fixed and variable, arrays, null spaces) and an
 * optional cut of the file's tail — which the HDF5 library writes, and the
 * readers then open. Contract: every reject is one line naming the file;
 * nothing crashes, leaks or asks for a huge allocation (run with
 * -malloc_limit_mb). Replayed over the corpus by fuzz_replay.c. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "qp_ckpt.h"
#include "qp_h5read.h"
#include "qp_runread.h"
#include "qs_runfile.h"

typedef struct {
    const uint8_t *p;
    size_t n;
} in_t;

static unsigned byte(in_t *in)
{
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

static const char *const DS_NAMES[] = {
    "params/wte", "params/h0/qkv_w", "adam/m", "x", "train/step", "train/loss", "train/lr", "train/grad_norm",
    "train/step_ms", "train/data_wait_ms", "train/tokens_per_s", "train/batch_hash", "eval/step",
    "eval/val_loss", "quant/error", "events/recalib", "status", "g/h/deep", "events/divergence",
    "train/gemm_ms", "train/comm_ms",
};
#define N_DS_NAMES (sizeof DS_NAMES / sizeof *DS_NAMES)

static const char *const ATTR_NAMES[] = {"complete", "layers", "heads", "dim", "seq", "vocab", "seed",
                                         "step", "recipe", "version", "crc32", "x", "runfile_schema"};
#define N_ATTR_NAMES (sizeof ATTR_NAMES / sizeof *ATTR_NAMES)

static const hsize_t DIMS[] = {0, 1, 2, 3, 5, 7, 16, 4097, (hsize_t)1 << 40, (hsize_t)1 << 62};

/* CRC-32 as qp_ckpt.c computes it (over float32 little-endian bytes). */
static uint32_t crc_floats(const float *x, size_t n)
{
    static uint32_t table[256];
    if (!table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        for (int k = 0; k < 4; k++, u >>= 8) c = table[(c ^ u) & 0xFF] ^ (c >> 8);
    }
    return c ^ 0xFFFFFFFFu;
}

/* A compound like /quant/error's rows (or a wrong one). */
static hid_t str_t(size_t n)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, n);
    return t;
}

static hid_t make_type(unsigned k)
{
    switch (k % 14) {
    case 0: return H5Tcopy(H5T_IEEE_F32LE);
    case 1: return H5Tcopy(H5T_IEEE_F32BE);
    case 2: return H5Tcopy(H5T_IEEE_F64LE);
    case 3: { /* IEEE half */
        hid_t t = H5Tcopy(H5T_IEEE_F32LE);
        H5Tset_fields(t, 15, 10, 5, 0, 10);
        H5Tset_precision(t, 16);
        H5Tset_size(t, 2);
        H5Tset_ebias(t, 15);
        return t;
    }
    case 4: { /* bfloat16 */
        hid_t t = H5Tcopy(H5T_IEEE_F32LE);
        H5Tset_fields(t, 15, 7, 8, 0, 7);
        H5Tset_precision(t, 16);
        H5Tset_size(t, 2);
        return t;
    }
    case 5: { /* a 24-bit float: "other" */
        hid_t t = H5Tcopy(H5T_IEEE_F32LE);
        H5Tset_fields(t, 23, 16, 7, 0, 16);
        H5Tset_precision(t, 24);
        H5Tset_size(t, 3);
        H5Tset_ebias(t, 63);
        return t;
    }
    case 6: return H5Tcopy(H5T_STD_I32LE);
    case 7: return H5Tcopy(H5T_STD_I64LE);
    case 8: return H5Tcopy(H5T_STD_U8LE);
    case 9: return str_t(8);
    case 10: return str_t(H5T_VARIABLE);
    case 11: { /* /quant/error's columns */
        hid_t t = H5Tcreate(H5T_COMPOUND, 8 + 8 + 33 + 17 + 17 + 8), g = str_t(33), s = str_t(17);
        H5Tinsert(t, "step", 0, H5T_STD_I64LE);
        H5Tinsert(t, "layer", 8, H5T_STD_I64LE);
        H5Tinsert(t, "gemm", 16, g);
        H5Tinsert(t, "operand", 49, s);
        H5Tinsert(t, "pass", 66, s);
        H5Tinsert(t, "rel_l2", 83, H5T_IEEE_F64LE);
        H5Tclose(g), H5Tclose(s);
        return t;
    }
    case 12: { /* /status and /events/recalib-like */
        hid_t t = H5Tcreate(H5T_COMPOUND, 17 + 8 + 8 + 33 + 17 + 33 + 40), g = str_t(33), s = str_t(17), m = str_t(40);
        H5Tinsert(t, "state", 0, s);
        H5Tinsert(t, "step", 17, H5T_STD_I64LE);
        H5Tinsert(t, "layer", 25, H5T_STD_I64LE);
        H5Tinsert(t, "gemm", 33, g);
        H5Tinsert(t, "operand", 66, s);
        H5Tinsert(t, "kind", 83, g);
        H5Tinsert(t, "message", 116, m);
        H5Tclose(g), H5Tclose(s), H5Tclose(m);
        return t;
    }
    default: { /* a compound with none of the expected columns */
        hid_t t = H5Tcreate(H5T_COMPOUND, 4);
        H5Tinsert(t, "a", 0, H5T_STD_I32LE);
        return t;
    }
    }
}

/* Fill n elements of type t with bytes derived from seed: floats through a
 * float32 pattern converted by HDF5, everything else as raw bytes (strings
 * stay printable). Returns the float32 values for the checksum (or NULL). */
static int write_data(hid_t ds, hid_t t, size_t n, unsigned seed, float *vals)
{
    int ok = 0;
    const H5T_class_t c = H5Tget_class(t);
    if (c == H5T_FLOAT || c == H5T_INTEGER) {
        for (size_t i = 0; i < n; i++) vals[i] = (float)((int)((seed * 2654435761u + i * 40503u) >> 20) % 512) / 8.0f;
        if (seed % 7 == 3 && n) vals[0] = 1e30f; /* out of range for half */
        ok = H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) >= 0;
    } else if (c == H5T_STRING && H5Tis_variable_str(t) > 0) {
        const char **s = malloc((n ? n : 1) * sizeof *s);
        if (!s) return 0;
        for (size_t i = 0; i < n; i++) s[i] = (i + seed) % 3 ? "running" : "";
        ok = H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, s) >= 0;
        free(s);
    } else {
        const size_t sz = H5Tget_size(t);
        unsigned char *b = malloc(n * sz + 1);
        if (!b) return 0;
        for (size_t i = 0; i < n * sz; i++) b[i] = (unsigned char)('a' + (i * 7 + seed) % 26);
        if (c == H5T_COMPOUND && sz >= 16 && n) memset(b, 0, 16); /* step, layer = 0 */
        ok = H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, b) >= 0;
        free(b);
    }
    return ok;
}

static void add_crc(hid_t ds, unsigned mode, uint32_t crc)
{
    hid_t sp = -1, at = -1, t = -1;
    switch (mode % 8) {
    case 0: case 1: case 2: /* right */
        sp = H5Screate(H5S_SCALAR);
        at = H5Acreate2(ds, "crc32", H5T_STD_U32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, H5T_NATIVE_UINT32, &crc);
        break;
    case 3: /* wrong */
        crc ^= 1u << (mode % 32);
        sp = H5Screate(H5S_SCALAR);
        at = H5Acreate2(ds, "crc32", H5T_STD_U32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, H5T_NATIVE_UINT32, &crc);
        break;
    case 4: break; /* missing */
    case 5: { /* an array of them */
        const hsize_t d = 3;
        const uint32_t v[3] = {crc, crc, crc};
        sp = H5Screate_simple(1, &d, NULL);
        at = H5Acreate2(ds, "crc32", H5T_STD_U32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, H5T_NATIVE_UINT32, v);
        break;
    }
    case 6: { /* a string */
        t = str_t(16);
        sp = H5Screate(H5S_SCALAR);
        at = H5Acreate2(ds, "crc32", t, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, t, "0123456789abcdef");
        break;
    }
    default: { /* 64-bit, out of uint32 range */
        const int64_t v = -(int64_t)crc - 5;
        sp = H5Screate(H5S_SCALAR);
        at = H5Acreate2(ds, "crc32", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, H5T_NATIVE_INT64, &v);
        break;
    }
    }
    if (at >= 0) H5Aclose(at);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
}

static void add_attr(hid_t f, const char *name, unsigned kind, int64_t v)
{
    hid_t sp = -1, at = -1, t = -1;
    const hsize_t d2 = 2;
    switch (kind % 11) {
    case 0: case 1: /* int64 scalar */
        sp = H5Screate(H5S_SCALAR);
        at = H5Acreate2(f, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, H5T_NATIVE_INT64, &v);
        break;
    case 2: { /* int64 array */
        const int64_t a[2] = {v, v + 1};
        sp = H5Screate_simple(1, &d2, NULL);
        at = H5Acreate2(f, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, H5T_NATIVE_INT64, a);
        break;
    }
    case 3: { /* uint8, converted with overflow */
        sp = H5Screate(H5S_SCALAR);
        at = H5Acreate2(f, name, H5T_STD_U8LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        const unsigned char b = (unsigned char)v;
        H5Awrite(at, H5T_NATIVE_UCHAR, &b);
        break;
    }
    case 4: { /* double */
        const double x = (double)v + 0.5;
        sp = H5Screate(H5S_SCALAR);
        at = H5Acreate2(f, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, H5T_NATIVE_DOUBLE, &x);
        break;
    }
    case 5: case 6: { /* variable-length string: a recipe, or v in decimal */
        char num[32];
        snprintf(num, sizeof num, "%lld", (long long)v);
        const char *s = kind % 11 == 6 ? num : (v & 3) == 0 ? "" : (v & 3) == 1 ? "nvfp4" : (v & 3) == 2 ? "bf16" : "fp8,nvfp4-rht";
        t = str_t(H5T_VARIABLE);
        sp = H5Screate(H5S_SCALAR);
        at = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, t, &s);
        break;
    }
    case 7: { /* variable-length string array */
        const char *s[2] = {"bf16", "a much longer second string than the first"};
        t = str_t(H5T_VARIABLE);
        sp = H5Screate_simple(1, &d2, NULL);
        at = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, t, s);
        break;
    }
    case 8: { /* fixed string, size from v */
        const size_t n = 1 + (size_t)(v & 63);
        char buf[64] = "fp32";
        t = str_t(n);
        sp = H5Screate(H5S_SCALAR);
        at = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, t, buf);
        break;
    }
    case 9: { /* fixed string array */
        char buf[2 * 24];
        memset(buf, 'z', sizeof buf);
        t = str_t(24);
        sp = H5Screate_simple(1, &d2, NULL);
        at = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(at, t, buf);
        break;
    }
    default: /* null dataspace */
        sp = H5Screate(H5S_NULL);
        at = H5Acreate2(f, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        break;
    }
    if (at >= 0) H5Aclose(at);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
}

typedef struct {
    const char *name;
    int64_t numel; /* -1: not created */
} made_ds;

/* Decode and write; returns the datasets made. */
static int build(const char *path, in_t *in, made_ds *made, int *nmade, int64_t *attr_vals)
{
    const hid_t fcpl = H5P_DEFAULT;
    const hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    if (f < 0) return -1;
    const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    const int nds = (int)(byte(in) % 17);
    int created = 0;
    *nmade = 0;
    static float vals[4096];
    for (int i = 0; i < nds; i++) {
        const char *name = DS_NAMES[byte(in) % N_DS_NAMES];
        const unsigned tk = byte(in), sk = byte(in), lk = byte(in), wk = byte(in), ck = byte(in);
        hid_t t = make_type(tk), sp = -1, dcpl = H5Pcreate(H5P_DATASET_CREATE);
        int rank = 0;
        hsize_t dims[9], chunk[9];
        uint64_t numel = 1;
        int overflow = 0;
        if (sk % 8 == 0) sp = H5Screate(H5S_SCALAR);
        else if (sk % 8 == 1) sp = H5Screate(H5S_NULL), numel = 0;
        else {
            rank = sk % 8 == 7 ? 9 : 1 + (int)((sk >> 3) % 4);
            for (int d = 0; d < rank; d++) {
                const unsigned db = byte(in);
                dims[d] = DIMS[db % 10 < 7 ? db % 7 : db % 10];
                if (dims[d] && numel > UINT64_MAX / dims[d]) overflow = 1;
                else numel *= dims[d];
                chunk[d] = dims[d] < 4 ? (dims[d] ? dims[d] : 1) : 4;
            }
            sp = H5Screate_simple(rank, dims, NULL);
        }
        if (overflow) numel = UINT64_MAX;
        /* layout: contiguous, chunked, chunked + deflate, compact (small ones) */
        if (rank > 0 && lk % 4 == 1) H5Pset_chunk(dcpl, rank, chunk);
        if (rank > 0 && lk % 4 == 2) H5Pset_chunk(dcpl, rank, chunk), H5Pset_deflate(dcpl, 1);
        if (lk % 4 == 3 && !overflow && numel <= 1024) H5Pset_layout(dcpl, H5D_COMPACT);
        hid_t ds = -1;
        if (sp >= 0 && t >= 0 && H5Lexists(f, name, H5P_DEFAULT) <= 0) /* < 0: a parent group is missing */
            ds = H5Dcreate2(f, name, t, sp, lcpl, dcpl, H5P_DEFAULT);
        if (ds >= 0) {
            created++;
            made[*nmade].name = name;
            made[*nmade].numel = overflow ? -1 : (int64_t)numel;
            (*nmade)++;
            uint32_t crc = crc_floats(NULL, 0);
            if (numel > 0 && numel <= 4096 && (wk % 4) != 0) {
                if (write_data(ds, t, (size_t)numel, wk, vals) && H5Tget_class(t) != H5T_STRING &&
                    H5Tget_class(t) != H5T_COMPOUND) {
                    /* what a float32 reader gets back: read it as the checkpoint reader does */
                    if (H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) >= 0)
                        crc = crc_floats(vals, (size_t)numel);
                }
            } else if (numel > 0 && numel <= 4096) {
                memset(vals, 0, (size_t)numel * sizeof *vals); /* unwritten: fill value 0 */
                crc = crc_floats(vals, (size_t)numel);
            }
            add_crc(ds, ck, crc);
            H5Dclose(ds);
        }
        if (sp >= 0) H5Sclose(sp);
        if (t >= 0) H5Tclose(t);
        H5Pclose(dcpl);
    }
    const int nat = (int)(byte(in) % 9);
    for (int i = 0; i < nat; i++) {
        const unsigned which = byte(in), kind = byte(in), vb = byte(in);
        const char *name = ATTR_NAMES[which % N_ATTR_NAMES];
        /* the marker's right value is common, so the checksums get checked */
        int64_t v = !strcmp(name, "complete") && vb < 160 ? created
                  : vb < 64 ? (int64_t)(vb % 16) - 2
                  : vb < 128 ? (int64_t)1 << (vb % 63)
                  : -((int64_t)1 << (vb % 63));
        attr_vals[which % N_ATTR_NAMES] = v;
        if (H5Aexists(f, name) <= 0) add_attr(f, name, kind, v);
    }
    H5Pclose(lcpl);
    return H5Fclose(f) < 0 ? -1 : 0;
}

static int verbose = -1; /* QP_FUZZ_VERBOSE=1: say what each reader made of the file */

static void say(const char *reader, const char *what)
{
    if (verbose) fprintf(stderr, "  %s: %s\n", reader, what);
}

static void check_err(const char *err, const char *path)
{
    const size_t n = strlen(path);
    if (strncmp(err, path, n) || !err[n] || strchr(err, '\n')) {
        fprintf(stderr, "bad message: '%s'\n", err);
        abort();
    }
}

static void read_ckpt(const char *path, const made_ds *made, int nmade)
{
    char err[1024];
    err[0] = '\0';
    qp_ckpt *c = qp_ckpt_open(path, err, sizeof err);
    say("qp_ckpt_open", c ? "ok" : err);
    if (!c) {
        check_err(err, path);
        return;
    }
    for (int i = 0; i < nmade; i++) {
        const int64_t n = made[i].numel;
        if (n < 0 || n > (1 << 16)) continue;
        float *buf = malloc((size_t)(n + 1) * sizeof *buf);
        if (!buf) abort();
        for (int64_t k = -1; k <= 1; k++) /* the right count, one fewer and one more */
            if (n + k >= 0 && qp_ckpt_read(c, made[i].name, buf, n + k, err, sizeof err)) check_err(err, path);
        free(buf);
    }
    float one;
    if (!qp_ckpt_read(c, "no/such", &one, 1, err, sizeof err)) abort();
    check_err(err, path);
    for (size_t i = 0; i < N_ATTR_NAMES; i++) {
        int64_t v;
        char s[8];
        if (qp_ckpt_attr_i64(c, ATTR_NAMES[i], &v, err, sizeof err)) check_err(err, path);
        if (qp_ckpt_attr_str(c, ATTR_NAMES[i], s, sizeof s, err, sizeof err)) check_err(err, path);
        else if (strlen(s) >= sizeof s) abort();
    }
    qp_ckpt_close(c);
}

static void read_tensors(const char *path)
{
    char err[1024];
    qp_tensor_list l;
    qp_tensor_list_init(&l);
    err[0] = '\0';
    const int rc = qp_h5_read(path, NULL, &l, err, sizeof err);
    say("qp_h5_read", rc ? err : "ok");
    if (rc) {
        check_err(err, path);
        if (l.n) abort();
    } else {
        volatile float sink = 0;
        for (size_t i = 0; i < l.n; i++) {
            const qp_tensor *t = &l.t[i];
            int64_t numel;
            if (qp_shape_numel(t->ndim, t->shape, &numel) || numel != t->numel) abort();
            if ((numel > 0) != (t->data != NULL)) abort();
            for (int64_t k = 0; k < numel; k++) sink += t->data[k];
        }
        (void)sink;
    }
    qp_tensor_list_free(&l);
}

static void read_run(const char *path)
{
    char err[1024];
    qp_run r;
    err[0] = '\0';
    const int rc = qp_run_load(&r, path, QP_RUN_QERR | QP_RUN_EVENTS, err, sizeof err);
    say("qp_run_load", rc ? err : "ok");
    if (rc) {
        if (rc != -1 && rc != QP_RUN_EMPTY && rc != QP_RUN_CKPT) abort();
        check_err(err, path);
        if (r.nattrs || r.step || r.path) abort();
        return;
    }
    if (!r.recipe || !r.n_train) abort();
    volatile double sink = 0;
    for (size_t i = 0; i < r.n_train; i++) sink += (double)r.step[i] + r.loss[i] + r.step_ms[i] + r.data_wait_ms[i] + r.tokens_per_s[i];
    for (size_t i = 0; i < r.n_eval; i++) sink += (double)r.eval_step[i] + r.val_loss[i];
    for (size_t i = 0; i < r.n_qerr; i++) sink += r.qerr[i].rel_l2 + (double)strlen(r.qerr[i].gemm);
    for (size_t i = 0; i < r.n_events; i++) sink += (double)strlen(r.events[i].kind);
    for (int i = 0; i < r.nattrs; i++) sink += (double)strlen(r.attrs[i].key) + (double)strlen(r.attrs[i].value);
    (void)sink;
    qp_run_free(&r);
}

static void read_sweep_row(const char *path)
{
    char err[1024];
    qs_runstats s;
    err[0] = '\0';
    const int rc = qs_runfile_read(path, 3.0, &s, err, sizeof err);
    say("qs_runfile_read", rc ? err : "ok");
    if (rc) {
        check_err(err, path);
        if (s.qerr || s.nqerr) abort();
        return;
    }
    if (s.steps < 0 || s.nqerr < 0 || s.nqerr > (1 << 20) || (s.nqerr > 0) != (s.qerr != NULL)) abort();
    if (memchr(s.state, '\0', sizeof s.state) == NULL || memchr(s.message, '\0', sizeof s.message) == NULL) abort();
    volatile double sink = 0;
    for (int i = 0; i < s.nqerr; i++) sink += s.qerr[i];
    (void)sink;
    qs_runstats_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[96];
    if (verbose < 0) verbose = getenv("QP_FUZZ_VERBOSE") != NULL;
    if (!path[0]) {
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        snprintf(path, sizeof path, "%s/qp-fuzz-h5-%d.h5", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
                 (int)getpid());
    }
    in_t in = {data, size};
    made_ds made[20];
    int nmade = 0;
    int64_t attr_vals[N_ATTR_NAMES] = {0};
    if (build(path, &in, made, &nmade, attr_vals)) {
        unlink(path);
        return 0;
    }
    const unsigned cut = byte(&in);
    if (cut >= 240) { /* a torn file: its tail cut off */
        FILE *f = fopen(path, "rb+");
        if (f) {
            fseek(f, 0, SEEK_END);
            const long len = ftell(f);
            fclose(f);
            if (truncate(path, len - 1 - (long)((cut - 240) * len / 17)) != 0) abort();
        }
    }
    read_ckpt(path, made, nmade);
    read_tensors(path);
    read_run(path);
    read_sweep_row(path);
    unlink(path);
    return 0;
}
