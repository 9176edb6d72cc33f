/* runschema_md.c — print docs/runfile.md's schema tables from the schema
 * itself (train/runfile/qp_runschema.h), each after the marker the docs put above
 * it: "<!-- schema: PATH -->". test_runfile_compat.py (part docs) requires
 * the docs to hold exactly these blocks. */
#include <stdio.h>

#include "qp_runschema.h"

int main(void)
{
    for (int d = 0; d < QP_RS_COUNT; d++) {
        printf("<!-- schema: %s -->\n", qp_runsets[d].path);
        qp_runschema_markdown((qp_runset_id)d, stdout);
        printf("\n");
    }
    return 0;
}
