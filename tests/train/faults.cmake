# faults: divergence handling with injected NaN/Inf, SIGKILL at random moments,
# full disks (python + h5py as the independent reader; label "train")
# (divergence and kill also on --arch llama: test_divergence_llama, test_kill_llama;
# the disk-full cases are about files, whatever the model)
if(TARGET qtrain AND QP_PYTHON)
  foreach(t divergence kill diskfull divergence:llama kill:llama)
    string(REPLACE ":" ";" _parts ${t})
    list(GET _parts 0 _script)
    list(LENGTH _parts _n)
    set(_name test_${_script})
    set(_arch "")
    if(_n GREATER 1)
      list(GET _parts 1 _arch)
      set(_name test_${_script}_${_arch})
    endif()
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/train/test_${_script}.py)
      add_test(NAME ${_name}
               COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/train/test_${_script}.py $<TARGET_FILE:qtrain>
                       ${PROJECT_SOURCE_DIR}/../shared/data/tinyshakespeare.txt ${_arch})
      set_tests_properties(${_name} PROPERTIES LABELS "train" TIMEOUT 300 SKIP_RETURN_CODE 77)
    endif()
  endforeach()
endif()
