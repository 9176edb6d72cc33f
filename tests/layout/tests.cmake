# The source tree's house rules (tests/layout/test_layout.py): no folder
# holds more than 6,000 lines of C/CUDA directly, and no include cycle runs
# between top-level folders or between train/'s rooms. Included from
# tests/CMakeLists.txt.
if(QP_PYTHON)
  add_test(NAME layout COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_layout.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(layout PROPERTIES LABELS "unit" TIMEOUT 60)
  # the checker fails a made-up tree that breaks each rule
  add_test(NAME layout_selftest COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_layout.py --selftest)
  set_tests_properties(layout_selftest PROPERTIES LABELS "unit" TIMEOUT 60)
endif()
