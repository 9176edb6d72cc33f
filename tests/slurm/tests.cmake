# qsweep on a real single-node Slurm (tests/slurm/test_slurm.py): the test
# starts munged, slurmctld and slurmd itself (temporary folder, free ports)
# and stops them at the end. Label "slurm"; as root it installs slurm-wlm and
# munge when they are missing, and it SKIPs (77) only where a daemon cannot
# start (e.g. not root). The two cases start their own clusters, one at a
# time (RESOURCE_LOCK): each wants the node's 2 CPUs.
if(TARGET qsweep AND TARGET qtrain AND QP_PYTHON)
  execute_process(COMMAND ${QP_PYTHON} -c "import numpy, h5py" RESULT_VARIABLE _qp_slurm_py OUTPUT_QUIET ERROR_QUIET)
  if(_qp_slurm_py EQUAL 0)
    set(_cases sweep)
    if(QP_HAVE_MPI)
      list(APPEND _cases mpi)   # 2 ranks of qtrain under srun --mpi=pmix
    endif()
    foreach(case ${_cases})
      add_test(NAME slurm_${case}
               COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_slurm.py ${case}
                       $<TARGET_FILE:qsweep> $<TARGET_FILE:qtrain> ${CMAKE_CURRENT_BINARY_DIR}/slurm)
      set_tests_properties(slurm_${case} PROPERTIES LABELS "slurm" TIMEOUT 1800 SKIP_RETURN_CODE 77
                           RESOURCE_LOCK qp_slurm)
    endforeach()
  else()
    message(WARNING "${QP_PYTHON} lacks numpy or h5py: the slurm tests are not added")
  endif()
endif()
