/* codec_dump.c — qprec's element and scale codecs by value, for
 * check_mldtypes.py: reads float32 inputs (a raw little-endian file), writes
 * a raw file of, per input, the E4M3, E2M1, E2M3, E3M2 codes and the E8M0
 * codes rounded down and up (six bytes), then the decoded value of every code
 * of E4M3, E2M1, E2M3, E3M2 and E8M0 (5 x 256 float32).
 *   codec_dump IN OUT */
#include <stdio.h>
#include <stdlib.h>

#include "qp_format.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "codec_dump: usage: codec_dump IN OUT\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    if (!in || !out) {
        fprintf(stderr, "codec_dump: cannot open %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    static const qp_elem elems[4] = {QP_ELEM_E4M3, QP_ELEM_E2M1, QP_ELEM_E2M3, QP_ELEM_E3M2};
    float x;
    while (fread(&x, sizeof x, 1, in) == 1) {
        uint8_t c[6];
        for (int k = 0; k < 4; k++) c[k] = (uint8_t)qp_lib_encode_elem(elems[k], x, 0, 0);
        c[4] = (uint8_t)qp_lib_scale_code(QP_SCALE_E8M0, x, 0);
        c[5] = (uint8_t)qp_lib_scale_code(QP_SCALE_E8M0, x, 1);
        if (fwrite(c, 1, 6, out) != 6) return 1;
    }
    for (int k = 0; k < 5; k++)
        for (int code = 0; code < 256; code++) {
            const float v = k < 4 ? qp_lib_decode_elem(elems[k], (uint32_t)code)
                                  : qp_lib_scale_value(QP_SCALE_E8M0, (uint8_t)code);
            if (fwrite(&v, sizeof v, 1, out) != 1) return 1;
        }
    fclose(in);
    return fclose(out) ? 1 : 0;
}
