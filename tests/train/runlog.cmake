# Tests of train/runfile/qp_runlog (the SWMR run file) and train/runfile/qp_ckpt (atomic,
# checksummed checkpoints). Included from tests/CMakeLists.txt; a no-op until
# the qprunlog library exists. Each test works in its own directory under
# the build tree. The h5py test runs with QP_PYTHON (Debian's python3).
if(TARGET qprunlog)
  set(QP_RUNLOG_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

  function(qp_runlog_exe name)
    add_executable(${name} ${QP_RUNLOG_TEST_DIR}/${name}.c)
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})  # qp_test.h
    target_link_libraries(${name} PRIVATE qprunlog m)
  endfunction()

  qp_runlog_exe(test_runlog)
  qp_runlog_exe(test_ckpt)
  qp_runlog_exe(test_runlog_writer)
  add_test(NAME runlog_unit COMMAND test_runlog ${CMAKE_CURRENT_BINARY_DIR}/runlog_unit)
  add_test(NAME ckpt_unit COMMAND test_ckpt ${CMAKE_CURRENT_BINARY_DIR}/ckpt_unit)
  set_tests_properties(runlog_unit ckpt_unit PROPERTIES LABELS "unit;train" TIMEOUT 120)

  set(_qp_runlog_h5py 1)
  if(QP_PYTHON)
    execute_process(COMMAND ${QP_PYTHON} -c "import numpy, h5py" RESULT_VARIABLE _qp_runlog_h5py
                    OUTPUT_QUIET ERROR_QUIET)
  endif()
  if(_qp_runlog_h5py EQUAL 0)
    find_program(QP_H5DUMP h5dump)
    find_program(QP_H5CLEAR h5clear)
    set(_h5tools)
    if(QP_H5DUMP AND QP_H5CLEAR)
      set(_h5tools ${QP_H5DUMP} ${QP_H5CLEAR})
    else()
      message(WARNING "h5dump/h5clear (hdf5-tools) not found: runlog_h5py does not check h5dump -H")
    endif()
    add_test(NAME runlog_h5py
             COMMAND ${QP_PYTHON} ${QP_RUNLOG_TEST_DIR}/test_runlog_h5py.py $<TARGET_FILE:test_runlog_writer>
                     ${CMAKE_CURRENT_BINARY_DIR}/runlog_h5py ${_h5tools})
    set_tests_properties(runlog_h5py PROPERTIES LABELS "io;train" TIMEOUT 300)
  else()
    message(WARNING "QP_PYTHON (${QP_PYTHON}) lacks numpy or h5py: runlog_h5py not added")
  endif()
endif()

# The run file's schema against its docs, run files of the previous schema
# (a stored file written by qtrain before the phase profile) in qplot and
# qsweep, a newer schema refused, an older file resumed (upgraded).
if(TARGET qprunlog AND TARGET qtrain AND TARGET qplot AND TARGET qsweep AND QP_PYTHON AND _qp_runlog_h5py EQUAL 0)
  add_executable(runschema_md ${QP_RUNLOG_TEST_DIR}/runschema_md.c)
  target_link_libraries(runschema_md PRIVATE qprunlog)
  foreach(part docs fixture newer upgrade)
    add_test(NAME runlog_compat_${part}
             COMMAND ${QP_PYTHON} ${QP_RUNLOG_TEST_DIR}/test_runfile_compat.py ${part} $<TARGET_FILE:runschema_md>
                     $<TARGET_FILE:qtrain> $<TARGET_FILE:qplot> $<TARGET_FILE:qsweep> ${PROJECT_SOURCE_DIR}
                     ${CMAKE_CURRENT_BINARY_DIR}/runlog_compat_${part})
    set_tests_properties(runlog_compat_${part} PROPERTIES LABELS "train;io" TIMEOUT 300)
  endforeach()
endif()

# The one run-file reader (train/runfile/qp_runfile.h): every schema column of a fresh
# run file and of the schema-1 fixture, read by name, against h5py's reading.
if(TARGET qprunread AND TARGET qtrain AND QP_PYTHON AND _qp_runlog_h5py EQUAL 0)
  add_executable(runfile_dump ${QP_RUNLOG_TEST_DIR}/runfile_dump.c)
  target_link_libraries(runfile_dump PRIVATE qprunread)
  add_test(NAME runfile_reader
           COMMAND ${QP_PYTHON} ${QP_RUNLOG_TEST_DIR}/test_runfile_reader.py $<TARGET_FILE:runfile_dump>
                   $<TARGET_FILE:qtrain> ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/runfile_reader)
  set_tests_properties(runfile_reader PROPERTIES LABELS "unit;io" TIMEOUT 120)
endif()
