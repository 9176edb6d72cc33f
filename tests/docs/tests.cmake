# Every command README.md and docs/*.md show, run (tests/docs/doc_commands.py):
# each sh command as written, in a checked fast form, or skipped with a
# reason, by an explicit table; every experiment-file block through qsweep
# --dry-run; a command no table entry names fails, and so does an entry no
# document shows. Label "docs". Needs QP_PYTHON with numpy and h5py, and
# the tools it runs.
if(QP_PYTHON AND TARGET qtrain AND TARGET qsweep AND TARGET qplot AND TARGET qerr)
  execute_process(COMMAND ${QP_PYTHON} -c "import numpy, h5py" RESULT_VARIABLE _doc_py OUTPUT_QUIET ERROR_QUIET)
  if(_doc_py EQUAL 0)
    add_test(NAME docs_commands
             COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/doc_commands.py ${PROJECT_SOURCE_DIR}
                     ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/docs_commands)
    set_tests_properties(docs_commands PROPERTIES LABELS "docs" TIMEOUT 300)
  else()
    message(WARNING "${QP_PYTHON} lacks numpy or h5py: the docs test is not added")
  endif()
endif()
