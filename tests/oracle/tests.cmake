# Independent numpy oracle (tests/oracle): the published quantization formulas
# re-implemented in numpy, checked on hand-computed cases, and compared with
# `qerr --json` on a generated file of realistic transformer tensors.
# Included from tests/CMakeLists.txt; needs QP_PYTHON with numpy.
set(QP_ORACLE_DIR ${CMAKE_CURRENT_LIST_DIR})

if(QP_PYTHON)
  execute_process(COMMAND ${QP_PYTHON} -c "import numpy"
                  RESULT_VARIABLE _qp_oracle_numpy OUTPUT_QUIET ERROR_QUIET)
  if(NOT _qp_oracle_numpy EQUAL 0)
    message(WARNING "${QP_PYTHON} has no numpy: oracle tests not added")
  else()
    add_test(NAME oracle_selftest
             COMMAND ${QP_PYTHON} ${QP_ORACLE_DIR}/ref_formats.py --selftest)
    set_tests_properties(oracle_selftest PROPERTIES LABELS "oracle" TIMEOUT 300)
    # tests/te_row_vectors.h (test_te_parity's nvfp4-row bytes) is what the
    # step-by-step derivation from TE's row-scaled arithmetic gives
    add_test(NAME oracle_te_row_vectors
             COMMAND ${QP_PYTHON} ${QP_ORACLE_DIR}/te_row_vectors.py --check ${QP_ORACLE_DIR}/../te_row_vectors.h)
    set_tests_properties(oracle_te_row_vectors PROPERTIES LABELS "oracle" TIMEOUT 60)

    # E4M3, E2M1, E2M3, E3M2 and E8M0 against ml_dtypes (PyPI; scripts/setup.sh
    # installs it into Debian's python3)
    add_executable(codec_dump ${QP_ORACLE_DIR}/codec_dump.c)
    target_link_libraries(codec_dump PRIVATE qpquant)
    execute_process(COMMAND ${QP_PYTHON} -c "import ml_dtypes"
                    RESULT_VARIABLE _qp_oracle_mldtypes OUTPUT_QUIET ERROR_QUIET)
    if(_qp_oracle_mldtypes EQUAL 0)
      add_test(NAME oracle_mldtypes
               COMMAND ${QP_PYTHON} ${QP_ORACLE_DIR}/check_mldtypes.py $<TARGET_FILE:codec_dump>)
      set_tests_properties(oracle_mldtypes PROPERTIES LABELS "oracle" TIMEOUT 300)
    else()
      message(WARNING "${QP_PYTHON} has no ml_dtypes (scripts/setup.sh installs it): oracle_mldtypes not added")
    endif()

    if(TARGET qerr)
      # check_qerr.py --generate writes the demo file (tools/gen_demo_tensors.py)
      # into the build tree first, then runs qerr on it.
      add_test(NAME oracle_qerr
               COMMAND ${QP_PYTHON} ${QP_ORACLE_DIR}/check_qerr.py
                       $<TARGET_FILE:qerr> ${CMAKE_CURRENT_BINARY_DIR}/oracle_demo.safetensors
                       --generate 0)
      set_tests_properties(oracle_qerr PROPERTIES LABELS "oracle" TIMEOUT 600)
    else()
      message(STATUS "qerr target not defined: oracle_qerr test not added")
    endif()
  endif()
else()
  message(WARNING "QP_PYTHON not found: oracle tests not added")
endif()
