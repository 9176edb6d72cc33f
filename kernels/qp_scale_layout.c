/* qp_scale_layout.c — plain <-> cuBLASLt tiled block scales (qp_scale_layout.h). */
#include "qp_scale_layout.h"

#include <string.h>

int64_t qp_scale_tiled_size(int64_t rows, int64_t cols)
{
    if (rows <= 0 || cols <= 0) return 0;
    return qp_sl_padded_rows(rows) * qp_sl_padded_cols(cols);
}

int qp_scale_swizzle(const uint8_t *plain, int64_t rows, int64_t cols, int block_rows, uint8_t *tiled)
{
    if (rows < 0 || cols < 0 || block_rows < 1 || (rows && cols && (!plain || !tiled))) return -1;
    const int64_t size = qp_scale_tiled_size(rows, cols);
    if (size == 0) return 0;
    memset(tiled, 0, (size_t)size);
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *src = plain + (r / block_rows) * cols;
        for (int64_t c = 0; c < cols; c++) tiled[qp_sl_offset(r, c, cols)] = src[c];
    }
    return 0;
}

int qp_scale_unswizzle(const uint8_t *tiled, int64_t rows, int64_t cols, uint8_t *plain)
{
    if (rows < 0 || cols < 0 || (rows && cols && (!plain || !tiled))) return -1;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) plain[r * cols + c] = tiled[qp_sl_offset(r, c, cols)];
    return 0;
}
