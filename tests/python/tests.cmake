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

# qprec.torch (tests/python/test_torch.py), label "python": a recipe on a
# PyTorch model's linear layers bit for bit against F.linear of qdq'd
# operands, the role names and refusals, the run file RunLog writes (read by
# qprec.runfile, qsweep --summarize, qplot; a killed run's file), a Hugging
# Face GPT-2 and Llama (skipped without transformers),
# python/examples/nanogpt_nvfp4.py's sweep folder; and the loss curve against
# qtrain's (tests/python/test_torch_qtrain.py). Exit 77: no torch.
if(TARGET qprec AND TARGET qsweep AND TARGET qplot AND QP_PYTHON)
  foreach(case exact names runlog example hf)
    add_test(NAME python_torch_${case}
             COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_torch.py ${case} $<TARGET_FILE:qprec>
                     ${CMAKE_CURRENT_BINARY_DIR}/python_torch_${case} $<TARGET_FILE:qsweep> $<TARGET_FILE:qplot>)
    set_tests_properties(python_torch_${case} PROPERTIES LABELS "python" TIMEOUT 300 SKIP_RETURN_CODE 77)
  endforeach()
endif()
if(TARGET qprec AND TARGET qtrain AND QP_PYTHON)
  add_test(NAME python_torch_qtrain
           COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_torch_qtrain.py $<TARGET_FILE:qprec>
                   ${CMAKE_CURRENT_BINARY_DIR}/python_torch_qtrain $<TARGET_FILE:qtrain>)
  set_tests_properties(python_torch_qtrain PROPERTIES LABELS "python" TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
