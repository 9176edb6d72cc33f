/* qs_keys.h — a section's `key = value` lines read against a key table.
 *
 * Owns: the key table a section with fixed keys declares ([sweep] and [slurm]
 * of an experiment file, qs_ini.c; [plan] of a plan file, plan/qpl_ini.c) and
 * the one function that reads a line of such a section against it: the key
 * found ('-' read as '_'), refused when unknown (listing the table's keys),
 * given twice or empty, then its value checked and stored by the key's kind.
 * Also the `FILE:LINE: message` error and the line reader both parsers
 * read their lines with, so the two files read alike. */
#ifndef QS_KEYS_H
#define QS_KEYS_H

#include <stddef.h>

typedef struct { const char *path; char *err; size_t errlen; } qs_where; /* errors: "path:line: message" */

int qs_fail(const qs_where *w, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
char *qs_trim(char *s);
/* A comment: a line whose first non-blank is '#' or ';', and the rest of a
 * line from a '#' or ';' that follows a blank (so "x = 1  # note" is x = 1,
 * while a '#' or ';' inside a word stays: "a#b"). */
void qs_cut_comment(char *s);
/* One line of an ini file, its comment cut: 0 blank, 1 a "[name]" header
 * (*key = name), 2 "key = value" (*key, *value trimmed); -1 with w's error
 * when it is none of these. */
int qs_line(const qs_where *w, int line, char *raw, char **key, char **value);
/* The next field of the comma-separated list at *cur, trimmed ("" for an
 * empty one, so "a,,b" can be refused); NULL after the last. */
char *qs_field(char **cur);
/* A recipe as a file writes it: '|' stands for qtrain's ',' (docs/recipes.md). */
void qs_bars_to_commas(char *s);

typedef enum {
    QS_KEY_INT,  /* int in lo..hi */
    QS_KEY_NUM,  /* double in (lo, hi] */
    QS_KEY_ENUM, /* int: the index of the value in names[first..count) */
    QS_KEY_FN,   /* set() checks the value and stores it */
} qs_key_kind;

typedef struct qs_key qs_key;
struct qs_key {
    const char *name;
    qs_key_kind kind;
    size_t offset;                  /* of the field in the struct the section fills */
    size_t size;                    /* QS_KEY_FN: the field's bytes, for its checks */
    double lo, hi;                  /* QS_KEY_INT, QS_KEY_NUM */
    const char *const *names;       /* QS_KEY_ENUM */
    int first, count;
    int (*set)(const qs_where *w, int line, const qs_key *k, char *value, void *dst); /* QS_KEY_FN */
    const char *help;               /* what a value is, in the messages; or NULL */
};

/* Every section words a refusal alike: "unknown key 'k' in [s] (valid: ...)",
 * "'k' set twice in [s] (first at line N)", "'k' has no value", and a bad
 * value as qp_cli words a command-line option's ("k expects ..., not 'v'",
 * HELP in parentheses after a number's range). */
typedef struct {
    const char *name; /* "sweep" */
    const qs_key *keys;
    int nkeys;
} qs_section;

/* One `key = value` line (key and value trimmed) of section s into dst;
 * seen[k] is the line that gave keys[k] (0: none yet). 0, or -1 with w's
 * error. */
int qs_keys_set(const qs_where *w, const qs_section *s, int *seen, void *dst, int line, const char *key, char *value);

#endif
