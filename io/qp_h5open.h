/* qp_h5open.h — how every reader opens an HDF5 file.
 *
 * Owns: the read-side open of run files, summaries, checkpoints and tensor
 * files. HDF5 (1.10.7+) takes a flock() on every open by default; a reader
 * holding the shared lock makes a writer's H5Fcreate/H5Fopen(RDWR) fail with
 * EAGAIN ("Resource temporarily unavailable"), so a `qsweep --summarize`, a
 * `qplot` or a `--status` that reads a run file at the moment its qtrain
 * creates or resumes it would fail that run. Readers therefore open without
 * the lock: a run file's readers rely on SWMR and the writer's flush order,
 * a checkpoint's on its atomic rename, never on the lock. */
#ifndef QP_H5OPEN_H
#define QP_H5OPEN_H

#ifdef __cplusplus
extern "C" {
#endif

/* Opens path read-only without HDF5's file lock. swmr: try a SWMR read
 * first (a file being written), then a plain read (a file in a format older
 * than SWMR needs). Returns the file's hid_t, or a negative value. */
long long qp_h5_open_read(const char *path, int swmr);

#ifdef __cplusplus
}
#endif
#endif
