/* test_nccl.c — what of kernels/qp_nccl runs without a GPU: the device a
 * rank picks (local rank % devices) and the library version. The all-reduce
 * itself is tested by test_qtrain_mpi_cuda on two GPUs. Label unit. */
#include <stdio.h>
#include <string.h>

#include "qp_nccl.h"
#include "qp_test.h"

int main(void)
{
    static const int cases[][3] = {{0, 1, 0}, {1, 1, 0}, {1, 2, 1}, {2, 2, 0}, {5, 4, 1}, {3, 8, 3}, {-1, 2, 0},
                                   {7, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(qp_nccl_pick_device(cases[i][0], cases[i][1]) == cases[i][2], "local rank %d of %d devices: %d",
              cases[i][0], cases[i][1], qp_nccl_pick_device(cases[i][0], cases[i][1]));
    const char *v = qp_nccl_version();
    CHECK(strncmp(v, "NCCL 2.", 7) == 0, "version %s", v);
    printf("%s\n", v);
    return qp_test_finish("test_nccl");
}
