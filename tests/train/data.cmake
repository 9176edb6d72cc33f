# Tests of train/run/qp_data (token files, batches, the prefetching loader).
# Included from tests/CMakeLists.txt; a no-op until the qpdata library exists.
# The corpus check in test_data_batch uses ../shared/data/tinyshakespeare.txt
# beside the repository when present and says so when it skips it.
if(TARGET qpdata)
  set(QP_DATA_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

  function(qp_data_test name)
    add_executable(${name} ${QP_DATA_TEST_DIR}/${name}.c)
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${QP_DATA_TEST_DIR})  # qp_test.h
    target_link_libraries(${name} PRIVATE qpdata m)
  endfunction()

  qp_data_test(test_data_batch)
  target_compile_definitions(test_data_batch PRIVATE
                             QP_DATA_CORPUS="${PROJECT_SOURCE_DIR}/../shared/data/tinyshakespeare.txt")
  qp_data_test(test_data_shard)
  qp_data_test(test_data_loader)
  add_test(NAME data_batch COMMAND test_data_batch)
  add_test(NAME data_shard COMMAND test_data_shard)
  add_test(NAME data_loader COMMAND test_data_loader)
  set_tests_properties(data_batch data_shard data_loader PROPERTIES LABELS "unit;data" TIMEOUT 180)

  # A shard written by numpy, read back: needs Debian's python3 with numpy.
  qp_data_test(test_data_pyshard)
  set(_qp_data_numpy 1)
  if(QP_PYTHON)
    execute_process(COMMAND ${QP_PYTHON} -c "import numpy" RESULT_VARIABLE _qp_data_numpy
                    OUTPUT_QUIET ERROR_QUIET)
  endif()
  if(_qp_data_numpy EQUAL 0)
    add_test(NAME data_pyshard
             COMMAND ${QP_PYTHON} ${QP_DATA_TEST_DIR}/test_data_pyshard.py $<TARGET_FILE:test_data_pyshard>
                     ${CMAKE_CURRENT_BINARY_DIR}/data_pyshard)
    set_tests_properties(data_pyshard PROPERTIES LABELS "unit;data" TIMEOUT 120)
  else()
    message(WARNING "no python3 with numpy: data_pyshard not added")
  endif()
endif()
