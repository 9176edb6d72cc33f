// test_qcore_nvcc.cu — test_qcore.c compiled by nvcc: the same checks with
// qp_cuda_qcore.h seen as CUDA C++ (__host__ __device__ functions, the host
// side of the kernels' translation units). Built only when nvcc is found.
#include "test_qcore.c"
