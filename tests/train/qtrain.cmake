# qtrain's option table: its parser and its range checks read every row
if(TARGET qptrainer)
  add_executable(test_train_options ${CMAKE_CURRENT_SOURCE_DIR}/train/test_train_options.c)
  target_include_directories(test_train_options PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(test_train_options PRIVATE qptrainer m)
  add_test(NAME test_train_options COMMAND test_train_options)
  set_tests_properties(test_train_options PROPERTIES LABELS "unit;train")
endif()

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

# qtrain's results bit for bit against tests/train/golden/qtrain_golden.json:
# both architectures under bf16, fp8, nvfp4 and mxfp4 (portable paths on every
# CPU; the CPU's own paths where the file has its signature). Regenerate on
# code whose results are right: test_golden.py QTRAIN GOLDEN --update
if(TARGET qtrain AND QP_PYTHON)
  add_test(NAME test_qtrain_golden
           COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/train/test_golden.py $<TARGET_FILE:qtrain>
                   ${CMAKE_CURRENT_SOURCE_DIR}/train/golden/qtrain_golden.json)
  set_tests_properties(test_qtrain_golden PROPERTIES LABELS "train" TIMEOUT 300)
endif()

# the known result (about 2 minutes each on 2 cores): the GPT in bf16 and
# fp32, the Llama in bf16 (target: within 0.03 of the GPT's 1.90)
if(TARGET qtrain AND QP_PYTHON)
  foreach(run bf16 fp32 llama:bf16)
    string(REPLACE ":" ";" _parts ${run})
    list(LENGTH _parts _n)
    if(_n GREATER 1)
      list(GET _parts 0 _arch)
      list(GET _parts 1 recipe)
      set(_name train_baby_shakespeare_${_arch}_${recipe})
    else()
      set(_arch gpt)
      set(recipe ${run})
      set(_name train_baby_shakespeare_${recipe})
    endif()
    add_test(NAME ${_name}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/train/test_baby.sh $<TARGET_FILE:qtrain> ${recipe}
                     ${PROJECT_SOURCE_DIR}/../shared/data/tinyshakespeare.txt ${CMAKE_CURRENT_BINARY_DIR}/baby ${_arch})
    set_tests_properties(${_name} PROPERTIES LABELS "long;train" TIMEOUT 1800 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  endforeach()
endif()

# qtrain's OpenMP waiting policy (train/run/qp_omp.h): the re-exec, the user's choice kept
if(TARGET qtrain AND QP_PYTHON)
  add_test(NAME test_omp_policy
           COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/train/test_omp_policy.py $<TARGET_FILE:qtrain>
                   ${CMAKE_CURRENT_BINARY_DIR}/omp_policy)
  set_tests_properties(test_omp_policy PROPERTIES LABELS "train" TIMEOUT 300)
endif()
