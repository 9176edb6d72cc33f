# Bad input, table-style: every tool against missing, wrong and absurd
# input (tests/badinput/badinput.py). Each case: the expected exit code, one
# line on stderr starting with the tool's name, nothing left behind.
# Included from tests/CMakeLists.txt; needs QP_PYTHON with numpy and h5py.
if(QP_PYTHON)
  execute_process(COMMAND ${QP_PYTHON} -c "import numpy, h5py"
                  RESULT_VARIABLE _bi_py OUTPUT_QUIET ERROR_QUIET)
  if(_bi_py EQUAL 0)
    set(_bi ${CMAKE_CURRENT_LIST_DIR}/badinput.py)
    foreach(tool qtrain qerr qsweep qplot)
      if(TARGET ${tool})
        set(_extra)
        if(TARGET qtrain AND tool MATCHES "qplot")
          set(_extra $<TARGET_FILE:qtrain>)
        endif()
        add_test(NAME badinput_${tool}
                 COMMAND ${QP_PYTHON} ${_bi} ${tool} $<TARGET_FILE:${tool}>
                         ${CMAKE_CURRENT_BINARY_DIR}/badinput_${tool} ${_extra})
        set_tests_properties(badinput_${tool} PROPERTIES LABELS "badinput;cli" TIMEOUT 300)
      endif()
    endforeach()
  else()
    message(WARNING "${QP_PYTHON} lacks numpy or h5py: the badinput tests are not added")
  endif()
endif()
