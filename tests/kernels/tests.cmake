# kernels/ tests: the scale layout (CPU, always) and the cuBLASLt GEMMs (GPU,
# built with nvcc, SKIP without a device).
add_executable(test_scale_layout ${CMAKE_CURRENT_LIST_DIR}/test_scale_layout.c)
target_link_libraries(test_scale_layout PRIVATE qpscalelayout)
add_test(NAME test_scale_layout COMMAND test_scale_layout)
set_tests_properties(test_scale_layout PROPERTIES LABELS "unit")
