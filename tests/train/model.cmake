# Tests of train/model/qp_model (the GPT) and train/precision/qp_linear (the precision
# dispatch). Included from tests/CMakeLists.txt; a no-op until qpmodel exists.
#   test_model_torch      the FP32 model's logits, losses and gradients against
#                         a PyTorch GPT (needs Debian's python3 with torch)
#   test_model_gradcheck  every parameter gradient against finite differences
#   test_transpose        the dispatch's transposes (AVX-512 and SSE tiles) against the plain loop
#   test_gemm_recipes     every recipe's GEMMs against quant/'s dequantization
#                         followed by a float64 product
#   test_gemm_threads     the GEMMs bit-identical on 1, 2, 3 and 4 threads
#   test_gemm_choice      QP_GEMM: auto's rule, the CPU facts, the values,
#                         auto's products those of the kernel it names
#   test_recipe           the recipe language: stored preset expansions, the
#                         documented ones (docs/recipes.md), examples, errors
#   test_producer_rounding  the bf16 recipe's GEMM inputs rounded by their
#                         producers: quant/'s bits and statistics, the same step
#   test_smooth_swiglu    Smooth-SwiGLU on a Llama with an injected outlier
#                         channel (the down input's outlier statistics), its
#                         exact fold in fp32; qp_outlier_stats by definition
if(TARGET qpmodel)
  set(QP_MODEL_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

  function(qp_model_exe name)
    add_executable(${name} ${QP_MODEL_TEST_DIR}/${name}.c)
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${QP_MODEL_TEST_DIR})  # qp_test.h, test_model_util.h
    target_link_libraries(${name} PRIVATE qpmodel m)
  endfunction()

  qp_model_exe(test_model_gradcheck)
  add_test(NAME test_model_gradcheck COMMAND test_model_gradcheck)
  qp_model_exe(test_gemm_recipes)
  add_test(NAME test_gemm_recipes COMMAND test_gemm_recipes)
  # the BF16 kernel too, where QP_GEMM=auto runs FP32 (test_gemm_choice)
  add_test(NAME test_gemm_recipes_bf16 COMMAND test_gemm_recipes)
  set_tests_properties(test_gemm_recipes_bf16 PROPERTIES LABELS "unit;model" TIMEOUT 300 ENVIRONMENT "QP_GEMM=bf16")
  qp_model_exe(test_gemm_threads)
  add_test(NAME test_gemm_threads COMMAND test_gemm_threads)
  if(TARGET OpenMP::OpenMP_C)
    target_link_libraries(test_gemm_threads PRIVATE OpenMP::OpenMP_C)
  endif()
  set_tests_properties(test_gemm_threads PROPERTIES LABELS "unit;model" TIMEOUT 300)
  qp_model_exe(test_gemm_choice)
  add_test(NAME test_gemm_choice COMMAND test_gemm_choice)
  set_tests_properties(test_gemm_choice PROPERTIES LABELS "unit;model" TIMEOUT 120)
  qp_model_exe(test_smooth_swiglu)
  add_test(NAME test_smooth_swiglu COMMAND test_smooth_swiglu)
  set_tests_properties(test_smooth_swiglu PROPERTIES LABELS "unit;model" TIMEOUT 120 ENVIRONMENT "OMP_NUM_THREADS=2")
  qp_model_exe(test_transpose)
  add_test(NAME test_transpose COMMAND test_transpose)
  add_test(NAME test_transpose_sse COMMAND test_transpose)
  set_tests_properties(test_transpose test_transpose_sse PROPERTIES LABELS "unit;model" TIMEOUT 60)
  set_tests_properties(test_transpose_sse PROPERTIES ENVIRONMENT "QP_SIMD=scalar")
  qp_model_exe(test_recipe)
  add_test(NAME test_recipe COMMAND test_recipe ${PROJECT_SOURCE_DIR}/docs/recipes.md)
  set_tests_properties(test_model_gradcheck test_gemm_recipes test_recipe PROPERTIES
                       LABELS "unit;model" TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=2")

  # the model kernels' static functions compiled in (a copy of its own):
  # their producer rounding against quant/'s quantization
  qp_model_exe(test_producer_rounding)
  target_include_directories(test_producer_rounding PRIVATE ${PROJECT_SOURCE_DIR}/train)
  if(TARGET OpenMP::OpenMP_C)
    target_link_libraries(test_producer_rounding PRIVATE OpenMP::OpenMP_C)
  endif()
  target_compile_options(test_producer_rounding PRIVATE -Wno-psabi)
  add_test(NAME test_producer_rounding COMMAND test_producer_rounding)
  set_tests_properties(test_producer_rounding PROPERTIES LABELS "unit;model" TIMEOUT 120)

  qp_model_exe(gpt_dump)
  set(_qp_model_torch 1)
  if(QP_PYTHON)
    execute_process(COMMAND ${QP_PYTHON} -c "import numpy, torch" RESULT_VARIABLE _qp_model_torch
                    OUTPUT_QUIET ERROR_QUIET)
  endif()
  if(_qp_model_torch EQUAL 0)
    add_test(NAME test_model_torch
             COMMAND ${QP_PYTHON} ${QP_MODEL_TEST_DIR}/test_model_torch.py $<TARGET_FILE:gpt_dump>
                     ${CMAKE_CURRENT_BINARY_DIR}/model_torch)
    set_tests_properties(test_model_torch PROPERTIES LABELS "unit;model" TIMEOUT 300
                         ENVIRONMENT "OMP_NUM_THREADS=2")
  else()
    message(WARNING "no python3 with numpy and torch: test_model_torch not added")
  endif()
endif()
