/* qs_attr.c — attribution recipes (see qs_attr.h). */
#include "qs_attr.h"

#include <stdio.h>
#include <string.h>

static const char *const baselines[] = {"bf16", "fp32"};

int qs_attr_recipe(const char *recipe, const char *baseline, int block, char *buf, size_t len)
{
    const int n = snprintf(buf, len, "%s,~L%d=%s", recipe, block, baseline);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int qs_attr_block(const char *recipe)
{
    const char *comma = strrchr(recipe, ',');
    if (!comma || strncmp(comma, ",~L", 3)) return -1;
    const char *c = comma + 3;
    int block = 0, digits = 0;
    for (; *c >= '0' && *c <= '9' && digits < 5; c++, digits++) block = block * 10 + (*c - '0');
    if (!digits || *c != '=') return -1;
    for (size_t i = 0; i < sizeof baselines / sizeof baselines[0]; i++)
        if (!strcmp(c + 1, baselines[i])) return block;
    return -1;
}
