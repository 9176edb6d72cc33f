/* qprec_data.c — qtrain's batches from Python: the token stream of a
 * dataset (train/qp_data.c, the code qtrain's loader runs) behind flat
 * functions for ctypes (qprec.torch.QtrainData), so a PyTorch run can train
 * on exactly the batches a qtrain run with the same data, seed, batch and
 * sequence length sees: batch `index` of a split (qtrain's step s,
 * micro-batch m is index s * grad_accum + m), and the fixed evaluation
 * batches. Owns nothing of the data format. */
#include <stdio.h>

#include "qp_data.h"

#define QPREC_EXPORT __attribute__((visibility("default")))

QPREC_EXPORT qp_dataset *qprec_data_open(const char *path, double val_frac, char *err, size_t errlen)
{
    return qp_dataset_open(path, val_frac, err, errlen);
}

QPREC_EXPORT void qprec_data_close(qp_dataset *d) { qp_dataset_close(d); }
QPREC_EXPORT int qprec_data_vocab(const qp_dataset *d) { return qp_dataset_vocab(d); }
QPREC_EXPORT int64_t qprec_data_tokens(const qp_dataset *d, int split) { return qp_dataset_tokens(d, split); }

/* inputs, targets: B*T each; split 0 train, 1 validation. 0 or -1. */
QPREC_EXPORT int qprec_data_batch(const qp_dataset *d, int split, uint64_t seed, int64_t index, int B, int T,
                                  int32_t *inputs, int32_t *targets)
{
    return qp_dataset_batch(d, split, seed, index, B, T, inputs, targets);
}

QPREC_EXPORT uint64_t qprec_batch_hash(const int32_t *tokens, int64_t n) { return qp_batch_hash(tokens, n); }
