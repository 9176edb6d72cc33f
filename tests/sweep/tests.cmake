# qsweep end to end (tests/sweep/test_sweep.py; python + h5py as the independent
# reader of run files and summaries). Each case is small: tiny models, a few
# dozen steps, a generated corpus in the case's own folder under the build tree.
if(TARGET qsweep AND TARGET qtrain AND QP_PYTHON)
  foreach(case parse examples study grid dryrun run resume fail lock summarize slurm attribution contrast)
    add_test(NAME sweep_${case}
             COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/sweep/test_sweep.py ${case}
                     $<TARGET_FILE:qsweep> $<TARGET_FILE:qtrain> ${CMAKE_CURRENT_BINARY_DIR}/sweep)
    set_tests_properties(sweep_${case} PROPERTIES LABELS "sweep" TIMEOUT 300)
  endforeach()
endif()

# the interval math and sizing arithmetic against scipy/numpy (test_stats.py)
if(TARGET qsweep AND TARGET qtrain AND QP_PYTHON)
  add_executable(stats_tool ${CMAKE_CURRENT_LIST_DIR}/stats_tool.c ${PROJECT_SOURCE_DIR}/experiments/qs_stats.c
                 ${PROJECT_SOURCE_DIR}/train/run/qp_size.c)
  target_include_directories(stats_tool PRIVATE ${PROJECT_SOURCE_DIR}/experiments ${QP_TRAIN_INCLUDE_DIRS})
  target_link_libraries(stats_tool PRIVATE m)
  # the interval's coverage by simulation (normal and gamma draws, n = 3, 5, 8)
  add_executable(test_coverage ${CMAKE_CURRENT_LIST_DIR}/test_coverage.c ${PROJECT_SOURCE_DIR}/experiments/qs_stats.c)
  target_include_directories(test_coverage PRIVATE ${PROJECT_SOURCE_DIR}/experiments)
  target_link_libraries(test_coverage PRIVATE m)
  add_test(NAME stats_coverage COMMAND test_coverage)
  set_tests_properties(stats_coverage PROPERTIES LABELS "sweep;unit" TIMEOUT 120)
  execute_process(COMMAND ${QP_PYTHON} -c "import scipy" RESULT_VARIABLE _qp_scipy OUTPUT_QUIET ERROR_QUIET)
  if(_qp_scipy EQUAL 0)
    foreach(case tquant ci ratio paired size)
      add_test(NAME stats_${case}
               COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_stats.py ${case} $<TARGET_FILE:stats_tool>
                       $<TARGET_FILE:qtrain> ${CMAKE_CURRENT_BINARY_DIR}/stats)
      set_tests_properties(stats_${case} PROPERTIES LABELS "sweep;unit" TIMEOUT 300)
    endforeach()
  else()
    message(WARNING "QP_PYTHON lacks scipy (Debian: python3-scipy): the stats tests are not added")
  endif()
endif()
