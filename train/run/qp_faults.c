/* qp_faults.c — --inject (see qp_faults.h). */
#include "qp_faults.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYNTAX "(KIND:WHERE@STEP: KIND nan|inf|-inf, WHERE loss|grad:TENSOR[IDX]|param:TENSOR[IDX], e.g. nan:grad:wte@12)"

static int parse_nonneg(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 18) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int qp_inject_parse(const char *spec, const char *const *names, int n, qp_inject *inj, char *err, size_t errlen)
{
    memset(inj, 0, sizeof *inj);
    inj->tensor = -1;
    if (!spec || !*spec) return 0;
#define BAD(...) return snprintf(err, errlen, __VA_ARGS__), memset(inj, 0, sizeof *inj), -1
    const char *at = strrchr(spec, '@');
    if (!at) BAD("--inject '%s': no @STEP " SYNTAX, spec);
    if (parse_nonneg(at + 1, strlen(at + 1), &inj->step)) BAD("--inject '%s': step '%s' is not an integer >= 0", spec, at + 1);
    const char *c1 = memchr(spec, ':', (size_t)(at - spec));
    if (!c1) BAD("--inject '%s': no KIND:WHERE " SYNTAX, spec);
    const size_t kl = (size_t)(c1 - spec);
    if (kl == 3 && !strncmp(spec, "nan", 3)) inj->value = NAN;
    else if (kl == 3 && !strncmp(spec, "inf", 3)) inj->value = INFINITY;
    else if (kl == 4 && !strncmp(spec, "-inf", 4)) inj->value = -INFINITY;
    else BAD("--inject '%s': kind '%.*s' is not nan, inf or -inf", spec, (int)kl, spec);
    const char *w = c1 + 1;
    const size_t wl = (size_t)(at - w);
    if (wl == 4 && !strncmp(w, "loss", 4)) {
        inj->where = QP_INJ_LOSS;
        return 0;
    }
    const char *t;
    if (wl > 5 && !strncmp(w, "grad:", 5)) inj->where = QP_INJ_GRAD, t = w + 5;
    else if (wl > 6 && !strncmp(w, "param:", 6)) inj->where = QP_INJ_PARAM, t = w + 6;
    else BAD("--inject '%s': '%.*s' is not loss, grad:TENSOR or param:TENSOR", spec, (int)wl, w);
    size_t tl = (size_t)(at - t);
    const char *br = memchr(t, '[', tl);
    if (br) {
        if (at[-1] != ']' || parse_nonneg(br + 1, (size_t)(at - 1 - (br + 1)), &inj->index))
            BAD("--inject '%s': element index must be [N] with N >= 0", spec);
        tl = (size_t)(br - t);
    }
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == tl && !strncmp(t, names[i], tl)) inj->tensor = i;
    if (inj->tensor < 0) {
        char list[256] = "";
        for (int i = 0; i < n; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
        BAD("--inject '%s': unknown tensor '%.*s' (%s)", spec, (int)tl, t, list);
    }
#undef BAD
    return 0;
}

int qp_inject_check(const qp_inject *inj, const char *const *names, const int64_t *sizes, char *err, size_t errlen)
{
    if ((inj->where == QP_INJ_GRAD || inj->where == QP_INJ_PARAM) && inj->index >= sizes[inj->tensor]) {
        snprintf(err, errlen, "--inject: element %lld is past the end of %s (%lld elements)", (long long)inj->index,
                 names[inj->tensor], (long long)sizes[inj->tensor]);
        return -1;
    }
    return 0;
}

int qp_inject_fire(qp_inject *inj, qp_inject_where where, int64_t step, float *base, const int64_t *sizes,
                   double *loss)
{
    if (inj->fired || inj->where == QP_INJ_NONE || inj->where != where || inj->step != step) return 0;
    inj->fired = 1;
    if (where == QP_INJ_LOSS) {
        *loss = inj->value;
        return 1;
    }
    int64_t off = 0;
    for (int i = 0; i < inj->tensor; i++) off += sizes[i];
    base[off + inj->index] = inj->value;
    return 1;
}
