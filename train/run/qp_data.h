/* qp_data.h — training data: token streams, deterministic batches, and the
 * prefetching loader.
 *
 * Owns: how text and token shards become batches. Two inputs:
 *   - any other file: its bytes are the tokens (vocabulary 256);
 *   - llm.c token shards (.bin): a 256 x int32 header (magic 20240520,
 *     version 1, token count), then uint16 GPT-2 tokens (vocabulary 50257).
 * The split is deterministic: the last val_frac of the token stream is the
 * validation split. Batch `index` of a split is B windows of T+1 tokens at
 * offsets drawn from qp_rng_u32(seed, split, index*B + i), so every recipe
 * (and every resumed run) sees the same batches in the same order. */
#ifndef QP_DATA_H
#define QP_DATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { QP_SPLIT_TRAIN = 0, QP_SPLIT_VAL = 1 };

typedef struct qp_dataset qp_dataset;

/* Open a dataset; NULL with a one-line message in err on failure (missing or
 * unreadable file, bad shard header, too few tokens, val_frac outside (0,1)). */
qp_dataset *qp_dataset_open(const char *path, double val_frac, char *err, size_t errlen);
void qp_dataset_close(qp_dataset *d);
int qp_dataset_vocab(const qp_dataset *d);          /* 256 or 50257 */
const char *qp_dataset_kind(const qp_dataset *d);   /* "bytes" or "llmc-shard" */
int64_t qp_dataset_tokens(const qp_dataset *d, int split);

/* Fill inputs/targets (B*T each, targets = inputs shifted by one) with batch
 * `index` of a split. Returns 0, or -1 if the split has fewer than T+1 tokens. */
int qp_dataset_batch(const qp_dataset *d, int split, uint64_t seed, int64_t index, int B, int T, int32_t *inputs,
                     int32_t *targets);

/* The fixed batches of a split, the same for every seed (so every run of a
 * study evaluates on the same tokens): a set of nbatches batches is
 * nbatches*B windows of T+1 tokens spread evenly over the whole split,
 * without overlap. _batches: the most a set may hold (windows of stride T
 * covering the split; 0 if none fits); _batch: fill batch `index` of a set
 * of nbatches, -1 when either is out of range. */
int64_t qp_dataset_fixed_batches(const qp_dataset *d, int split, int B, int T);
int qp_dataset_fixed_batch(const qp_dataset *d, int split, int64_t index, int64_t nbatches, int B, int T,
                           int32_t *inputs, int32_t *targets);

/* FNV-1a 64 of a batch's tokens: logged per step so runs can prove they saw
 * the same data. */
uint64_t qp_batch_hash(const int32_t *tokens, int64_t n);

/* A loader thread fills a ring of `depth` batches ahead of the consumer, for
 * indices start, start+1, ...; depth 0 prepares each batch synchronously in
 * qp_loader_next (for comparison: --prefetch 0). */
typedef struct qp_loader qp_loader;
qp_loader *qp_loader_create(const qp_dataset *d, int split, uint64_t seed, int B, int T, int depth,
                            int64_t start_index, char *err, size_t errlen);
/* The next batch, in index order. The pointers stay valid until the next
 * call. *wait_ms: how long this call waited for the batch to be ready (with
 * depth 0: how long preparing it took). Returns 0, or -1 on failure. */
int qp_loader_next(qp_loader *l, const int32_t **inputs, const int32_t **targets, int64_t *index, double *wait_ms);
void qp_loader_destroy(qp_loader *l);

#ifdef __cplusplus
}
#endif
#endif
