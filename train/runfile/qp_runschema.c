/* qp_runschema.c — the run file's columns (see qp_runschema.h). */
#include "qp_runschema.h"

#include <stdlib.h>
#include <string.h>

#define I64 QP_RC_I64, 0, 0
#define U64 QP_RC_U64, 0, 0
#define F64 QP_RC_F64, 0, 0
#define STR(w) QP_RC_STR, w, 0
#define TEXT(w) QP_RC_STR, w, 1
#define AT(type, field) offsetof(type, field)

static const qp_runcol TRAIN[] = {
    {"step", I64, "", "the optimizer step; strictly increasing", 1, AT(qp_train_row, step)},
    {"loss", F64, "nats", "mean cross-entropy per target token of the step's batch", 1, AT(qp_train_row, loss)},
    {"lr", F64, "", "learning rate the step used (after the schedule)", 1, AT(qp_train_row, lr)},
    {"grad_norm", F64, "", "global L2 norm of the gradient, before clipping", 1, AT(qp_train_row, grad_norm)},
    {"step_ms", F64, "ms", "wall time of the whole step (forward, backward, exchange, optimizer; not evaluation or "
     "checkpoints)", 1, AT(qp_train_row, step_ms)},
    {"data_wait_ms", F64, "ms", "part of `step_ms` spent waiting for the batch (phase `data`)", 1,
     AT(qp_train_row, data_wait_ms)},
    {"tokens_per_s", F64, "tokens/s", "tokens of the step (B·T·accumulation) / step time", 1,
     AT(qp_train_row, tokens_per_s)},
    {"batch_hash", U64, "", "FNV-1a 64 of the batch's tokens (`qp_batch_hash`, `train/run/qp_data.h`): two runs saw the "
     "same data iff these agree", 1, AT(qp_train_row, batch_hash)},
    {"comm_ms", F64, "ms", "part of `step_ms` spent in cross-rank communication (gradient and amax all-reduces; phase "
     "`comm`); 0 in one process", 1, AT(qp_train_row, comm_ms)},
    {"power_w", F64, "W", "mean GPU board power over the step (NVML samples); NaN when no GPU is sampled", 1,
     AT(qp_train_row, power_w)},
    {"energy_j", F64, "J", "GPU energy used since the run (or resume) started; NaN when no GPU is sampled", 1,
     AT(qp_train_row, energy_j)},
    {"gpu_util", F64, "%", "mean GPU utilization over the step (NVML); NaN when no GPU is sampled", 1,
     AT(qp_train_row, gpu_util)},
    {"grad_comm_rel_err", F64, "1", "`--grad-comm bf16|fp8`: relative L2 error ‖g_comm − g_fp32‖/‖g_fp32‖ of the "
     "gradient the ranks exchanged (summed after a BF16 or per-tensor-scaled FP8 E4M3 exchange) against an FP32 "
     "all-reduce of the same gradients; NaN for `fp32`", 1, AT(qp_train_row, grad_comm_rel_err)},
    {"gemm_ms", F64, "ms", "part of `step_ms` in the matrix products (oneDNN or cuBLASLt, operand conversion "
     "included; phase `gemm`); NaN where not measured", 2, AT(qp_train_row, gemm_ms)},
    {"quant_ms", F64, "ms", "part of `step_ms` in the precision dispatch around the products: operand quantization, "
     "transposes, Hadamard transforms, error metrics (phase `quant`); NaN where not measured", 2,
     AT(qp_train_row, quant_ms)},
    {"attn_ms", F64, "ms", "part of `step_ms` in attention's softmax(QKᵀ/√d)·V, forward and backward (phase `attn`); "
     "NaN where not measured", 2, AT(qp_train_row, attn_ms)},
    {"rowops_ms", F64, "ms", "part of `step_ms` in the other row operations: embeddings, LayerNorm, residuals, GELU, "
     "biases and their gradients, softmax/cross-entropy, and the BF16 rounding of the GEMM inputs they write where "
     "the dispatch takes them rounded (qp_linear_takes_rounded) (phase `rowops`); NaN where not measured", 2, AT(qp_train_row, rowops_ms)},
    {"optim_ms", F64, "ms", "part of `step_ms` in the gradient norm and AdamW (phase `optim`); NaN where not measured",
     2, AT(qp_train_row, optim_ms)},
    {"threads", I64, "", "OpenMP threads the step ran on: `--threads N`'s N, or under `--threads auto` the CPUs of "
     "the run's affinity mask that other work left idle, re-sampled as the run goes (at most the count it started "
     "with; `train/run/qp_omp.h`). The results do not depend on it. 0 in the rows of a file an older qtrain wrote and "
     "this one resumed", 4, AT(qp_train_row, threads)},
};

static const qp_runcol EVAL[] = {
    {"step", I64, "", "step after which validation ran; never decreases", 1, AT(qp_eval_row, step)},
    {"val_loss", F64, "nats", "mean cross-entropy per token over the fixed validation set: consecutive non-overlapping "
     "windows of seq+1 tokens from the start of the validation split, `val_tokens` of them in whole batches — the "
     "same tokens for every seed and recipe of a study (`qp_dataset_fixed_batch`, `train/run/qp_data.h`)", 1,
     AT(qp_eval_row, val_loss)},
};

static const qp_runcol QERR[] = {
    {"step", I64, "", "step measured", 1, AT(qp_qerr_row, step)},
    {"layer", I64, "", "transformer block (0-based); -1 for layers outside the blocks (e.g. the LM head)", 1,
     AT(qp_qerr_row, layer)},
    {"gemm", STR(32), "", "which GEMM: `qkv`, `attproj`, `fc`, `fcproj` (the GPT), `qkv`, `attproj`, `gate`, `up`, "
     "`down` (`--arch llama`) (`qp_gemm_name`, `train/precision/qp_recipe.h`; the FP32 LM head is not logged)", 1,
     AT(qp_qerr_row, gemm)},
    {"operand", STR(16), "", "`x` (activation), `w` (weight), `dy` (output gradient)", 1, AT(qp_qerr_row, operand)},
    {"pass", STR(16), "", "`fprop`, `dgrad`, `wgrad`", 1, AT(qp_qerr_row, pass)},
    {"rel_l2", F64, "", "‖x−q(x)‖₂ / ‖x‖₂", 1, AT(qp_qerr_row, rel_l2)},
    {"snr_db", F64, "dB", "10·log10(‖x‖² / ‖x−q(x)‖²); +inf when exact", 1, AT(qp_qerr_row, snr_db)},
    {"sat_frac", F64, "", "saturated elements / elements", 1, AT(qp_qerr_row, sat_frac)},
    {"zero_frac", F64, "", "non-zeros flushed to zero / non-zeros", 1, AT(qp_qerr_row, zero_frac)},
    {"amax", F64, "same as x", "largest finite |x|", 1, AT(qp_qerr_row, amax)},
    {"scale", F64, "", "per-tensor encode scale used", 1, AT(qp_qerr_row, scale)},
};

static const qp_runcol RECALIB[] = {
    {"step", I64, "", "step of the scaling update", 1, AT(qp_event_row, step)},
    {"layer", I64, "", "as in `/quant/error`", 1, AT(qp_event_row, layer)},
    {"gemm", STR(32), "", "as in `/quant/error`", 1, AT(qp_event_row, gemm)},
    {"operand", STR(16), "", "as in `/quant/error`", 1, AT(qp_event_row, operand)},
    {"kind", STR(32), "", "`scale_change`, `overflow`, `underflow`, `nonfinite` (`qp_event_kind_name`)", 1,
     AT(qp_event_row, kind)},
    {"old_scale", F64, "", "encode scale before", 1, AT(qp_event_row, old_scale)},
    {"new_scale", F64, "", "encode scale after", 1, AT(qp_event_row, new_scale)},
    {"amax", F64, "same as x", "the amax that triggered it", 1, AT(qp_event_row, amax)},
};

static const qp_runcol DIVERGENCE[] = {
    {"step", I64, "", "step at which it was detected", 1, AT(qp_divergence_row, step)},
    {"loss", F64, "nats", "the loss that tripped the check (NaN/inf kept as such; finite when only the gradient was "
     "not)", 1, AT(qp_divergence_row, loss)},
    {"reason", TEXT(256), "", "free text; qtrain writes `nonfinite` (NaN/Inf loss or gradient norm), `loss_spike` "
     "(loss above `--divergence-factor` x its running minimum) or `nonfinite_weights` (skip-step found NaN/Inf "
     "weights, which it cannot mend)", 1, AT(qp_divergence_row, reason)},
    {"action", STR(32), "", "what the trainer did: `skip_step`, `rollback`, `stop` (`lower_lr` is reserved)", 1,
     AT(qp_divergence_row, action)},
};

static const qp_runcol STATUS[] = {
    {"step", I64, "", "step at which the state was entered", 1, AT(qp_status_row, step)},
    {"state", STR(16), "", "one of `running`, `done`, `diverged`, `stopped`, `failed` (anything else is refused)", 1,
     AT(qp_status_row, state)},
    {"message", TEXT(512), "", "free text, e.g. the error that ended a `failed` run", 1, AT(qp_status_row, message)},
};

static const qp_runcol OUTLIERS[] = {
    {"step", I64, "", "step measured (the `--qerr-every` steps, as `/quant/error`)", 3, AT(qp_outlier_row, step)},
    {"layer", I64, "", "transformer block (0-based)", 3, AT(qp_outlier_row, layer)},
    {"gemm", STR(32), "", "the GEMM whose input x this is, as in `/quant/error` (`gate` and `up` read the same "
     "input); the input as the dispatch receives it, before quantization (Smooth-SwiGLU's scaled `down` input)", 3,
     AT(qp_outlier_row, gemm)},
    {"tokens", I64, "", "rows of the input: this process's tokens (a data-parallel rank's slice)", 3,
     AT(qp_outlier_row, tokens)},
    {"channels", I64, "", "columns of the input, C: the GEMM's contraction width", 3, AT(qp_outlier_row, channels)},
    {"amax", F64, "same as x", "largest finite |x|", 3, AT(qp_outlier_row, amax)},
    {"kurtosis", F64, "", "m4/m2² of the finite elements (central moments over the whole tensor; 3 for a Gaussian; "
     "NaN if all are equal)", 3, AT(qp_outlier_row, kurtosis)},
    {"topk", I64, "", "k = max(1, ⌈0.001·C⌉)", 3, AT(qp_outlier_row, topk)},
    {"topk_frac", F64, "", "share of the energy Σx² in the k channels of most energy (k/C when spread evenly)", 3,
     AT(qp_outlier_row, topk_frac)},
    {"top_channel", I64, "", "the channel of most energy (0-based)", 3, AT(qp_outlier_row, top_channel)},
    {"chan_amax_ratio", F64, "", "largest channel amax / median channel amax (NaN if that median is 0)", 3,
     AT(qp_outlier_row, chan_amax_ratio)},
};

static const qp_runcol BSCALE[] = {
    {"step", I64, "", "step measured (the `--qerr-every` steps, as `/quant/error`)", 5, AT(qp_bscale_row, step)},
    {"layer", I64, "", "as in `/quant/error`", 5, AT(qp_bscale_row, layer)},
    {"gemm", STR(32), "", "as in `/quant/error`", 5, AT(qp_bscale_row, gemm)},
    {"operand", STR(16), "", "as in `/quant/error`", 5, AT(qp_bscale_row, operand)},
    {"pass", STR(16), "", "as in `/quant/error`; one row per quantized use whose format has block scales (a row of "
     "`/quant/error` with the same step, layer, gemm, operand and pass)", 5, AT(qp_bscale_row, pass)},
    {"format", STR(32), "", "the use's format (`qerr --formats`)", 5, AT(qp_bscale_row, format)},
    {"n_blocks", I64, "", "block scales of the tensor; the counts of its `/quant/block_scale_hist` rows sum to it", 5,
     AT(qp_bscale_row, n_blocks)},
    {"block_scale_log2_std", F64, "", "population std of log2 s over blocks with 0 < s < inf (NaN: none); s the "
     "stored block scale decoded (NVFP4's before the tensor scale)", 5, AT(qp_bscale_row, log2_std)},
    {"block_scale_saturated_frac", F64, "", "blocks whose scale is the scale format's largest / blocks", 5,
     AT(qp_bscale_row, saturated_frac)},
    {"block_scale_underflow_frac", F64, "", "blocks with a finite non-zero amax whose scale is the format's zero or "
     "smallest / blocks", 5, AT(qp_bscale_row, underflow_frac)},
    {"elems_flushed_frac", F64, "", "non-zeros flushed to zero / elements", 5, AT(qp_bscale_row, elems_flushed_frac)},
    {"elems_saturated_frac", F64, "", "saturated elements / elements", 5, AT(qp_bscale_row, elems_saturated_frac)},
    {"block_dynamic_range_max_log2", F64, "", "max over blocks of log2(block amax / smallest non-zero |x| of the "
     "block) (TE's max_blockwise_dynamic_range)", 5, AT(qp_bscale_row, dynamic_range_max_log2)},
};

static const qp_runcol BSHIST[] = {
    {"step", I64, "", "as in `/quant/block_scales`", 5, AT(qp_bshist_row, step)},
    {"layer", I64, "", "as in `/quant/block_scales`", 5, AT(qp_bshist_row, layer)},
    {"gemm", STR(32), "", "as in `/quant/block_scales`", 5, AT(qp_bshist_row, gemm)},
    {"operand", STR(16), "", "as in `/quant/block_scales`", 5, AT(qp_bshist_row, operand)},
    {"pass", STR(16), "", "as in `/quant/block_scales`", 5, AT(qp_bshist_row, pass)},
    {"bin", I64, "", "the fixed bin of `block_scale_hist` (`qprec.block_scale_bins()`): 0 s = 0, 1 s NaN, k ≥ 2 "
     "floor(log2 s) = k − 151; one row per non-empty bin", 5, AT(qp_bshist_row, bin)},
    {"count", I64, "", "blocks in the bin (> 0)", 5, AT(qp_bshist_row, count)},
};

#define SET(name, path, table, cols, chunk) {name, path, table, cols, (int)(sizeof cols / sizeof cols[0]), chunk}
const qp_runset qp_runsets[QP_RS_COUNT] = {
    [QP_RS_TRAIN] = SET("train", "/train", 0, TRAIN, 1024),
    [QP_RS_EVAL] = SET("eval", "/eval", 0, EVAL, 256),
    [QP_RS_QERR] = SET("quant_error", "/quant/error", 1, QERR, 1024),
    [QP_RS_RECALIB] = SET("events", "/events/recalib", 1, RECALIB, 256),
    [QP_RS_DIVERGENCE] = SET("divergence", "/events/divergence", 1, DIVERGENCE, 64),
    [QP_RS_STATUS] = SET("status", "/status", 1, STATUS, 64),
    [QP_RS_OUTLIERS] = SET("quant_outliers", "/quant/outliers", 1, OUTLIERS, 256),
    [QP_RS_BSCALE] = SET("block_scales", "/quant/block_scales", 1, BSCALE, 64), /* small chunks: the writer reserves
                                                                                two of every table ahead of each write */
    [QP_RS_BSHIST] = SET("block_scale_hist", "/quant/block_scale_hist", 1, BSHIST, 256),
};
_Static_assert(sizeof qp_runsets / sizeof qp_runsets[0] == QP_RS_COUNT, "a dataset per qp_runset_id");

const qp_phase_info qp_phases[QP_PHASE_COUNT] = {
    [QP_PHASE_GEMM] = {"gemm_ms", "GEMM"},
    [QP_PHASE_QUANT] = {"quant_ms", "quantization"},
    [QP_PHASE_ATTN] = {"attn_ms", "attention"},
    [QP_PHASE_ROWOPS] = {"rowops_ms", "row ops"},
    [QP_PHASE_OPTIM] = {"optim_ms", "optimizer"},
    [QP_PHASE_DATA] = {"data_wait_ms", "data wait"},
    [QP_PHASE_COMM] = {"comm_ms", "communication"},
};
_Static_assert(sizeof qp_phases / sizeof qp_phases[0] == QP_PHASE_COUNT, "a column per phase");

const qp_runcol *qp_runcol_find(qp_runset_id set, const char *name)
{
    if ((unsigned)set >= QP_RS_COUNT || !name) return NULL;
    const qp_runset *s = &qp_runsets[set];
    for (int i = 0; i < s->ncols; i++)
        if (!strcmp(s->cols[i].name, name)) return &s->cols[i];
    return NULL;
}

const char *qp_runcol_dataset(qp_runset_id set, const char *name, char *buf, size_t len)
{
    const qp_runset *s = &qp_runsets[set];
    if (s->table) snprintf(buf, len, "%s", s->path);
    else snprintf(buf, len, "%s/%s", s->path, name);
    return buf;
}

const char *qp_runcol_type_name(const qp_runcol *c, char *buf, size_t len)
{
    switch (c->kind) {
    case QP_RC_I64: snprintf(buf, len, "int64"); break;
    case QP_RC_U64: snprintf(buf, len, "uint64"); break;
    case QP_RC_F64: snprintf(buf, len, "float64"); break;
    case QP_RC_STR: snprintf(buf, len, "S%d%s", c->width, c->cut ? ", *cut*" : ""); break;
    }
    return buf;
}

int qp_runschema_check_version(const char *attr, const char *path, const char *tool, int *version, char *err,
                               size_t errlen)
{
    *version = 1;
    if (!attr) return 0;
    char *end = NULL;
    const long v = strtol(attr, &end, 10);
    if (end == attr || *end || v < 1) {
        snprintf(err, errlen, "%s: root attribute %s is '%.40s', not a schema version", path, QP_RUNFILE_SCHEMA_ATTR,
                 attr);
        return -1;
    }
    if (v > QP_RUNFILE_SCHEMA) {
        snprintf(err, errlen, "%s: run file schema version %ld is newer than this %s reads (1 to %d); use a newer qprec",
                 path, v, tool, QP_RUNFILE_SCHEMA);
        return -1;
    }
    *version = (int)v;
    return 0;
}

/* Markdown cell text: a '|' would end the cell. */
static void md_cell(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fputc('\\', out);
        fputc(*s, out);
    }
}

void qp_runschema_markdown(qp_runset_id set, FILE *out)
{
    const qp_runset *s = &qp_runsets[set];
    fprintf(out, "| %s | type | unit | since | meaning |\n|---|---|---|---|---|\n", s->table ? "column" : "dataset");
    for (int i = 0; i < s->ncols; i++) {
        const qp_runcol *c = &s->cols[i];
        char t[32];
        fprintf(out, "| `%s` | %s | %s | %d | ", c->name, qp_runcol_type_name(c, t, sizeof t), *c->unit ? c->unit : "–",
                c->since);
        md_cell(out, c->meaning);
        fputs(" |\n", out);
    }
}
