/* qp_note.h — remarks that are not errors ("run X left out of the gap
 * figure: ..."), one line each on stderr as "qplot: note: ...".
 *
 * Owns: saying each distinct note once per process, so qplot --follow,
 * which redraws the same figures every few seconds, does not repeat it. */
#ifndef QP_NOTE_H
#define QP_NOTE_H

void qp_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
