# Data-parallel training (MPI). Only where qtrain is built with MPI and
# mpirun exists. The root flags live here, not in the user's environment
# (CI runs as root): --allow-run-as-root, and --oversubscribe for 2 ranks on
# fewer cores. Label "mpi"; part of the normal ctest run.
#   test_dist_linear  the dispatch under data parallelism: each rank's slice
#                     quantizes exactly as the single process (global amax,
#                     global SR word indices), rank 1 holding the maxima
#   test_qtrain_mpi   mpirun -np 2 qtrain vs qtrain: loss curves, batch hashes,
#                     2-rank checkpoint/--resume, --grad-comm bf16|fp8, bad input
#   test_qtrain_mpi_cuda  the same with --device cuda on two GPUs (NCCL; label
#                     "gpu;mpi", SKIP 77 with fewer than two GPUs)
if(QP_HAVE_MPI AND TARGET qpmodel AND TARGET qpdist)
  find_program(QP_MPIRUN NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
  if(QP_MPIRUN)
    set(QP_MPIRUN_FLAGS -q --allow-run-as-root --oversubscribe)
    set(QP_MPI_ENV "OMPI_MCA_btl_vader_single_copy_mechanism=none")
    add_executable(test_dist_linear ${CMAKE_CURRENT_LIST_DIR}/test_dist_linear.c)
    target_include_directories(test_dist_linear PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})  # qp_test.h
    target_link_libraries(test_dist_linear PRIVATE qpmodel qpdist m)
    add_test(NAME test_dist_linear
             COMMAND ${QP_MPIRUN} ${QP_MPIRUN_FLAGS} -np 2 $<TARGET_FILE:test_dist_linear>)
    set_tests_properties(test_dist_linear PROPERTIES LABELS "mpi" TIMEOUT 120 SKIP_RETURN_CODE 77
                         ENVIRONMENT "OMP_NUM_THREADS=1;${QP_MPI_ENV}")
    if(TARGET qtrain AND QP_PYTHON)
      add_test(NAME test_qtrain_mpi
               COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_qtrain_mpi.py $<TARGET_FILE:qtrain>
                       ${PROJECT_SOURCE_DIR}/../shared/data/tinyshakespeare.txt ${QP_MPIRUN} ${QP_MPIRUN_FLAGS})
      set_tests_properties(test_qtrain_mpi PROPERTIES LABELS "mpi;train" TIMEOUT 300 SKIP_RETURN_CODE 77
                           RUN_SERIAL TRUE ENVIRONMENT "${QP_MPI_ENV}")
      # the same on two GPUs (--device cuda, NCCL): SKIP 77 with fewer than two
      if(QP_HAVE_NCCL)
        add_test(NAME test_qtrain_mpi_cuda
                 COMMAND ${QP_PYTHON} ${PROJECT_SOURCE_DIR}/tests/kernels/test_qtrain_mpi_cuda.py
                         $<TARGET_FILE:qtrain> ${PROJECT_SOURCE_DIR}/../shared/data/tinyshakespeare.txt ${QP_MPIRUN}
                         ${QP_MPIRUN_FLAGS})
        set_tests_properties(test_qtrain_mpi_cuda PROPERTIES LABELS "gpu;mpi" TIMEOUT 900 SKIP_RETURN_CODE 77
                             RUN_SERIAL TRUE ENVIRONMENT "${QP_MPI_ENV}")
      endif()
    endif()
  endif()
endif()
