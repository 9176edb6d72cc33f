# the paper's analysis (tests/paper/test_paper.py): the scaling fit on
# synthetic data, the verdict sentences, the Python interval rule against
# qsweep's C one, Holm and BH against statsmodels, the wording rule, and the
# corpus manifest check. Needs numpy, scipy, h5py (and statsmodels for multiplicity).
if(QP_PYTHON AND TARGET stats_tool)
  execute_process(COMMAND ${QP_PYTHON} -c "import numpy, scipy, h5py" RESULT_VARIABLE _qp_paper_py
                  OUTPUT_QUIET ERROR_QUIET)
  # paper/intervals.py loads libqpstats.so with ctypes; a sanitized one
  # loads into Python only behind its ASan runtime (preloaded; the
  # interpreter's own leaks are not ours to report)
  set(_paper_env "QP_STATS_LIBRARY=$<TARGET_FILE:qpstats>")
  if(QP_SANITIZE)
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE _paper_asan
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND _paper_env "LD_PRELOAD=${_paper_asan}" "ASAN_OPTIONS=detect_leaks=0")
  endif()
  if(_qp_paper_py EQUAL 0)
    foreach(case fit verdicts intervals multiplicity wording layout corpus)
      add_test(NAME paper_${case}
               COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_paper.py ${case} ${PROJECT_SOURCE_DIR}
                       ${CMAKE_CURRENT_BINARY_DIR}/paper_${case} $<TARGET_FILE:stats_tool>)
      set_tests_properties(paper_${case} PROPERTIES LABELS "unit;paper" TIMEOUT 300 ENVIRONMENT "${_paper_env}")
    endforeach()
    # the generated tables on tiny real sweeps (qsweep + qtrain, about a hundred runs of tens of steps)
    if(TARGET qsweep AND TARGET qtrain)
      add_test(NAME paper_tables
               COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_paper.py tables ${PROJECT_SOURCE_DIR}
                       ${CMAKE_CURRENT_BINARY_DIR}/paper_tables $<TARGET_FILE:stats_tool> $<TARGET_FILE:qsweep>
                       $<TARGET_FILE:qtrain>)
      set_tests_properties(paper_tables PROPERTIES LABELS "paper;sweep;long" TIMEOUT 900 ENVIRONMENT "${_paper_env}")
    endif()
  else()
    message(WARNING "QP_PYTHON lacks numpy, scipy or h5py (Debian: python3-scipy): the paper tests are not added")
  endif()
endif()
