/* qp_train_args.c — qtrain's command line (see qp_train_args.h). */
#include "qp_train_args.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_gemm.h"
#include "qp_model.h"
#include "qp_recipe.h"
#include "qp_train_options.h"

void qp_train_usage(FILE *f)
{
    qp_train_opts d;
    qp_train_opts_default(&d);
    fprintf(f,
            "usage: qtrain --data FILE [options]\n"
            "Train a GPT (nanoGPT/llm.c architecture) or a Llama on the CPU with every linear layer's GEMMs\n"
            "in a chosen precision, logging to an HDF5 run file.\n"
            "  --data FILE        text (byte tokens, vocab 256) or llm.c .bin token shard (GPT-2, 50257)\n"
            "  --recipe R         precision recipe (default %s; grammar and presets: docs/recipes.md):\n"
            "                       a preset: fp32, bf16, fp8 (E4M3 x/w, E5M2 grads, delayed scaling, history\n"
            "                       1024), fp8-current, mxfp8, nvfp4 (NVIDIA's recipe: 1x16 x/dy, 16x16 w, RHT\n"
            "                       on wgrad, SR on grads, last ~15%% blocks BF16), nvfp4-naive, mxfp4;\n"
            "                       Transformer Engine's recipe classes with their defaults: te-nvfp4,\n"
            "                       te-nvfp4-4o6, te-fp8-block, te-mxfp8, te-fp8-current, te-fp8-delayed;\n"
            "                       modifiers after a comma: nvfp4-rht, nvfp4-sr, nvfp4-2d (drop that part),\n"
            "                       bf16-last=N, bf16-first=N, smooth-swiglu (llama: Fishman et al.'s\n"
            "                       Smooth-SwiGLU, the down GEMM's input scaled per channel by a power of\n"
            "                       two before it is quantized, the inverse folded into its weight); rules\n"
            "                       after a comma, applied in order:\n"
            "                       TARGET=FORMAT[:OPT...] or TARGET:OPT[:OPT...], TARGET from blocks (L3,\n"
            "                       L0-2, first2, last8, ~L3), GEMMs (qkv attproj fc fcproj; llama: qkv\n"
            "                       attproj gate up down), passes (fprop dgrad wgrad), operands (x w dy)\n"
            "                       joined by '.' ('+' for a union), OPT: sr rn current delayed hist=N\n"
            "                       amax=max|most-recent rht=N 1d 2d. E.g. bf16,fprop=nvfp4\n"
            "                       fp8-current,w=nvfp4   nvfp4,bf16-first=2,bf16-last=8.\n"
            "                       Only the blocks' linear layers are quantized: embeddings, LM head,\n"
            "                       attention's internal products, norms and the optimizer stay FP32, as in\n"
            "                       the published recipes.\n"
            "  --explain          print --recipe expanded for --layers blocks of --arch (one rule per pass\n"
            "                     x operand x block group, the form the run file records) and exit\n"
            "  --arch A           gpt (default: learned positions, LayerNorm, 4x GELU MLP, biases, tied\n"
            "                     head) or llama (RMSNorm, rotary embeddings, SwiGLU MLP, no biases, untied\n"
            "                     head); the llama's linear layers are qkv, attproj, gate, up, down\n"
            "  --layers L --heads H --dim C --seq T   model (default %d %d %d %d)\n"
            "  --kv-heads N       llama: key/value heads, dividing --heads (grouped-query attention;\n"
            "                     default --heads)\n"
            "  --mlp-hidden N     llama: SwiGLU's hidden width (default 8C/3 rounded up to a multiple of 64)\n"
            "  --batch B          sequences per micro-batch (default %d); under mpirun -np N the global\n"
            "                     batch: each rank takes B/N of the same sequences\n"
            "  --grad-comm P      gradient all-reduce across ranks: fp32 (default), bf16 or fp8 (E4M3,\n"
            "                     per-tensor scale from the global amax); logs grad_comm_rel_err\n"
            "  --grad-comm-ef     error feedback for --grad-comm bf16|fp8 (residual not checkpointed)\n"
            "  --grad-accum N     micro-batches per optimizer step (default 1)\n"
            "  --steps N          optimizer steps (default %lld)\n"
            "  --tokens-per-param R   instead of --steps: train on R tokens per non-embedding parameter,\n"
            "                     steps = round(R x N / (batch x seq x grad-accum)); N = every parameter but\n"
            "                     the token/position embeddings (the tied LM head included). The run file\n"
            "                     records params_nonembedding, tokens_total, tokens_per_param and epochs;\n"
            "                     more than 4 epochs of the training split warns once\n"
            "  --lr X --min-lr X --warmup N   AdamW lr, cosine floor (default lr/10), warm-up steps\n"
            "  --weight-decay X --grad-clip X (default %g, %g; clip 0 = off)\n"
            "  --seed S           weights, batches and stochastic rounding (default %llu)\n"
            "  --data-seed S      batches, stochastic rounding and Hadamard signs from S instead of --seed\n"
            "                     (the initial weights stay --seed's): runs differing only in it measure\n"
            "                     the noise floor\n"
            "  --eval-every N --eval-batches N   validation loss cadence and size in batches (default %lld,\n"
            "                     %lld). The validation set is fixed: consecutive windows from the start of\n"
            "                     the validation split, the same for every seed and recipe\n"
            "  --val-tokens N|all the validation set by size instead: at least N tokens (whole batches, at\n"
            "                     most the split), or the whole validation split\n"
            "  --qerr-every N     log per-layer quantization error, and every block GEMM input's amax,\n"
            "                     kurtosis and top-channel energy share (/quant/outliers), every N steps\n"
            "                     (default %lld, 0 = off)\n"
            "  --ckpt-every N     checkpoint cadence (default %lld; also at the end)\n"
            "  --val-frac X       last fraction of the data used for validation (default %g)\n"
            "  --prefetch N       batches the loader thread prepares ahead (default %d; 0 = none)\n"
            "  --requantize       the backward quantizes X and W again instead of keeping the forward's\n"
            "                     quantized copies: the same results in less memory (a BF16 copy of\n"
            "                     every block GEMM's X and W), a little slower\n"
            "  --threads N|auto   OpenMP threads (default auto: the CPUs of this process's affinity\n"
            "                     mask that nothing else is running on when it starts, at least 1).\n"
            "                     Results are the same bits on any number of threads\n"
            "  --device D         cpu (default) or cuda: the whole step on the GPU (same model, recipes,\n"
            "                     run file and checkpoints; GEMM path and board power in the run file);\n"
            "                     exits 2 without a CUDA device or in a build without CUDA\n"
            "  --out RUN.h5       run file (default %s); checkpoints go to RUN.ckpt.h5\n"
            "  --resume           continue from RUN.ckpt.h5 (bit-identical), or start if there is none\n"
            "  --eval-only --resume-from CKPT   evaluate a checkpoint under --recipe (post-training\n"
            "                     quantization) and log its per-layer errors\n"
            "  --divergence-factor X   loss above X * running minimum counts as divergence (default %g)\n"
            "  --on-divergence A  what a divergence (NaN/Inf loss or gradient, or a loss spike) does:\n"
            "                       stop (default): log it, keep the last checkpoint, exit 3;\n"
            "                       skip-step: drop that step's update (weights, Adam moments and scaling\n"
            "                       states stay as before it), go on with the next batch; NaN/Inf weights\n"
            "                       cannot be skipped past: the run stops as with stop;\n"
            "                       rollback: reload weights, Adam moments, scaling states and the loss\n"
            "                       minimum from the last checkpoint file (RUN.ckpt.h5, else .prev; a fresh\n"
            "                       run writes one of its initial state first) and go on with the next\n"
            "                       step and batch: the step counter, lr schedule and data are not rewound,\n"
            "                       so the batches that led to it are skipped, not replayed (a replay is\n"
            "                       bit-identical and would diverge again). The run stops as with stop\n"
            "                       after 5 skipped steps in a row, or 5 rollbacks with no checkpoint of\n"
            "                       a good step between them.\n"
            "  --inject KIND:WHERE@STEP   debug: put one NaN/Inf in at optimizer step STEP. KIND: nan, inf,\n"
            "                       -inf; WHERE: loss (the step's loss value), grad:TENSOR[IDX] (a gradient\n"
            "                       element after backward), param:TENSOR[IDX] (a weight before forward);\n"
            "                       TENSOR: wte wpe ln1w ln1b qkvw qkvb attprojw attprojb ln2w ln2b fcw fcb\n"
            "                       fcprojw fcprojb lnfw lnfb (llama: wte ln1w qkvw attprojw ln2w gatew upw\n"
            "                       downw lnfw lmhead); IDX: flat element index (default 0). E.g.\n"
            "                       nan:grad:wte@12, inf:param:fcw[5]@30, nan:loss@5. Fires once per\n"
            "                       process (a rollback never reruns a step number, so it gets past it; a\n"
            "                       --resume from before STEP fires it again).\n"
            "  --quiet            no progress line\n"
            "  -h, --help\n"
            "SIGINT/SIGTERM stop at the next step boundary (status \"stopped\", exit 130; --resume continues).\n"
            "Exit: 0 done, 1 runtime error, 2 bad input, 3 diverged, 130 stopped.\n",
            d.recipe, d.layers, d.heads, d.dim, d.seq, d.batch, (long long)d.steps, d.weight_decay, d.grad_clip,
            (unsigned long long)d.seed, (long long)d.eval_every, (long long)d.eval_batches, (long long)d.qerr_every,
            (long long)d.ckpt_every, d.val_frac, d.prefetch, d.out, d.divergence_factor);
}

int qp_train_parse_args(int argc, char **argv, qp_train_opts *o, char *err, size_t errlen)
{
    err[0] = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return QP_ARGS_HELP;
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s' (see --help)", a);
            return QP_ARGS_BAD;
        }
        const qp_train_option *t = qp_train_option_find(a + 2);
        /* the table spells names with '-' only: "--grad_accum" is not a flag */
        if (!t || strchr(a, '_')) {
            snprintf(err, errlen, "unknown option '%s' (see --help)", a);
            return QP_ARGS_BAD;
        }
        if (t->kind != QP_OPT_FLAG && i + 1 >= argc) {
            snprintf(err, errlen, "%s needs a value (see --help)", a);
            return QP_ARGS_BAD;
        }
        const char *v = t->kind == QP_OPT_FLAG ? "" : argv[++i];
        if (qp_train_option_parse(t, a, v, false, o, err, errlen)) return QP_ARGS_BAD;
    }
    const char *isa = getenv("QP_MODEL_ISA");
    if (!qp_gpt_kernel_isa_capped(isa)) {
        snprintf(err, errlen, "QP_MODEL_ISA=%s: not a kernel level (baseline, x86-64-v3 or x86-64-v4)", isa);
        return QP_ARGS_BAD;
    }
    if (qp_gemm_choice_check(err, errlen)) return QP_ARGS_BAD;
    return QP_ARGS_OK;
}

int qp_train_explain(const qp_train_opts *o, FILE *out, char *err, size_t errlen)
{
    if (o->layers < 1 || o->layers > 1024) {
        snprintf(err, errlen, "--layers must be in 1..1024, not %d", o->layers);
        return QP_EXIT_BAD_INPUT;
    }
    if ((unsigned)o->arch >= QP_ARCH_COUNT) {
        snprintf(err, errlen, "--arch out of range");
        return QP_EXIT_BAD_INPUT;
    }
    /* the GEMMs are the architecture's; their shapes do not matter here */
    const unsigned gemms = qp_model_gemm_mask(&(qp_gpt_config){.arch = (qp_arch)o->arch});
    qp_recipe *r = malloc(sizeof *r);
    qp_linear_plan *plans = malloc((size_t)o->layers * QP_BLOCK_GEMMS * sizeof *plans);
    char *text = NULL, desc[1400], names[80];
    int rc = QP_EXIT_BAD_INPUT;
    if (!r || !plans) {
        snprintf(err, errlen, "out of memory");
        rc = QP_EXIT_RUNTIME;
    } else if (!qp_recipe_parse(o->recipe, r, err, errlen) &&
               !qp_recipe_resolve(r, o->layers, gemms, plans, err, errlen)) {
        text = qp_recipe_explain_text(r, plans, o->layers, gemms);
        rc = QP_EXIT_RUNTIME;
        if (!text) {
            snprintf(err, errlen, "out of memory");
        } else {
            qp_gemm_list(gemms, names, sizeof names);
            qp_recipe_describe(r, plans, o->layers, gemms, desc, sizeof desc);
            fprintf(out, "# recipe '%s' for %d blocks of --arch %s (GEMMs %s): one rule per pass x operand x block\n"
                         "# group; joined by ',' they are the recipe spelled out (docs/recipes.md). %s\n%s",
                    r->spec, o->layers, qp_arch_names[o->arch], names, desc, text);
            if (fflush(out) || ferror(out)) snprintf(err, errlen, "writing the expanded recipe failed");
            else rc = QP_EXIT_OK;
        }
    }
    free(text);
    free(plans);
    free(r);
    return rc;
}
