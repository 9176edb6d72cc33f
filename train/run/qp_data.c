/* qp_data.c — token streams, deterministic batches, prefetching loader (see
 * qp_data.h).
 *
 * Files are mapped read-only, never copied: a multi-GB shard costs address
 * space, not memory, and pages come in as batches touch them.
 *
 * Kind. A file whose first 4 bytes are the llm.c magic is a shard, whatever
 * its name. A file named *.bin without the magic is an error, not bytes: such
 * a file is in practice a shard of another format or endianness, and training
 * on its raw bytes would fail silently. Anything else is bytes.
 *
 * Split. With n tokens, n_val = floor(val_frac * n) and n_train = n - n_val;
 * train is tokens [0, n_train), val is [n_train, n). Both must hold at least
 * 2 tokens (one input and its target) or the open fails.
 *
 * Batch. For split s with n_s tokens starting at base_s, batch `index`, row
 * i in [0, B):
 *     off_i = qp_rng_u32(seed, s, (uint64_t)index * B + i) % (n_s - T)
 *     inputs [i*T + t] = tok[base_s + off_i + t]        t in [0, T)
 *     targets[i*T + t] = tok[base_s + off_i + t + 1]
 * so off_i + T <= n_s - 1: a window never leaves its split.
 *
 * Fixed batches (the validation set every run of a study shares, whatever
 * its seed): a set of nb batches is W = nb*B windows spread evenly over the
 * whole split, window w at base_s + floor(w * (n_s-1-T) / (W-1)) (the first
 * at the split's start, the last ending at its end), batch k = windows
 * kB .. kB+B-1. The stride is at least T (no window overlaps another) as nb
 * is at most floor(floor((n_s-1)/T) / B); a set of that size covers the
 * split. Spread, not from the start: a split made of several texts (the
 * English corpus) is sampled in proportion at any size. The draw is one
 * 32-bit word, so with n_s - T > 2^32 the offsets cover only the first 2^32
 * positions of the split (and the modulo bias is < (n_s - T) / 2^32). */
#include "qp_data.h"

#include "qp_rng.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SHARD_HEADER_BYTES (256 * 4)
#define SHARD_VOCAB 50257

struct qp_dataset {
    const uint8_t *map; /* whole file; NULL only for an empty file */
    size_t map_len;
    const uint8_t *tok; /* first token: map for bytes, map + header for shards */
    int shard;          /* tokens are little-endian uint16, else bytes */
    int64_t n, n_train, n_val;
};

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Byte-wise so the file's little-endian order holds on any host and no
 * unaligned load is made. */
static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint32_t le16(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8; }

static int ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Validate an llm.c shard header and body; on success the token count. */
static int parse_shard(const char *path, const uint8_t *map, size_t len, int64_t *ntok, char *err, size_t errlen)
{
    if (len < 4 || le32(map) != SHARD_MAGIC) {
        if (len < 4)
            set_err(err, errlen, "%s: not an llm.c shard: %zu bytes, too short for the magic", path, len);
        else
            set_err(err, errlen, "%s: not an llm.c shard: bad magic %u (expected %d; .bin files are read as shards)",
                    path, le32(map), SHARD_MAGIC);
        return -1;
    }
    if (len < SHARD_HEADER_BYTES) {
        set_err(err, errlen, "%s: truncated shard header: %zu bytes, need %d", path, len, SHARD_HEADER_BYTES);
        return -1;
    }
    const int32_t version = (int32_t)le32(map + 4), count = (int32_t)le32(map + 8);
    if (version != SHARD_VERSION) {
        set_err(err, errlen, "%s: unsupported shard version %d (expected %d)", path, version, SHARD_VERSION);
        return -1;
    }
    if (count < 0) {
        set_err(err, errlen, "%s: bad shard header: negative token count %d", path, count);
        return -1;
    }
    const uint64_t want = SHARD_HEADER_BYTES + 2 * (uint64_t)count;
    if ((uint64_t)len != want) {
        set_err(err, errlen, "%s: %s: header says %d tokens (%llu bytes), file has %zu bytes", path,
                (uint64_t)len < want ? "truncated shard" : "shard size mismatch", count, (unsigned long long)want,
                len);
        return -1;
    }
    /* One pass at open so a batch never has to check its tokens. */
    const uint8_t *tok = map + SHARD_HEADER_BYTES;
    for (int64_t i = 0; i < count; i++) {
        const uint32_t t = le16(tok + 2 * i);
        if (t >= SHARD_VOCAB) {
            set_err(err, errlen, "%s: token %u at position %lld is out of range (vocabulary %d)", path, t,
                    (long long)i, SHARD_VOCAB);
            return -1;
        }
    }
    *ntok = count;
    return 0;
}

qp_dataset *qp_dataset_open(const char *path, double val_frac, char *err, size_t errlen)
{
    if (!(val_frac > 0.0 && val_frac < 1.0)) {
        set_err(err, errlen, "%s: val_frac %g is outside (0, 1)", path, val_frac);
        return NULL;
    }
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        set_err(err, errlen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        set_err(err, errlen, "%s: too large to map", path);
        close(fd);
        return NULL;
    }
    const size_t len = (size_t)st.st_size;
    const uint8_t *map = NULL;
    if (len > 0) { /* mmap refuses length 0; an empty file fails below as too short */
        void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            set_err(err, errlen, "%s: mmap: %s", path, strerror(errno));
            close(fd);
            return NULL;
        }
        map = m;
    }
    close(fd); /* the mapping keeps the file */

    qp_dataset *d = calloc(1, sizeof *d);
    if (!d) {
        set_err(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    d->map = map;
    d->map_len = len;
    if ((len >= 4 && le32(map) == SHARD_MAGIC) || ends_with(path, ".bin")) {
        if (parse_shard(path, map, len, &d->n, err, errlen)) goto fail;
        d->shard = 1;
        d->tok = map + SHARD_HEADER_BYTES;
    } else {
        d->n = (int64_t)len;
        d->tok = map;
    }
    d->n_val = (int64_t)floor(val_frac * (double)d->n);
    d->n_train = d->n - d->n_val;
    if (d->n_train < 2 || d->n_val < 2) {
        set_err(err, errlen, "%s: too few tokens: %lld split %lld train / %lld val, each split needs at least 2",
                path, (long long)d->n, (long long)d->n_train, (long long)d->n_val);
        goto fail;
    }
    return d;

fail:
    free(d);
    if (map) munmap((void *)map, len);
    return NULL;
}

void qp_dataset_close(qp_dataset *d)
{
    if (!d) return;
    if (d->map) munmap((void *)d->map, d->map_len);
    free(d);
}

int qp_dataset_vocab(const qp_dataset *d) { return d->shard ? SHARD_VOCAB : 256; }

const char *qp_dataset_kind(const qp_dataset *d) { return d->shard ? "llmc-shard" : "bytes"; }

/* -1 for an unknown split. */
int64_t qp_dataset_tokens(const qp_dataset *d, int split)
{
    if (split == QP_SPLIT_TRAIN) return d->n_train;
    if (split == QP_SPLIT_VAL) return d->n_val;
    return -1;
}

/* One window of T+1 tokens at absolute offset off into row i. */
static void copy_window(const qp_dataset *d, uint64_t off, int T, int32_t *in, int32_t *tg)
{
    if (d->shard) {
        const uint8_t *p = d->tok + 2 * off;
        for (int t = 0; t < T; t++) in[t] = (int32_t)le16(p + 2 * t);
        for (int t = 0; t < T; t++) tg[t] = (int32_t)le16(p + 2 * (t + 1));
    } else {
        const uint8_t *p = d->tok + off;
        for (int t = 0; t < T; t++) in[t] = p[t];
        for (int t = 0; t < T; t++) tg[t] = p[t + 1];
    }
}

/* Also -1 for an unknown split, B or T < 1, or a negative index. Reads only
 * the immutable mapping, so any number of threads may call it at once. */
int qp_dataset_batch(const qp_dataset *d, int split, uint64_t seed, int64_t index, int B, int T, int32_t *inputs,
                     int32_t *targets)
{
    const int64_t n = qp_dataset_tokens(d, split);
    if (n < 0 || B < 1 || T < 1 || index < 0 || n < (int64_t)T + 1) return -1;
    const int64_t base = split == QP_SPLIT_TRAIN ? 0 : d->n_train;
    const uint64_t span = (uint64_t)(n - T);
    for (int i = 0; i < B; i++) {
        const uint64_t off = (uint64_t)base + qp_rng_u32(seed, (uint64_t)split, (uint64_t)index * (uint64_t)B + (uint64_t)i) % span;
        copy_window(d, off, T, inputs + (size_t)i * T, targets + (size_t)i * T);
    }
    return 0;
}

int64_t qp_dataset_fixed_batches(const qp_dataset *d, int split, int B, int T)
{
    const int64_t n = qp_dataset_tokens(d, split);
    if (n < 0 || B < 1 || T < 1 || n < (int64_t)T + 1) return 0;
    return (n - 1) / T / B;
}

int qp_dataset_fixed_batch(const qp_dataset *d, int split, int64_t index, int64_t nbatches, int B, int T,
                           int32_t *inputs, int32_t *targets)
{
    const int64_t most = qp_dataset_fixed_batches(d, split, B, T);
    if (nbatches < 1 || nbatches > most || index < 0 || index >= nbatches) return -1;
    const int64_t n = qp_dataset_tokens(d, split), base = split == QP_SPLIT_TRAIN ? 0 : d->n_train;
    const int64_t nw = nbatches * B, last = n - 1 - T; /* the last window start that fits */
    for (int i = 0; i < B; i++) {
        const int64_t w = index * B + i;
        /* spread evenly from the first to the last position (stride >= T: no overlap) */
        const int64_t off = nw > 1 ? (int64_t)((__int128)w * last / (nw - 1)) : 0;
        copy_window(d, (uint64_t)(base + off), T, inputs + (size_t)i * T, targets + (size_t)i * T);
    }
    return 0;
}

uint64_t qp_batch_hash(const int32_t *tokens, int64_t n)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a 64 offset basis */
    for (int64_t i = 0; i < n; i++) {
        const uint32_t v = (uint32_t)tokens[i];
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xffu;
            h *= 1099511628211ull; /* FNV 64 prime */
        }
    }
    return h;
}

/* ---- loader ----
 *
 * depth + 1 slots: up to `depth` batches ready ahead plus the one the
 * consumer holds (its pointers stay valid until the next call). Batch k
 * (counted from start) lives in slot k % nslots. `produced` batches are
 * filled, `taken` handed out; the producer fills batch `produced` only while
 * produced - taken < depth, which keeps it off the held slot (taken - 1) and
 * the ready ones [taken, produced). A slot is filled outside the lock: until
 * `produced` moves past it, only the producer touches it. */

typedef struct {
    int32_t *inputs, *targets;
} slot;

struct qp_loader {
    const qp_dataset *d;
    int split, B, T, depth;
    int64_t nslots;
    uint64_t seed;
    int64_t start;
    slot *slots;
    int32_t *buf; /* all slots' tokens, one allocation */

    pthread_mutex_t mu;
    pthread_cond_t ready; /* produced moved, or failed */
    pthread_cond_t space; /* taken moved, or stop */
    int64_t produced, taken;
    int stop, failed, thread_started;
    pthread_t thread;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int fill(qp_loader *l, int64_t k)
{
    const slot *s = &l->slots[k % l->nslots];
    return qp_dataset_batch(l->d, l->split, l->seed, l->start + k, l->B, l->T, s->inputs, s->targets);
}

static void *producer(void *arg)
{
    qp_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->stop && l->produced - l->taken >= l->depth) pthread_cond_wait(&l->space, &l->mu);
        if (l->stop) break;
        const int64_t k = l->produced;
        pthread_mutex_unlock(&l->mu);
        const int rc = fill(l, k);
        pthread_mutex_lock(&l->mu);
        if (rc) {
            l->failed = 1;
            pthread_cond_broadcast(&l->ready);
            break;
        }
        l->produced = k + 1;
        pthread_cond_broadcast(&l->ready);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static void free_loader(qp_loader *l)
{
    free(l->buf);
    free(l->slots);
    free(l);
}

/* The dataset must outlive the loader. */
qp_loader *qp_loader_create(const qp_dataset *d, int split, uint64_t seed, int B, int T, int depth,
                            int64_t start_index, char *err, size_t errlen)
{
    const int64_t n = d ? qp_dataset_tokens(d, split) : -1;
    if (n < 0) {
        set_err(err, errlen, "loader: %s", d ? "unknown split" : "no dataset");
        return NULL;
    }
    if (B < 1 || T < 1 || depth < 0 || start_index < 0) {
        set_err(err, errlen, "loader: bad arguments B=%d T=%d depth=%d start=%lld (need B, T >= 1, depth, start >= 0)",
                B, T, depth, (long long)start_index);
        return NULL;
    }
    if (n < (int64_t)T + 1) {
        set_err(err, errlen, "loader: the %s split has %lld tokens, T=%d needs at least %lld",
                split == QP_SPLIT_TRAIN ? "train" : "val", (long long)n, T, (long long)T + 1);
        return NULL;
    }
    const int64_t nslots = (int64_t)depth + 1;
    size_t per, total;
    if (__builtin_mul_overflow((size_t)B, (size_t)T, &per) ||
        __builtin_mul_overflow(per, (size_t)2 * (size_t)nslots, &total) ||
        __builtin_mul_overflow(total, sizeof(int32_t), &total)) {
        set_err(err, errlen, "loader: B=%d T=%d depth=%d is too large", B, T, depth);
        return NULL;
    }
    qp_loader *l = calloc(1, sizeof *l);
    if (!l) {
        set_err(err, errlen, "loader: out of memory");
        return NULL;
    }
    l->slots = calloc((size_t)nslots, sizeof *l->slots);
    l->buf = malloc(total);
    if (!l->slots || !l->buf) {
        set_err(err, errlen, "loader: out of memory for %lld slots of %d x %d tokens", (long long)nslots, B, T);
        free_loader(l);
        return NULL;
    }
    for (int64_t s = 0; s < nslots; s++) {
        l->slots[s].inputs = l->buf + (size_t)2 * s * per;
        l->slots[s].targets = l->slots[s].inputs + per;
    }
    l->d = d;
    l->split = split;
    l->seed = seed;
    l->B = B;
    l->T = T;
    l->depth = depth;
    l->nslots = nslots;
    l->start = start_index;
    if (depth == 0) return l; /* synchronous: no thread, no locks */

    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->ready, NULL);
    pthread_cond_init(&l->space, NULL);
    const int rc = pthread_create(&l->thread, NULL, producer, l);
    if (rc) {
        set_err(err, errlen, "loader: cannot start the thread: %s", strerror(rc));
        pthread_cond_destroy(&l->space);
        pthread_cond_destroy(&l->ready);
        pthread_mutex_destroy(&l->mu);
        free_loader(l);
        return NULL;
    }
    l->thread_started = 1;
    return l;
}

int qp_loader_next(qp_loader *l, const int32_t **inputs, const int32_t **targets, int64_t *index, double *wait_ms)
{
    const double t0 = now_ms();
    int64_t k;
    if (l->depth == 0) {
        k = l->taken;
        if (fill(l, k)) return -1;
        l->taken = k + 1;
    } else {
        pthread_mutex_lock(&l->mu);
        while (l->produced <= l->taken && !l->failed) pthread_cond_wait(&l->ready, &l->mu);
        if (l->produced <= l->taken) { /* failed before this batch */
            pthread_mutex_unlock(&l->mu);
            return -1;
        }
        k = l->taken++;
        pthread_cond_signal(&l->space); /* the slot held until now is free */
        pthread_mutex_unlock(&l->mu);
    }
    const slot *s = &l->slots[k % l->nslots];
    *inputs = s->inputs;
    *targets = s->targets;
    if (index) *index = l->start + k;
    if (wait_ms) *wait_ms = now_ms() - t0;
    return 0;
}

void qp_loader_destroy(qp_loader *l)
{
    if (!l) return;
    if (l->thread_started) {
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_broadcast(&l->space);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
        pthread_cond_destroy(&l->space);
        pthread_cond_destroy(&l->ready);
        pthread_mutex_destroy(&l->mu);
    }
    free_loader(l);
}
