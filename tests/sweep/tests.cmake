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

# qsweep --plan: the search on synthetic gap curves (C), the Spearman
# correlation and its bootstrap against scipy, the [plan] section's errors
# and a tiny plan end to end (tests/sweep/test_plan.py)
if(TARGET qsweep AND TARGET qtrain)
  add_executable(test_plan ${CMAKE_CURRENT_LIST_DIR}/test_plan.c ${PROJECT_SOURCE_DIR}/experiments/plan/qpl_search.c
                 ${PROJECT_SOURCE_DIR}/experiments/plan/qpl_rankstat.c)
  target_include_directories(test_plan PRIVATE ${PROJECT_SOURCE_DIR}/experiments/plan ${PROJECT_SOURCE_DIR}/experiments)
  target_link_libraries(test_plan PRIVATE m)
  add_test(NAME plan_search COMMAND test_plan search)
  set_tests_properties(plan_search PROPERTIES LABELS "sweep;unit" TIMEOUT 60)
  if(QP_PYTHON)
    foreach(case parse spearman run)
      add_test(NAME plan_${case}
               COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_plan.py ${case} $<TARGET_FILE:qsweep>
                       $<TARGET_FILE:qtrain> $<TARGET_FILE:test_plan> ${CMAKE_CURRENT_BINARY_DIR}/plan)
      set_tests_properties(plan_${case} PROPERTIES LABELS "sweep" TIMEOUT 120)
    endforeach()
  endif()
endif()
