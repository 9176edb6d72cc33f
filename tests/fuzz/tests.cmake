# Fuzz targets beyond fuzz_safetensors (which tests/qerr/tests.cmake owns):
# experiment files, token shards, HDF5 checkpoints / tensor files / run
# files (structure-aware), qtrain's command line. Included from
# tests/CMakeLists.txt.
#
# Each target NAME has tests/fuzz/fuzz_NAME.c, a seed corpus corpus_NAME/
# and regression inputs crashes_NAME/. The ordinary build replays both
# through fuzz_replay.c (test fuzz_replay_NAME, label "unit"); the QP_FUZZ
# build (clang) adds a bounded libFuzzer run (test fuzz_NAME, label "fuzz"),
# with the parser sources compiled into the target so they carry coverage.
set(QP_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})

# qp_fuzz_target(NAME SECONDS MAX_LEN SOURCES src... LIBS lib... INCLUDES dir... [ARGS extra libFuzzer flags])
function(qp_fuzz_target name seconds max_len)
  cmake_parse_arguments(F "" "" "SOURCES;LIBS;INCLUDES;ARGS" ${ARGN})
  set(_src ${QP_FUZZ_DIR}/fuzz_${name}.c ${F_SOURCES})
  add_executable(fuzz_replay_${name} ${QP_FUZZ_DIR}/fuzz_replay.c ${_src})
  target_include_directories(fuzz_replay_${name} PRIVATE ${F_INCLUDES})
  target_link_libraries(fuzz_replay_${name} PRIVATE ${F_LIBS})
  add_test(NAME fuzz_replay_${name}
           COMMAND fuzz_replay_${name} ${QP_FUZZ_DIR}/corpus_${name} ${QP_FUZZ_DIR}/crashes_${name})
  set_tests_properties(fuzz_replay_${name} PROPERTIES LABELS "unit;replay" TIMEOUT 120)
  if(QP_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
    add_executable(fuzz_${name} ${_src})
    target_include_directories(fuzz_${name} PRIVATE ${F_INCLUDES})
    target_link_libraries(fuzz_${name} PRIVATE ${F_LIBS})
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    set(_fz ${CMAKE_CURRENT_BINARY_DIR}/fuzz_${name}_work)
    file(MAKE_DIRECTORY ${_fz}/corpus ${_fz}/artifacts)
    set(_dict)
    if(EXISTS ${QP_FUZZ_DIR}/${name}.dict)
      set(_dict -dict=${QP_FUZZ_DIR}/${name}.dict)
    endif()
    # New inputs go to the build tree (the first corpus directory), never
    # into the committed seeds; the crashes are seeds too.
    add_test(NAME fuzz_${name}
             COMMAND fuzz_${name} ${_fz}/corpus ${QP_FUZZ_DIR}/corpus_${name} ${QP_FUZZ_DIR}/crashes_${name}
                     ${_dict} -max_total_time=${seconds} -max_len=${max_len} -malloc_limit_mb=1024
                     -timeout=10 -artifact_prefix=${_fz}/artifacts/ -print_final_stats=1 ${F_ARGS})
    set_tests_properties(fuzz_${name} PROPERTIES LABELS "fuzz" TIMEOUT 180)
  endif()
endfunction()

set(_src_root ${CMAKE_CURRENT_LIST_DIR}/../..)
find_package(Threads REQUIRED)

# (a) experiment files: qsweep's parser, option checks, grid expansion.
if(TARGET qsweep)
  qp_fuzz_target(experiment 20 4096
    SOURCES ${_src_root}/experiments/qs_ini.c ${_src_root}/experiments/qs_keys.c ${_src_root}/experiments/qs_opts.c
            ${_src_root}/experiments/qs_grid.c ${_src_root}/experiments/qs_attr.c ${_src_root}/train/precision/qp_recipe.c ${_src_root}/train/run/qp_size.c
            ${_src_root}/train/run/qp_train_options.c ${_src_root}/train/model/qp_model_shape.c ${_src_root}/io/qp_cli.c
    INCLUDES ${_src_root}/experiments ${QP_TRAIN_INCLUDE_DIRS} ${_src_root}/io
    LIBS qpquant m)
endif()

# (b) llm.c token shards and byte files (train/run/qp_data.c).
if(TARGET qpdata)
  qp_fuzz_target(shard 15 4096
    SOURCES ${_src_root}/train/run/qp_data.c
    INCLUDES ${QP_TRAIN_INCLUDE_DIRS}
    LIBS qpquant Threads::Threads m)
endif()

# (c) HDF5 readers, structure-aware: checkpoints, qerr's tensor reader, qplot's and qsweep's run readers.
if(TARGET qprunlog)
  find_package(HDF5 REQUIRED COMPONENTS C)
  qp_fuzz_target(h5 30 256
    SOURCES ${_src_root}/train/runfile/qp_ckpt.c ${_src_root}/train/runfile/qp_space.c ${_src_root}/plots/qp_runread.c ${_src_root}/io/qp_h5read.c
            ${_src_root}/train/runfile/qp_runschema.c ${_src_root}/train/runfile/qp_runfile.c
            ${_src_root}/io/qp_h5err.c ${_src_root}/io/qp_h5table.c ${_src_root}/io/qp_tensor_file.c
            ${_src_root}/experiments/qs_runfile.c
    INCLUDES ${QP_TRAIN_INCLUDE_DIRS} ${_src_root}/plots ${_src_root}/io ${_src_root}/experiments ${HDF5_INCLUDE_DIRS}
    LIBS qpio ${HDF5_LIBRARIES} m)
endif()

# (d) command lines: qtrain's qp_train_parse_args, qp_train_opts_check,
# qp_recipe_parse; qsweep's qs_cli_parse; qerr's qerr_parse_args.
if(TARGET qptrainer)
  qp_fuzz_target(args 15 1024
    SOURCES ${_src_root}/train/run/qp_train_args.c ${_src_root}/train/precision/qp_recipe.c ${_src_root}/experiments/qs_cli.c
            ${_src_root}/tools/qerr_args.c ${_src_root}/tools/qerr_cols.c
    INCLUDES ${QP_TRAIN_INCLUDE_DIRS} ${_src_root}/experiments ${_src_root}/tools
    LIBS qptrainer qpio qpquant m)
endif()
