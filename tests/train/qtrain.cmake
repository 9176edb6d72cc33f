# qtrain end to end (python + h5py as the independent reader)
if(TARGET qtrain AND QP_PYTHON)
  foreach(arch gpt llama)
    set(_name test_qtrain)
    if(NOT arch STREQUAL "gpt")
      set(_name test_qtrain_${arch})
    endif()
    add_test(NAME ${_name}
             COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/train/test_qtrain.py $<TARGET_FILE:qtrain>
                     ${PROJECT_SOURCE_DIR}/../shared/data/tinyshakespeare.txt ${arch})
    set_tests_properties(${_name} PROPERTIES LABELS "train" TIMEOUT 900)
  endforeach()
endif()

# the known result (about 2 minutes each on 2 cores)
if(TARGET qtrain AND QP_PYTHON)
  foreach(recipe bf16 fp32)
    add_test(NAME train_baby_shakespeare_${recipe}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train/test_baby.sh $<TARGET_FILE:qtrain> ${recipe}
                     ${PROJECT_SOURCE_DIR}/../shared/data/tinyshakespeare.txt ${CMAKE_CURRENT_BINARY_DIR}/baby)
    set_tests_properties(train_baby_shakespeare_${recipe} PROPERTIES LABELS "long;train" TIMEOUT 1800
                         SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  endforeach()
endif()

# qtrain's OpenMP waiting policy (train/qp_omp.h): the re-exec, the user's choice kept
if(TARGET qtrain AND QP_PYTHON)
  add_test(NAME test_omp_policy
           COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/train/test_omp_policy.py $<TARGET_FILE:qtrain>
                   ${CMAKE_CURRENT_BINARY_DIR}/omp_policy)
  set_tests_properties(test_omp_policy PROPERTIES LABELS "train" TIMEOUT 300)
endif()
