/* qp_version.c — qp_version() (see qp_version.h). */
#include "qp_version.h"

const char *qp_version(void) { return QP_VERSION; }
