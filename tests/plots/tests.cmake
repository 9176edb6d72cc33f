# qplot end to end (tests/plots/test_qplot.py): tiny run files made by qtrain
# on a generated corpus (the fixture plots_runs), then every figure kind and
# format, qplot all, bad input, gnuplot's warnings, and --follow on a live
# run. Included from tests/CMakeLists.txt; needs QP_PYTHON with h5py (the
# independent reader the extracted numbers are checked against) and gnuplot.
if(TARGET qplot AND TARGET qtrain)
  set(_qp_plots_py 1)
  if(QP_PYTHON)
    execute_process(COMMAND ${QP_PYTHON} -c "import numpy, h5py" RESULT_VARIABLE _qp_plots_py
                    OUTPUT_QUIET ERROR_QUIET)
  endif()
  find_program(QP_GNUPLOT_EXE gnuplot)
  if(NOT _qp_plots_py EQUAL 0)
    message(WARNING "QP_PYTHON (${QP_PYTHON}) lacks numpy or h5py: the plots tests are not added")
  elseif(NOT QP_GNUPLOT_EXE)
    message(WARNING "gnuplot not found (Debian: gnuplot-nox): the plots tests are not added")
  else()
    set(_qp_plots_work ${CMAKE_CURRENT_BINARY_DIR}/plots)
    set(_qp_plots_cmd ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_qplot.py)
    set(_qp_plots_args $<TARGET_FILE:qtrain> $<TARGET_FILE:qplot> ${_qp_plots_work} ${PROJECT_SOURCE_DIR}/plots)
    add_test(NAME plots_runs COMMAND ${_qp_plots_cmd} runs ${_qp_plots_args})
    set_tests_properties(plots_runs PROPERTIES LABELS "plots" TIMEOUT 600 FIXTURES_SETUP qp_plot_runs)
    # every kind qplot lists (qplot kinds) drawn from a tiny sweep, left as PNGs for review
    add_test(NAME plots_review COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_review.py
             $<TARGET_FILE:qtrain> $<TARGET_FILE:qplot> ${CMAKE_CURRENT_BINARY_DIR}/plots_review)
    set_tests_properties(plots_review PROPERTIES LABELS "plots" TIMEOUT 120)
    foreach(part kinds all errors gnuplot follow)
      add_test(NAME plots_${part} COMMAND ${_qp_plots_cmd} ${part} ${_qp_plots_args})
      set_tests_properties(plots_${part} PROPERTIES LABELS "plots" TIMEOUT 300 FIXTURES_REQUIRED qp_plot_runs)
    endforeach()
  endif()
endif()
