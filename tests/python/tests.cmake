# The Python package (python/, tests/python/test_python.py), label "python":
# against qerr --json and tensor_dump byte for byte, an independent decoder
# of the packed layout and the numpy oracle, what `import qprec` loads,
# torch tensors without copies, the doctests, and `pip install ./python`
# into a fresh venv (offline). Needs QP_PYTHON with numpy and h5py (pandas
# for runfile, torch for the torch case: each case says what it lacks).
if(TARGET qprec AND TARGET qerr AND TARGET tensor_dump AND TARGET qtrain AND QP_PYTHON)
  execute_process(COMMAND ${QP_PYTHON} -c "import numpy, h5py" RESULT_VARIABLE _qp_py_ok OUTPUT_QUIET ERROR_QUIET)
  if(_qp_py_ok EQUAL 0)
    foreach(case exact codes import extras torch doctest install te bstats)
      add_test(NAME python_${case}
               COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_python.py ${case} $<TARGET_FILE:qprec>
                       ${CMAKE_CURRENT_BINARY_DIR}/python_${case} $<TARGET_FILE:qerr> $<TARGET_FILE:tensor_dump>
                       $<TARGET_FILE:qtrain>)
      set_tests_properties(python_${case} PROPERTIES LABELS "python" TIMEOUT 900)
    endforeach()
  else()
    message(WARNING "${QP_PYTHON} lacks numpy or h5py: the python tests are not added")
  endif()
endif()
