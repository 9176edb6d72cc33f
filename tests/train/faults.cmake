# faults: divergence handling with injected NaN/Inf, SIGKILL at random moments,
# full disks (python + h5py as the independent reader; label "train")
if(TARGET qtrain AND QP_PYTHON)
  foreach(t divergence kill diskfull)
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/train/test_${t}.py)
      add_test(NAME test_${t}
               COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/train/test_${t}.py $<TARGET_FILE:qtrain>
                       ${PROJECT_SOURCE_DIR}/../shared/data/tinyshakespeare.txt)
      set_tests_properties(test_${t} PROPERTIES LABELS "train" TIMEOUT 300 SKIP_RETURN_CODE 77)
    endif()
  endforeach()
endif()
