/* qp_h5err.h — HDF5 failures as one readable line.
 *
 * Owns: turning HDF5's error stack into the reason a user should see, for
 * every module that writes or reads HDF5 (run files, checkpoints, tables). */
#ifndef QP_H5ERR_H
#define QP_H5ERR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Switch HDF5's automatic error printing off (errors are reported as lines). */
void qp_h5_quiet(void);
/* The reason for the HDF5 failure that just happened: the operating system's
 * message where the library recorded one, else its innermost description.
 * Call it before any other HDF5 call, which would clear the error stack.
 * Returns dst. */
const char *qp_h5_why(char *dst, size_t len);
/* Is path an existing regular file with an HDF5 signature? 0, or -1 with
 * "PATH: reason" in err (missing, not a regular file, not an HDF5 file). */
int qp_h5_check_file(const char *path, char *err, size_t errlen);

/* Does the file plausibly hold count elements of elsize bytes of dataset
 * ds's data (ds: its hid_t)? Datasets up to small_ok bytes always pass (unwritten chunks read as fill values);
 * beyond that the stored size must cover them (with a filter, such as
 * compression: 1/1024 of them). So a few bytes of header declaring 2^40
 * elements is refused before anything is allocated. 1 or 0. */
int qp_h5_data_present(long long ds, unsigned long long count, size_t elsize, unsigned long long small_ok);

#ifdef __cplusplus
}
#endif
#endif
