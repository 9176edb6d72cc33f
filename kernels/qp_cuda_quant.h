/* qp_cuda_quant.h — CUDA quantization kernels (the GPU side of quant/).
 *
 * Owns: device-side amax and per-tensor FP8 casting, bit-identical to
 * qp_quantize() for the same input (tests/test_cuda_quant.cu checks it on a
 * GPU and reports SKIP without one). The block formats, cuBLASLt GEMMs and the
 * GPU trainer build on this module. Host-callable, C linkage. */
#ifndef QP_CUDA_QUANT_H
#define QP_CUDA_QUANT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices, 0 when there is no driver or GPU. */
int qp_cuda_device_count(void);

/* Per-tensor current-scaling FP8 of a device array of n floats: amax over
 * finite values, s = fmax/amax (1 if amax is 0), codes[i] = fp8(x[i]*s),
 * *scale_inv = 1/s. e5m2 selects E5M2, else E4M3. Returns 0 or a cudaError_t. */
int qp_cuda_quantize_fp8(const float *d_x, int64_t n, int e5m2, uint8_t *d_codes, float *scale_inv);

#ifdef __cplusplus
}
#endif
#endif
