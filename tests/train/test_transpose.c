/* test_transpose.c — train/precision/qp_transpose against the plain loop, on shapes
 * with and without whole 64x64 tiles, tiny and tall, on the vector path this
 * CPU takes (run again with QP_SIMD=scalar for the SSE path). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qp_test.h"
#include "qp_transpose.h"

int main(void)
{
    const int shapes[][2] = {{1, 1}, {1, 77}, {64, 64}, {128, 64}, {65, 64}, {64, 129}, {100, 300},
                             {16, 1000}, {3072, 768}, {768, 3072}, {1024, 33}, {17, 16}};
    uint32_t seed = 12345;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const int rows = shapes[k][0], cols = shapes[k][1];
        const size_t n = (size_t)rows * cols;
        float *src = malloc(n * sizeof(float)), *dst = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            uint32_t bits = seed; /* any bit pattern, NaNs included: a transpose only moves them */
            memcpy(&src[i], &bits, 4);
        }
        memset(dst, 0xAB, n * sizeof(float));
        qp_transpose(src, dst, rows, cols); /* src is cols x rows */
        size_t bad = 0;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                bad += memcmp(&dst[(size_t)r * cols + c], &src[(size_t)c * rows + r], 4) != 0;
        CHECK(bad == 0, "%d x %d: %zu elements misplaced", rows, cols, bad);
        free(src), free(dst);
    }
    return qp_test_finish("test_transpose");
}
