/* test_scale_layout.c — the cuBLASLt tiled block-scale layout (kernels/
 * qp_scale_layout.h) against an independent construction.
 *
 * The oracle does not use the offset formula: it builds the tiled buffer the
 * way torchao's to_blocked / the cuBLAS documentation describe it, as a chain
 * of reshapes written out sequentially: pad to (R x C) = (128*nrb x 4*ncb),
 * view as [nrb][128][ncb][4], permute to [nrb][ncb][128][4], view each tile as
 * [4][32][4] (slab, row in slab, column), transpose the first two axes to
 * [32][4][4] and emit in order. Then: spot offsets worked out by hand from the
 * documentation's picture, the inverse map, round trips, zero padding, odd
 * sizes, the 2D (16-row) expansion, and argument checks. */
#include <stdint.h>
#include <stdlib.h>

#include "../qp_test.h"
#include "qp_scale_layout.h"

static void oracle_tiled(const uint8_t *plain, int64_t rows, int64_t cols, uint8_t *out)
{
    const int64_t nrb = (rows + 127) / 128, ncb = (cols + 3) / 4;
    int64_t pos = 0;
    for (int64_t rb = 0; rb < nrb; rb++)
        for (int64_t cb = 0; cb < ncb; cb++)
            for (int64_t in_slab = 0; in_slab < 32; in_slab++)
                for (int64_t slab = 0; slab < 4; slab++)
                    for (int64_t cc = 0; cc < 4; cc++) {
                        const int64_t r = rb * 128 + slab * 32 + in_slab, c = cb * 4 + cc;
                        out[pos++] = (r < rows && c < cols) ? plain[r * cols + c] : 0;
                    }
}

static void check_shape(int64_t rows, int64_t cols, unsigned long long *seed)
{
    const int64_t size = qp_scale_tiled_size(rows, cols);
    CHECK(size == ((rows + 127) / 128) * 128 * ((cols + 3) / 4) * 4, "size %lld for %lldx%lld", (long long)size,
          (long long)rows, (long long)cols);
    uint8_t *plain = malloc((size_t)(rows * cols) + 1), *back = malloc((size_t)(rows * cols) + 1);
    uint8_t *tiled = malloc((size_t)size + 1), *want = malloc((size_t)size + 1);
    /* values 1..255: a zero in the output can then only be padding */
    for (int64_t i = 0; i < rows * cols; i++) plain[i] = (uint8_t)(1 + qp_test_next(seed) % 255);
    memset(tiled, 0xAB, (size_t)size); /* padding must be overwritten with 0 */
    CHECK(qp_scale_swizzle(plain, rows, cols, 1, tiled) == 0, "swizzle %lldx%lld", (long long)rows, (long long)cols);
    oracle_tiled(plain, rows, cols, want);
    CHECK(memcmp(tiled, want, (size_t)size) == 0, "tiled %lldx%lld != oracle", (long long)rows, (long long)cols);
    int64_t nzero = 0;
    for (int64_t i = 0; i < size; i++) nzero += tiled[i] == 0;
    CHECK(nzero == size - rows * cols, "%lldx%lld: %lld zero bytes, want %lld padding", (long long)rows,
          (long long)cols, (long long)nzero, (long long)(size - rows * cols));
    memset(back, 0, (size_t)(rows * cols));
    CHECK(qp_scale_unswizzle(tiled, rows, cols, back) == 0 && memcmp(back, plain, (size_t)(rows * cols)) == 0,
          "round trip %lldx%lld", (long long)rows, (long long)cols);
    /* the inverse map sends every byte to the (r, c) the oracle put there */
    int bad = 0;
    for (int64_t off = 0; off < size; off++) {
        int64_t r, c;
        qp_sl_position(off, cols, &r, &c);
        const int pad = r >= rows || c >= cols;
        if (r < 0 || c < 0 || r >= qp_sl_padded_rows(rows) || c >= qp_sl_padded_cols(cols) ||
            qp_sl_offset(r, c, cols) != off || (!pad && tiled[off] != plain[r * cols + c]) || (pad && tiled[off]))
            bad++;
    }
    CHECK(bad == 0, "%lldx%lld: %d offsets whose inverse is wrong", (long long)rows, (long long)cols, bad);
    free(plain), free(back), free(tiled), free(want);
}

int main(void)
{
    unsigned long long seed = 20261129;

    /* Hand-worked offsets (cols = 8: two tiles per tile row). */
    CHECK(qp_sl_offset(0, 0, 8) == 0, "(0,0)");
    CHECK(qp_sl_offset(0, 3, 8) == 3, "(0,3)");
    CHECK(qp_sl_offset(1, 0, 8) == 16, "(1,0): next 16-byte group");
    CHECK(qp_sl_offset(32, 0, 8) == 4, "(32,0): second slab sits beside row 0");
    CHECK(qp_sl_offset(96, 2, 8) == 14, "(96,2)");
    CHECK(qp_sl_offset(31, 3, 8) == 31 * 16 + 3, "(31,3)");
    CHECK(qp_sl_offset(127, 3, 8) == 511, "(127,3): last byte of the first tile");
    CHECK(qp_sl_offset(0, 4, 8) == 512, "(0,4): next tile along K comes next");
    CHECK(qp_sl_offset(128, 0, 8) == 1024, "(128,0): after both tiles of the first tile row");
    CHECK(qp_sl_offset(128, 0, 5) == 1024, "cols 5 pads to 8");
    CHECK(qp_sl_offset(128, 0, 4) == 512, "cols 4: one tile per tile row");
    CHECK(qp_scale_tiled_size(1, 1) == 512 && qp_scale_tiled_size(128, 4) == 512 &&
              qp_scale_tiled_size(129, 4) == 1024 && qp_scale_tiled_size(128, 5) == 1024 &&
              qp_scale_tiled_size(0, 7) == 0 && qp_scale_tiled_size(7, 0) == 0,
          "padded sizes");

    /* Odd and exact sizes, one and several tiles in each direction. */
    const int64_t rs[] = {1, 2, 31, 32, 33, 127, 128, 129, 200, 256, 300, 513};
    const int64_t cs[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 33, 128};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        for (size_t j = 0; j < sizeof cs / sizeof cs[0]; j++) check_shape(rs[i], cs[j], &seed);

    /* 2D scales (NVFP4 16x16): plain row r/16 supplies row r. */
    {
        const int64_t rows = 150, cols = 6, prow = (rows + 15) / 16;
        uint8_t plain[10 * 6], expanded[150 * 6];
        for (int64_t i = 0; i < prow * cols; i++) plain[i] = (uint8_t)(1 + i);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) expanded[r * cols + c] = plain[(r / 16) * cols + c];
        const int64_t size = qp_scale_tiled_size(rows, cols);
        uint8_t *a = malloc((size_t)size), *b = malloc((size_t)size);
        CHECK(qp_scale_swizzle(plain, rows, cols, 16, a) == 0 && qp_scale_swizzle(expanded, rows, cols, 1, b) == 0 &&
                  memcmp(a, b, (size_t)size) == 0,
              "2D block_rows=16 equals the expanded 1D scales");
        free(a), free(b);
    }

    /* Arguments. */
    uint8_t one = 7, buf[512];
    CHECK(qp_scale_swizzle(&one, -1, 1, 1, buf) == -1, "negative rows");
    CHECK(qp_scale_swizzle(&one, 1, 1, 0, buf) == -1, "block_rows 0");
    CHECK(qp_scale_swizzle(NULL, 1, 1, 1, buf) == -1, "NULL input");
    CHECK(qp_scale_swizzle(NULL, 0, 5, 1, NULL) == 0, "empty is fine");
    CHECK(qp_scale_unswizzle(buf, 1, -1, &one) == -1, "negative cols");
    return qp_test_finish("test_scale_layout");
}
