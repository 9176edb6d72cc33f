# kernels/ tests: the scale layout (CPU, always) and the cuBLASLt GEMMs (GPU,
# built with nvcc, SKIP without a device).
add_executable(test_scale_layout ${CMAKE_CURRENT_LIST_DIR}/test_scale_layout.c)
target_link_libraries(test_scale_layout PRIVATE qpscalelayout)
add_test(NAME test_scale_layout COMMAND test_scale_layout)
set_tests_properties(test_scale_layout PROPERTIES LABELS "unit")

if(QP_HAVE_CUDA)
  add_executable(test_cublaslt ${CMAKE_CURRENT_LIST_DIR}/test_cublaslt.cu)
  target_link_libraries(test_cublaslt PRIVATE qpcuda qpquant qpscalelayout)
  add_test(NAME test_cublaslt COMMAND test_cublaslt)
  set_tests_properties(test_cublaslt PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)
endif()
