# qtrain end to end (python + h5py as the independent reader)
if(TARGET qtrain AND QP_PYTHON)
  add_test(NAME test_qtrain
           COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/train/test_qtrain.py $<TARGET_FILE:qtrain>
                   ${PROJECT_SOURCE_DIR}/../shared/data/tinyshakespeare.txt)
  set_tests_properties(test_qtrain PROPERTIES LABELS "train" TIMEOUT 900)
endif()
