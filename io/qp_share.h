/* qp_share.h — where an installed qprec keeps its data: share/qprec/ beside
 * the folder of the running executable.
 *
 * Owns: the one rule every tool uses to find its read-only files (qplot's
 * gnuplot scripts, the experiment files, the examples): the executable's own
 * path (/proc/self/exe, symbolic links resolved) with its last two parts
 * replaced by share/qprec, so PREFIX/bin/qplot reads PREFIX/share/qprec/.
 * Nothing is compiled in: a prefix can be moved or copied whole, and the
 * build tree is laid out the same way (build/bin/qplot reads
 * build/share/qprec/, which the build fills), so a tool never needs the
 * source tree. */
#ifndef QP_SHARE_H
#define QP_SHARE_H

#include <stddef.h>

/* buf = the folder of the running executable (/proc/self/exe, symbolic links
 * resolved): where qsweep finds qtrain and qtrain its CUDA module. Returns 0,
 * or -1 (buf holds the reason) when the path is unreadable or does not fit. */
int qp_exe_dir(char *buf, size_t len);

/* buf = PREFIX/share/qprec/sub (sub may be "" for the folder itself), where
 * PREFIX is the folder above the running executable's folder. Returns 0, or
 * -1 (buf holds the reason) when the executable's path is unreadable or the
 * result does not fit. */
int qp_share_path(const char *sub, char *buf, size_t len);

#endif
