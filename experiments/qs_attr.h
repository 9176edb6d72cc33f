/* qs_attr.h — the recipe of a per-layer attribution run, written by qsweep
 * (qs_grid.h, [sweep] attribute = blocks) and recognized by qplot, which
 * leaves such runs out of a sweep's figures.
 *
 * Owns: the text "R,~L<i>=B" — block i in recipe R's plan, every other
 * block in the baseline B's format (B bf16 or fp32; docs/recipes.md). Pure
 * string functions, no dependencies: both tools compile this file. */
#ifndef QS_ATTR_H
#define QS_ATTR_H

#include <stddef.h>

/* "R,~L<block>=B" into buf. Returns 0, or -1 when it does not fit in len
 * bytes. */
int qs_attr_recipe(const char *recipe, const char *baseline, int block, char *buf, size_t len);
/* The block an attribution recipe gives its parent's plan (a recipe ending
 * in ",~L<i>=bf16" or ",~L<i>=fp32"), or -1 for any other recipe. */
int qs_attr_block(const char *recipe);

#endif
