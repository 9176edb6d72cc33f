/* qp_scale_layout.h — block scales in cuBLASLt's tiled ("swizzled") layout.
 *
 * Owns: the map between quant/'s plain block scales (scale_rows x scale_cols,
 * row-major, one byte each; qp_scale_shape) and the layout cuBLASLt reads for
 * CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 (MXFP8) and VEC16_UE4M3 (NVFP4),
 * the "1D block scaling factors layout" of the cuBLAS documentation.
 *
 * The layout. Rows are the operand's outer (non-contraction) dimension, one
 * per matrix row; columns are the blocks along K. The scale matrix is padded
 * with zeros to whole 128-row x 4-column tiles; tiles are stored one after the
 * other, 512 bytes each, row of tiles by row of tiles (the 4-column direction
 * fastest). Inside a tile, row r (0..127) and column c (0..3) sit at
 *     (r % 32) * 16 + (r / 32) * 4 + c
 * i.e. the tile is four 32x4 slabs (rows 0-31, 32-63, ...) interleaved so
 * that the 16 bytes at 16*i hold the 4 scales of rows i, i+32, i+64, i+96.
 * The same map serves both block sizes (32 for MX, 16 for NVFP4): only the
 * number of columns differs. The padding is never read by the GEMM for real
 * elements; it is zero here so that buffers are deterministic.
 *
 * The index map is inline and host/device (QP_SL_HD), shared by the C code
 * (qp_scale_layout.c) and the CUDA kernel (qp_cublaslt.cu). */
#ifndef QP_SCALE_LAYOUT_H
#define QP_SCALE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define QP_SL_HD __host__ __device__ static inline
#else
#define QP_SL_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define QP_SL_TILE_ROWS 128
#define QP_SL_TILE_COLS 4
#define QP_SL_TILE_BYTES 512

/* Padded extents: rows up to a multiple of 128, columns of 4. */
QP_SL_HD int64_t qp_sl_padded_rows(int64_t rows) { return (rows + 127) / 128 * 128; }
QP_SL_HD int64_t qp_sl_padded_cols(int64_t cols) { return (cols + 3) / 4 * 4; }

/* Byte offset of scale (r, c) in the tiled buffer of a matrix with `cols`
 * scale columns. */
QP_SL_HD int64_t qp_sl_offset(int64_t r, int64_t c, int64_t cols)
{
    const int64_t tiles_per_row = (cols + 3) / 4;
    const int64_t tile = (r / 128) * tiles_per_row + c / 4;
    return tile * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
}

/* The inverse: the (r, c) stored at byte `off` (which may be padding, i.e.
 * r >= rows or c >= cols of the unpadded matrix). */
QP_SL_HD void qp_sl_position(int64_t off, int64_t cols, int64_t *r, int64_t *c)
{
    const int64_t tiles_per_row = (cols + 3) / 4;
    const int64_t tile = off / 512, in = off % 512;
    *r = (tile / tiles_per_row) * 128 + ((in % 16) / 4) * 32 + in / 16;
    *c = (tile % tiles_per_row) * 4 + in % 4;
}

/* Bytes of the tiled buffer for a rows x cols scale matrix (0 if either is 0). */
int64_t qp_scale_tiled_size(int64_t rows, int64_t cols);

/* Plain -> tiled. `rows` is the operand's row count (the 128-tile direction);
 * plain scale row r / block_rows supplies row r, so an NVFP4 16x16 (2D) tensor
 * (block_rows = 16, one plain row per 16 rows) expands to the per-row scales
 * cuBLASLt's 1D mode reads; block_rows = 1 for every 1D format. `plain` holds
 * ceil(rows / block_rows) x cols bytes; `tiled` gets qp_scale_tiled_size(rows,
 * cols) bytes, padding zero-filled. Returns 0, or -1 on a bad argument. */
int qp_scale_swizzle(const uint8_t *plain, int64_t rows, int64_t cols, int block_rows, uint8_t *tiled);

/* Tiled -> plain (rows x cols), the inverse for block_rows = 1. */
int qp_scale_unswizzle(const uint8_t *tiled, int64_t rows, int64_t cols, uint8_t *plain);

/* The same swizzle on the GPU (kernels/qp_cublaslt.cu; only in libqpcuda):
 * enqueued on stream (a cudaStream_t, NULL = default), returns 0 or a
 * cudaError_t value. d_tiled gets qp_scale_tiled_size(rows, cols) bytes,
 * padding included (every byte written). */
int qp_cuda_scale_swizzle(const uint8_t *d_plain, int64_t rows, int64_t cols, int block_rows, uint8_t *d_tiled,
                          void *stream);

#ifdef __cplusplus
}
#endif
#endif
