# qsweep end to end (tests/sweep/test_sweep.py; python + h5py as the independent
# reader of run files and summaries). Each case is small: tiny models, a few
# dozen steps, a generated corpus in the case's own folder under the build tree.
if(TARGET qsweep AND TARGET qtrain AND QP_PYTHON)
  foreach(case parse examples grid dryrun run resume fail lock summarize slurm)
    add_test(NAME sweep_${case}
             COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/sweep/test_sweep.py ${case}
                     $<TARGET_FILE:qsweep> $<TARGET_FILE:qtrain> ${CMAKE_CURRENT_BINARY_DIR}/sweep)
    set_tests_properties(sweep_${case} PROPERTIES LABELS "sweep" TIMEOUT 300)
  endforeach()
endif()
