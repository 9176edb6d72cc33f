# Tests of the GPU trainer (kernels/qp_cuda_model*, qp_cuda_linear, train/run/qp_nvml,
# train/run/qp_backend*). Included from tests/CMakeLists.txt.
#   test_cuda_model_math  the shared host/device formulas against the CPU
#                         model's kernels (no GPU needed; label unit)
#   test_nvml             the power sampler against a fake NVML library, and
#                         its one-line reason without NVML (label unit)
#   test_qtrain_device    qtrain --device: bad values and no GPU exit 2 with one
#                         line (SKIP 77 when a GPU is present; label unit)
#   test_cuda_train       20 steps of a small GPT and Llama, fp32 and bf16, CPU vs GPU
#                         losses within 1e-3 relative (label gpu, SKIP 77
#                         without a device)
#   test_cuda_model_kernels  the layer kernels (the GPT's and the Llama's)
#                         against the host formulas, bit for bit (label gpu, SKIP 77)
#   test_no_float_atomics the training path's PTX has no float atomic adds
#                         (label unit; needs nvcc, no GPU)
#   test_device_check     kernels/bench/device_check.sh on stubs: a summary
#                         line per section, the global deadline, <= 8 files in
#                         OUT, exit 77 after nvidia-smi = FAIL (label unit)
set(QP_KTEST_DIR ${CMAKE_CURRENT_LIST_DIR})
if(TARGET qpmodel)
  add_executable(test_cuda_model_math ${QP_KTEST_DIR}/test_cuda_model_math.c)
  target_include_directories(test_cuda_model_math PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/kernels
                             ${QP_TRAIN_INCLUDE_DIRS})
  target_link_libraries(test_cuda_model_math PRIVATE qpmodel m)
  # it includes qp_model_kernels.c, whose static functions pass 64-byte vectors (as train/model/ compiles it)
  target_compile_options(test_cuda_model_math PRIVATE -Wno-psabi)
  if(OpenMP_C_FOUND)
    target_link_libraries(test_cuda_model_math PRIVATE OpenMP::OpenMP_C)
  else()
    target_compile_options(test_cuda_model_math PRIVATE -Wno-unknown-pragmas)
  endif()
  add_test(NAME test_cuda_model_math COMMAND test_cuda_model_math)
  set_tests_properties(test_cuda_model_math PROPERTIES LABELS "unit" ENVIRONMENT "OMP_NUM_THREADS=2")
endif()

if(TARGET qpcudatrain)
  add_executable(test_cuda_train ${QP_KTEST_DIR}/test_cuda_train.c)
  target_include_directories(test_cuda_train PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(test_cuda_train PRIVATE qpcudatrain qpmodel m)
  add_test(NAME test_cuda_train COMMAND test_cuda_train)
  set_tests_properties(test_cuda_train PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77 TIMEOUT 600
                       ENVIRONMENT "OMP_NUM_THREADS=2")
endif()

if(TARGET qtrain AND QP_PYTHON)
  add_test(NAME test_qtrain_device
           COMMAND ${QP_PYTHON} ${QP_KTEST_DIR}/test_qtrain_device.py $<TARGET_FILE:qtrain>
                   ${PROJECT_SOURCE_DIR}/../shared/data/tinyshakespeare.txt ${CMAKE_CURRENT_BINARY_DIR}/qtrain_device)
  set_tests_properties(test_qtrain_device PROPERTIES LABELS "unit;train" TIMEOUT 600)
endif()

# kernels/bench/device_check.sh with a stub nvidia-smi and stub binaries (no GPU needed)
if(QP_PYTHON)
  add_test(NAME test_device_check
           COMMAND bash ${QP_KTEST_DIR}/test_device_check.sh ${QP_PYTHON} ${CMAKE_C_COMPILER}
                   ${CMAKE_CURRENT_BINARY_DIR}/device_check_test)
  set_tests_properties(test_device_check PROPERTIES LABELS "unit" TIMEOUT 600)
endif()

if(TARGET qpnvml)
  add_library(fake_nvml MODULE ${QP_KTEST_DIR}/fake_nvml.c)
  add_executable(test_nvml ${QP_KTEST_DIR}/test_nvml.c)
  target_include_directories(test_nvml PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(test_nvml PRIVATE qpnvml m)
  add_dependencies(test_nvml fake_nvml)
  add_test(NAME test_nvml COMMAND test_nvml $<TARGET_FILE:fake_nvml>)
  set_tests_properties(test_nvml PROPERTIES LABELS "unit")
endif()

# the GPU dispatch's decisions with host operations against qp_linear (no GPU needed)
if(TARGET qpmodel)
  find_package(Threads REQUIRED)
  add_executable(test_cuda_linear_pass ${QP_KTEST_DIR}/test_cuda_linear_pass.c)
  target_include_directories(test_cuda_linear_pass PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/kernels)
  target_link_libraries(test_cuda_linear_pass PRIVATE qpmodel qpscalelayout m Threads::Threads)
  add_test(NAME test_cuda_linear_pass COMMAND test_cuda_linear_pass)
  # passive OpenMP waits: the two data-parallel "ranks" are threads that block in
  # a barrier, and spinning workers would starve them on a small machine
  set_tests_properties(test_cuda_linear_pass PROPERTIES LABELS "unit"
                       ENVIRONMENT "OMP_NUM_THREADS=2;OMP_WAIT_POLICY=passive")
endif()

# the model's layer kernels against the host formulas, bit for bit (label gpu, SKIP 77)
if(TARGET qpcudatrain)
  add_executable(test_cuda_model_kernels ${QP_KTEST_DIR}/test_cuda_model_kernels.cu)
  target_include_directories(test_cuda_model_kernels PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_cuda_model_kernels PRIVATE qpcudatrain)
  target_compile_options(test_cuda_model_kernels PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-fmad=false>)
  add_test(NAME test_cuda_model_kernels COMMAND test_cuda_model_kernels)
  set_tests_properties(test_cuda_model_kernels PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)
  # no floating-point atomics in the training path's CUDA code (PTX, no GPU needed)
  list(TRANSFORM QP_TRAIN_INCLUDE_DIRS PREPEND -I OUTPUT_VARIABLE _qp_train_includes)
  add_test(NAME test_no_float_atomics
           COMMAND bash ${QP_KTEST_DIR}/check_float_atomics.sh ${CMAKE_CUDA_COMPILER}
                   ${CMAKE_CURRENT_BINARY_DIR}/float_atomics -arch=compute_90 -I${PROJECT_SOURCE_DIR}/kernels
                   ${_qp_train_includes} -I${PROJECT_SOURCE_DIR}/quant -I${PROJECT_SOURCE_DIR}/io --
                   ${PROJECT_SOURCE_DIR}/kernels/qp_cuda_model.cu ${PROJECT_SOURCE_DIR}/kernels/qp_cuda_llama.cu
                   ${PROJECT_SOURCE_DIR}/kernels/qp_cuda_linear.cu
                   ${PROJECT_SOURCE_DIR}/kernels/qp_cuda_quant.cu ${PROJECT_SOURCE_DIR}/kernels/qp_cuda_rht.cu
                   ${PROJECT_SOURCE_DIR}/kernels/qp_cublaslt.cu)
  set_tests_properties(test_no_float_atomics PROPERTIES LABELS "unit")
endif()

# the GPU dispatch's native GEMMs (fp8, mxfp8, nvfp4) against its emulated path (label gpu, SKIP 77)
if(TARGET qpcudatrain)
  add_executable(test_cuda_native ${QP_KTEST_DIR}/test_cuda_native.cu)
  target_include_directories(test_cuda_native PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_cuda_native PRIVATE qpcudatrain)
  add_test(NAME test_cuda_native COMMAND test_cuda_native)
  set_tests_properties(test_cuda_native PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77)
endif()

# kernels/qp_nccl without a GPU: device choice, library version (label unit)
if(TARGET qpnccl)
  add_executable(test_nccl ${QP_KTEST_DIR}/test_nccl.c)
  target_include_directories(test_nccl PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_nccl PRIVATE qpnccl)
  add_test(NAME test_nccl COMMAND test_nccl)
  set_tests_properties(test_nccl PROPERTIES LABELS "unit")
endif()
