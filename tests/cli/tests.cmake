# The four tools' command lines against each other (tests/cli/test_cli.py),
# label "cli": one version everywhere (quant/qp_version.h, CMake, --version,
# run files, the Python package), --opt value and --opt=value, typo
# suggestions and range wording alike in every tool, --man pages that list
# every --help option, qsweep's experiment-file rules (trailing comments,
# docs/qsweep.md's example, bare recipe modifiers, whole-run checks) and
# qplot leaving checkpoints out. Included from tests/CMakeLists.txt; needs
# QP_PYTHON with numpy and h5py.
if(QP_PYTHON AND TARGET qtrain AND TARGET qsweep AND TARGET qplot AND TARGET qerr AND TARGET qprec)
  execute_process(COMMAND ${QP_PYTHON} -c "import numpy, h5py" RESULT_VARIABLE _cli_py OUTPUT_QUIET ERROR_QUIET)
  # A sanitized libqprec.so loads into Python only behind its ASan runtime:
  # the version case preloads it (QP_ASAN_PRELOAD) for that one import.
  set(_cli_env "")
  if(QP_SANITIZE)
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE _cli_asan
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(_cli_env "QP_ASAN_PRELOAD=${_cli_asan}")
  endif()
  if(_cli_py EQUAL 0)
    foreach(case version syntax man ini ckpt)
      add_test(NAME cli_${case}
               COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_cli.py ${case} $<TARGET_FILE_DIR:qtrain>
                       ${CMAKE_CURRENT_BINARY_DIR}/cli_${case} $<TARGET_FILE:qprec> ${PROJECT_VERSION})
      set_tests_properties(cli_${case} PROPERTIES LABELS "cli;unit" TIMEOUT 120 ENVIRONMENT "${_cli_env}")
    endforeach()
  else()
    message(WARNING "${QP_PYTHON} lacks numpy or h5py: the cli tests are not added")
  endif()
endif()

# io/qp_cli on its own (label "unit")
if(TARGET qpio)
  add_executable(test_qp_cli ${CMAKE_CURRENT_LIST_DIR}/test_qp_cli.c)
  target_include_directories(test_qp_cli PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
  target_link_libraries(test_qp_cli PRIVATE qpio m)
  add_test(NAME test_qp_cli COMMAND test_qp_cli)
  set_tests_properties(test_qp_cli PROPERTIES LABELS "unit;cli" TIMEOUT 30)
endif()
