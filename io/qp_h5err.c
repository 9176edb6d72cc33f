/* qp_h5err.c — HDF5 failures as one line (see qp_h5err.h). */
#include "qp_h5err.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void qp_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

typedef struct {
    char *dst;
    size_t len;
    int have_os, have_any;
} why_ctx;

static herr_t why_cb(unsigned n, const H5E_error2_t *e, void *p)
{
    (void)n;
    why_ctx *w = p;
    const char *d = e->desc ? e->desc : "";
    const char *m = strstr(d, "error message = '");
    if (m && !w->have_os) {
        m += strlen("error message = '");
        const char *q = strchr(m, '\'');
        snprintf(w->dst, w->len, "%.*s", q ? (int)(q - m) : (int)strlen(m), m);
        w->have_os = w->have_any = 1;
    } else if (!w->have_any && *d) {
        snprintf(w->dst, w->len, "%s", d);
        w->have_any = 1;
    }
    return 0;
}

const char *qp_h5_why(char *dst, size_t len)
{
    why_ctx w = {dst, len, 0, 0};
    snprintf(dst, len, "unknown HDF5 error");
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, why_cb, &w);
    return dst;
}

int qp_h5_check_file(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    if (H5Fis_hdf5(path) <= 0) {
        snprintf(err, errlen, "%s: not an HDF5 file", path);
        return -1;
    }
    return 0;
}

int qp_h5_data_present(long long ds, unsigned long long count, size_t elsize, unsigned long long small_ok)
{
    if (elsize && count > ~0ull / elsize) return 0; /* more bytes than 64 bits count */
    const unsigned long long bytes = count * elsize;
    if (bytes <= small_ok) return 1;
    const unsigned long long stored = H5Dget_storage_size((hid_t)ds);
    const hid_t dcpl = H5Dget_create_plist((hid_t)ds);
    const int filters = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0;
    if (dcpl >= 0) H5Pclose(dcpl);
    return filters > 0 ? stored >= bytes / 1024 : stored >= bytes;
}
