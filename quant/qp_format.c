/* qp_format.c — qp_core.h's codecs compiled once, out of line (see
 * qp_format.h: a reference for other compilers' builds of the same rules). */
#include "qp_format.h"

uint32_t qp_lib_encode_elem(qp_elem e, float x, int sr, uint32_t r) { return qp_encode_elem(e, x, sr, r); }
float qp_lib_decode_elem(qp_elem e, uint32_t code) { return qp_decode_elem(e, code); }
int qp_lib_floor_log2(float x) { return qp_floor_log2(x); }
uint32_t qp_lib_rng_u32(uint64_t seed, uint64_t stream, uint64_t i) { return qp_rng_u32(seed, stream, i); }

uint32_t qp_lib_scale_code(qp_block_scale kind, float x, int ceil)
{
    switch (kind) {
    case QP_SCALE_UE4M3: return qp_f32_to_ue4m3(x);
    case QP_SCALE_E8M0: return ceil ? qp_f32_to_e8m0_ceil(x) : qp_f32_to_e8m0(x);
    case QP_SCALE_F32: return qp_f32_bits(x);
    case QP_SCALE_NONE:
    case QP_SCALE_TENSOR:
    case QP_SCALE_COUNT: break;
    }
    return 0;
}

float qp_lib_scale_value(qp_block_scale kind, uint8_t code)
{
    const uint8_t one[4] = {code, 0, 0, 0};
    return qp_block_scale_decode(kind, one);
}
