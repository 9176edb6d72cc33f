# Tests of the GPU trainer (kernels/qp_cuda_model*, qp_cuda_linear, qp_nvml,
# train/qp_backend*). Included from tests/CMakeLists.txt.
#   test_cuda_model_math  the shared host/device formulas against the CPU
#                         model's kernels (no GPU needed; label unit)
#   test_nvml             the power sampler against a fake NVML library, and
#                         its one-line reason without NVML (label unit)
#   test_qtrain_device    qtrain --device: bad values and no GPU exit 2 with one
#                         line (SKIP 77 when a GPU is present; label unit)
#   test_cuda_train       20 steps of a small model, fp32 and bf16, CPU vs GPU
#                         losses within 1e-3 relative (label gpu, SKIP 77
#                         without a device)
set(QP_KTEST_DIR ${CMAKE_CURRENT_LIST_DIR})
if(TARGET qpmodel)
  add_executable(test_cuda_model_math ${QP_KTEST_DIR}/test_cuda_model_math.c)
  target_include_directories(test_cuda_model_math PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/kernels
                             ${PROJECT_SOURCE_DIR}/train)
  target_link_libraries(test_cuda_model_math PRIVATE qpmodel m)
  if(OpenMP_C_FOUND)
    target_link_libraries(test_cuda_model_math PRIVATE OpenMP::OpenMP_C)
  else()
    target_compile_options(test_cuda_model_math PRIVATE -Wno-unknown-pragmas)
  endif()
  add_test(NAME test_cuda_model_math COMMAND test_cuda_model_math)
  set_tests_properties(test_cuda_model_math PROPERTIES LABELS "unit" ENVIRONMENT "OMP_NUM_THREADS=2")
endif()
