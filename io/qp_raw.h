/* qp_raw.h — headerless little-endian float32 files ("--raw f32:ROWSxCOLS FILE").
 *
 * Owns: the raw spec syntax and the exact-size rule: a raw file has no header
 * to check, so its size must be exactly ROWS*COLS*4 bytes, or it is rejected
 * (a wrong shape would otherwise be read silently). */
#ifndef QP_RAW_H
#define QP_RAW_H

#include <stddef.h>
#include <stdint.h>

#include "qp_tensor_file.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parse "f32:ROWSxCOLS" (ROWS, COLS positive decimal integers whose product
 * times 4 fits in int64). */
int qp_raw_parse_spec(const char *spec, int64_t *rows, int64_t *cols, char *err, size_t errlen);

/* Append the file as one rows x cols F32 tensor named name. */
int qp_raw_read(const char *path, const char *name, int64_t rows, int64_t cols,
                qp_tensor_list *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
