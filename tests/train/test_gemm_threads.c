/* test_gemm_threads.c — the trainer's GEMMs (train/precision/qp_gemm.c, oneDNN) give
 * bit-identical products whatever the number of OpenMP threads, which is
 * what lets qtrain choose its thread count at run time (--threads auto,
 * train/run/qp_omp.h) without changing a run's results: its own kernels reduce in
 * a fixed order over fixed blocks; this checks the library it does not own.
 *
 * For each shape — the products of the configurations the README measures
 * (the tiny sharing model, nanoGPT's baby, llm.c's small, the GPT-2 124M
 * layer at B4 T64, its LM head) and ones where a library would be tempted to
 * split the contraction among threads (K much larger than M x N) — and both
 * kernels (BF16 operands with FP32 accumulation, FP32), every transpose
 * combination the trainer uses, plain and accumulating, a product is
 * computed by a fresh engine (oneDNN fixes its partition when it creates a
 * primitive) with 1 thread and compared bit for bit with 2, 3 and 4. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_gemm.h"

typedef struct {
    int M, N, K;
    const char *what;
} shape;

static const shape SHAPES[] = {
    {512, 192, 64, "tiny qkv"},      {512, 64, 256, "tiny proj"},   {64, 256, 512, "tiny wgrad"},
    {768, 384, 128, "baby qkv"},     {768, 128, 512, "baby proj"},  {128, 512, 768, "baby wgrad"},
    {1024, 1024, 256, "small fc"},   {1024, 256, 1024, "small proj"}, {256, 1024, 1024, "small wgrad"},
    {256, 2304, 768, "gpt2 qkv"},    {256, 768, 3072, "gpt2 proj"}, {768, 3072, 256, "gpt2 wgrad"},
    {256, 8192, 768, "gpt2 lm head part"}, {16, 16, 65536, "long K"}, {64, 32, 16384, "long K 2"},
    {1, 1, 4096, "one dot"},         {37, 53, 1000, "odd"},
};
#define N_SHAPES (sizeof SHAPES / sizeof SHAPES[0])

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static float bf16_value(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    uint32_t u = (uint32_t)(rng >> 32) & 0xFFFF0000u; /* a BF16 value: low half zero */
    u = (u & 0x807F0000u) | ((uint32_t)(120 + (rng >> 8) % 14) << 23); /* magnitudes 2^-7 .. 2^6 */
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int product(const shape *s, const float *A, int a_t, const float *B, int b_t, float *C, int acc, int bf16,
                   int threads)
{
    char err[256];
    omp_set_num_threads(threads);
    setenv("QP_GEMM", bf16 ? "bf16" : "f32", 1); /* each kernel, whichever auto would choose here */
    qp_gemm *g = qp_gemm_create(err, sizeof err);
    unsetenv("QP_GEMM");
    if (!g) {
        fprintf(stderr, "qp_gemm_create: %s\n", err);
        return -1;
    }
    const int rc = qp_gemm_run(g, A, a_t, B, b_t, C, s->M, s->N, s->K, 0.75f, acc, bf16);
    if (rc) fprintf(stderr, "qp_gemm_run: %s\n", qp_gemm_error(g));
    qp_gemm_destroy(g);
    return rc;
}

int main(void)
{
    int failures = 0, checks = 0;
    for (size_t i = 0; i < N_SHAPES; i++) {
        const shape *s = &SHAPES[i];
        const size_t na = (size_t)s->M * s->K, nb = (size_t)s->N * s->K, nc = (size_t)s->M * s->N;
        float *A = malloc(na * 4), *B = malloc(nb * 4), *C0 = malloc(nc * 4), *C1 = malloc(nc * 4), *D = malloc(nc * 4);
        if (!A || !B || !C0 || !C1 || !D) return fprintf(stderr, "out of memory\n"), 1;
        for (size_t k = 0; k < na; k++) A[k] = bf16_value();
        for (size_t k = 0; k < nb; k++) B[k] = bf16_value();
        for (size_t k = 0; k < nc; k++) D[k] = bf16_value();
        for (int variant = 0; variant < 8; variant++) {
            const int a_t = variant & 1, b_t = (variant >> 1) & 1, acc = variant >> 2;
            for (int bf16 = 0; bf16 < 2; bf16++) {
                memcpy(C0, D, nc * 4);
                if (product(s, A, a_t, B, b_t, C0, acc, bf16, 1)) return 1;
                for (int t = 2; t <= 4; t++) {
                    memcpy(C1, D, nc * 4);
                    if (product(s, A, a_t, B, b_t, C1, acc, bf16, t)) return 1;
                    checks++;
                    if (memcmp(C0, C1, nc * 4)) {
                        size_t k = 0;
                        while (C0[k] == C1[k]) k++;
                        printf("FAIL %-18s M%d N%d K%d a_t%d b_t%d acc%d %s: %d threads differ from 1 at %zu "
                               "(%.9g vs %.9g)\n",
                               s->what, s->M, s->N, s->K, a_t, b_t, acc, bf16 ? "bf16" : "f32", t, k, C1[k], C0[k]);
                        failures++;
                    }
                }
            }
        }
        free(A), free(B), free(C0), free(C1), free(D);
    }
    printf("test_gemm_threads: %d of %d products bit-identical to the 1-thread product\n", checks - failures, checks);
    return failures != 0;
}
