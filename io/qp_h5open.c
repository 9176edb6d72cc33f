#include "qp_h5open.h"

#include <hdf5.h>

long long qp_h5_open_read(const char *path, int swmr)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return -1;
#if H5_VERSION_GE(1, 10, 7)
    H5Pset_file_locking(fapl, 0, 1); /* 1: also where the file system has no flock() */
#endif
    hid_t f = swmr ? H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl) : -1;
    if (f < 0) f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    return f;
}
