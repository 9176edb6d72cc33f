# Tests of io/ (tensor-file readers, HDF5 tables) and of the qerr tool.
# Included from tests/CMakeLists.txt. C tests link qpio; the script tests run
# with QP_PYTHON (Debian's python3, which has numpy and h5py).
set(QERR_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(QP_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR}/../fuzz)

function(qerr_c_test name)
  add_executable(${name} ${QERR_TEST_DIR}/${name}.c)
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})  # qp_test.h
  target_link_libraries(${name} PRIVATE qpio m)
  add_test(NAME qerr_${name} COMMAND ${name})
  set_tests_properties(qerr_${name} PROPERTIES LABELS "unit;io;qerr")
endfunction()

qerr_c_test(test_json)
qerr_c_test(test_safetensors)
qerr_c_test(test_h5table)
qerr_c_test(test_csv)

# The fuzz target's checks, replayed over the seed corpus and saved crashes.
add_executable(fuzz_replay ${QP_FUZZ_DIR}/fuzz_replay.c ${QP_FUZZ_DIR}/fuzz_safetensors.c)
target_link_libraries(fuzz_replay PRIVATE qpio)
add_test(NAME qerr_fuzz_replay
         COMMAND fuzz_replay ${QP_FUZZ_DIR}/corpus_safetensors ${QP_FUZZ_DIR}/crashes_safetensors)
set_tests_properties(qerr_fuzz_replay PROPERTIES LABELS "unit;io;qerr")

add_executable(tensor_dump ${QERR_TEST_DIR}/tensor_dump.c)
target_link_libraries(tensor_dump PRIVATE qpio)

if(QP_PYTHON)
  execute_process(COMMAND ${QP_PYTHON} -c "import numpy, h5py"
                  RESULT_VARIABLE _qerr_py OUTPUT_QUIET ERROR_QUIET)
  if(_qerr_py EQUAL 0)
    add_test(NAME qerr_convert_numpy
             COMMAND ${QP_PYTHON} ${QERR_TEST_DIR}/test_convert.py $<TARGET_FILE:tensor_dump>
                     ${CMAKE_CURRENT_BINARY_DIR}/qerr_convert)
    set_tests_properties(qerr_convert_numpy PROPERTIES LABELS "io;qerr" TIMEOUT 120)
    add_test(NAME qerr_cli
             COMMAND ${QP_PYTHON} ${QERR_TEST_DIR}/test_qerr_cli.py $<TARGET_FILE:qerr>
                     ${CMAKE_CURRENT_BINARY_DIR}/qerr_cli)
    set_tests_properties(qerr_cli PROPERTIES LABELS "cli;qerr" TIMEOUT 300)
  else()
    message(WARNING "${QP_PYTHON} lacks numpy or h5py: qerr_convert_numpy and qerr_cli not added")
  endif()
else()
  message(WARNING "QP_PYTHON not found: qerr script tests not added")
endif()

# libFuzzer: clang only. Parser sources are compiled into the target itself
# so they carry the fuzzer's coverage instrumentation (qpio does not).
if(QP_FUZZ)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    add_executable(fuzz_safetensors ${QP_FUZZ_DIR}/fuzz_safetensors.c ${QPIO_CORE_SOURCES})
    target_include_directories(fuzz_safetensors PRIVATE ${CMAKE_SOURCE_DIR}/io)
    target_compile_options(fuzz_safetensors PRIVATE -fsanitize=fuzzer,address,undefined -g)
    target_link_options(fuzz_safetensors PRIVATE -fsanitize=fuzzer,address,undefined)
    # New inputs go to the build tree (the first corpus directory), never
    # into the committed seeds.
    set(_fz ${CMAKE_CURRENT_BINARY_DIR}/fuzz_safetensors_work)
    file(MAKE_DIRECTORY ${_fz}/corpus ${_fz}/artifacts)
    add_test(NAME qerr_fuzz_safetensors
             COMMAND fuzz_safetensors ${_fz}/corpus ${QP_FUZZ_DIR}/corpus_safetensors
                     -dict=${QP_FUZZ_DIR}/safetensors.dict -max_total_time=20 -max_len=4096
                     -artifact_prefix=${_fz}/artifacts/ -print_final_stats=1)
    set_tests_properties(qerr_fuzz_safetensors PROPERTIES LABELS "fuzz;qerr" TIMEOUT 120)
  else()
    message(WARNING "QP_FUZZ needs clang (CMAKE_C_COMPILER=clang): fuzz_safetensors not built")
  endif()
endif()
