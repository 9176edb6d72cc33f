# qsweep and MPI qtrain on a real multi-node Slurm cluster (tests/cluster/test_cluster.py): the
# test builds it itself from network namespaces (a controller namespace with MariaDB, slurmdbd
# and slurmctld; two node namespaces with a slurmd each, joined by a bridge), loses a node in
# the middle of a study and of an MPI run, and tears everything down at the end. Label
# "cluster"; as root (it installs what is missing with apt-get), SKIP (77) otherwise or where
# network namespaces or a daemon cannot start. 2.5–3.5 minutes on 2 cores: not part of the
# full ctest run of test.sh (which excludes the label), a stage of its own in .ci/run.
if(TARGET qsweep AND TARGET qtrain AND QP_PYTHON)
  execute_process(COMMAND ${QP_PYTHON} -c "import numpy, h5py" RESULT_VARIABLE _qp_cluster_py OUTPUT_QUIET ERROR_QUIET)
  if(_qp_cluster_py EQUAL 0 AND QP_HAVE_MPI)
    add_test(NAME cluster
             COMMAND ${QP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_cluster.py
                     $<TARGET_FILE:qsweep> $<TARGET_FILE:qtrain> ${CMAKE_CURRENT_BINARY_DIR}/cluster)
    set_tests_properties(cluster PROPERTIES LABELS "cluster" TIMEOUT 1200 SKIP_RETURN_CODE 77
                         RESOURCE_LOCK qp_slurm)
  else()
    message(WARNING "no MPI, or ${QP_PYTHON} lacks numpy or h5py: the cluster test is not added")
  endif()
endif()
