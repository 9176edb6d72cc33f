/* qs_keys.c — key tables and the lines they read (see qs_keys.h). */
#include "qs_keys.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "qp_cli.h"

int qs_fail(const qs_where *w, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(w->err, w->errlen, "%s:%d: %s", w->path, line, msg);
    return -1;
}

char *qs_trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) *--end = '\0';
    return s;
}

void qs_cut_comment(char *s)
{
    for (char *c = s; *c; c++)
        if ((*c == '#' || *c == ';') && (c == s || c[-1] == ' ' || c[-1] == '\t')) {
            *c = '\0';
            return;
        }
}

int qs_line(const qs_where *w, int line, char *raw, char **key, char **value)
{
    qs_cut_comment(raw);
    char *s = qs_trim(raw), *mark = strchr(s, *s == '[' ? ']' : '=');
    if (!*s) return 0;
    if (*s == '[' && (!mark || qs_trim(mark + 1)[0])) return qs_fail(w, line, "a section header is '[name]' alone on its line");
    if (!mark) return qs_fail(w, line, "expected 'key = value', '[section]' or a comment, not '%s'", s);
    *mark = '\0';
    *key = qs_trim(s + (*s == '['));
    if (*s == '[') return 1;
    *value = qs_trim(mark + 1);
    return **key ? 2 : qs_fail(w, line, "missing key before '='");
}

char *qs_field(char **cur)
{
    char *f = *cur, *comma = f ? strchr(f, ',') : NULL;
    if (comma) *comma = '\0';
    *cur = comma ? comma + 1 : NULL;
    return f ? qs_trim(f) : NULL;
}

void qs_bars_to_commas(char *s)
{
    for (; *s; s++)
        if (*s == '|') *s = ',';
}

/* a value k refuses, worded as qp_cli words a command-line option's: "k expects ..., not 'v'" */
static int bad_value(const qs_where *w, int line, const qs_key *k, const char *v, const char *cli)
{
    if (k->kind == QS_KEY_ENUM) return qs_fail(w, line, "%s expects %s, not '%s'", k->name, k->help, v);
    return k->help ? qs_fail(w, line, "%s (%s)", cli, k->help) : qs_fail(w, line, "%s", cli);
}

int qs_keys_set(const qs_where *w, const qs_section *s, int *seen, void *dst, int line, const char *key, char *value)
{
    char name[64], valid[512] = "";
    snprintf(name, sizeof name, "%s", key);
    for (char *c = name; *c; c++)
        if (*c == '-') *c = '_';
    int i = 0;
    while (i < s->nkeys && strcmp(s->keys[i].name, name)) i++;
    if (i == s->nkeys) {
        for (int j = 0; j < s->nkeys; j++)
            snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s%s", j ? ", " : "", s->keys[j].name);
        return qs_fail(w, line, "unknown key '%s' in [%s] (valid: %s)", key, s->name, valid);
    }
    const qs_key *k = &s->keys[i];
    if (seen[i])
        return qs_fail(w, line, "'%s' set twice in [%s] (first at line %d)", k->name, s->name, seen[i]);
    seen[i] = line;
    if (!*value) return qs_fail(w, line, "'%s' has no value", k->name);
    char *field = (char *)dst + k->offset, msg[256];
    switch (k->kind) {
    case QS_KEY_INT: {
        long long v;
        if (qp_cli_int(k->name, value, (long long)k->lo, (long long)k->hi, &v, msg, sizeof msg))
            return bad_value(w, line, k, value, msg);
        *(int *)(void *)field = (int)v;
        return 0;
    }
    case QS_KEY_NUM:
        if (qp_cli_num(k->name, value, k->lo, k->hi, true, false, (double *)(void *)field, msg, sizeof msg))
            return bad_value(w, line, k, value, msg);
        return 0;
    case QS_KEY_ENUM:
        for (int v = k->first; v < k->count; v++)
            if (!strcmp(value, k->names[v])) {
                *(int *)(void *)field = v;
                return 0;
            }
        return bad_value(w, line, k, value, "");
    case QS_KEY_FN: return k->set(w, line, k, value, dst);
    }
    return qs_fail(w, line, "internal: [%s] key kind", s->name);
}
