/* qs_lock.h — one qsweep per sweep folder.
 *
 * Owns: DIR/.qsweep.lock: an flock(2) held for as long as the qsweep that
 * took it lives (the kernel drops it when the process dies, so a crash never
 * leaves a stale lock), with the holder's pid written inside so the next one
 * can say who holds it. The descriptor is close-on-exec: runs do not hold it. */
#ifndef QS_LOCK_H
#define QS_LOCK_H

#include <stddef.h>

/* Returns the lock's descriptor (keep it open), -1 if another process holds
 * it (err names its pid), -2 on any other failure (err says what). */
int qs_lock_take(const char *dir, char *err, size_t errlen);

#endif
