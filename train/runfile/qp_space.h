/* qp_space.h — room on disk before HDF5 writes into it.
 *
 * Owns: making "disk full" and "file too large" (ulimit -f) happen *before*
 * HDF5 writes anything, never in the middle. HDF5 updates a file's superblock
 * (its recorded end of file) and metadata as it allocates; if a data or
 * metadata write then fails for lack of room, the file is left claiming bytes
 * it does not have and no longer opens ("truncated file"), and a failed
 * H5Fclose leaves the library in a state that crashes at exit. So the run file
 * and checkpoint writers reserve the room a write can need first: blocks
 * allocated with fallocate(FALLOC_FL_KEEP_SIZE) (the file's size does not
 * change, so HDF5 and readers see nothing), and the RLIMIT_FSIZE limit
 * checked, since a reservation does not count against it. A file system
 * without fallocate goes unreserved (as before). */
#ifndef QP_SPACE_H
#define QP_SPACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Make sure bytes [0, end) of the open file fd can be written. 0, or -1 with
 * the reason (strerror) in why. */
int qp_space_reserve(int fd, int64_t end, char *why, size_t whylen);
/* Give back what is reserved past the file's end (after the last write). */
void qp_space_release(int fd);

#ifdef __cplusplus
}
#endif
#endif
