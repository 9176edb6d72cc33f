# cmake/install.cmake — what `cmake --install` puts in a prefix beyond each
# folder's own targets and files (docs/install.md):
#   - the man pages the build generates from each tool's option table
#     (build/share/man/man1/TOOL.1) into share/man/man1;
# and how other projects find an installed qprec:
#   - the CMake package: PREFIX/lib/cmake/qprec/qprecConfig.cmake, giving
#     qprec::quant (libqpquant.so) and qprec::quant_static (libqpquant.a,
#     which needs OpenMP's runtime at link time: the config finds OpenMP as
#     the build did, find_dependency);
#   - the pkg-config file PREFIX/lib/pkgconfig/qprec.pc, whose prefix is
#     taken from its own location (${pcfiledir}), so a moved prefix keeps
#     working, as the CMake package does (its paths are relative to itself).
# Both take their version from project(), which reads quant/qp_version.h.
foreach(_tool qtrain qsweep qplot qerr)
  # OPTIONAL: a build without one of the tools has no page for it;
  # tests/install checks that all four are installed
  install(FILES ${CMAKE_BINARY_DIR}/share/man/man1/${_tool}.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 OPTIONAL)
endforeach()

include(CMakePackageConfigHelpers)
set(QP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/qprec)

install(EXPORT qprecTargets NAMESPACE qprec:: DESTINATION ${QP_CMAKE_DIR})
set(QP_CONFIG_OPENMP OFF)
if(OpenMP_C_FOUND)
  set(QP_CONFIG_OPENMP ON)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/qprecConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/qprecConfig.cmake INSTALL_DESTINATION ${QP_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/qprecConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/qprecConfig.cmake ${CMAKE_BINARY_DIR}/cmake/qprecConfigVersion.cmake
  DESTINATION ${QP_CMAKE_DIR})

# pkg-config: the shared library needs nothing more (libgomp and libm are
# its own DT_NEEDED; -lm stays in Libs for the headers' inline codecs);
# linking the static one (pkg-config --static) adds OpenMP's flag.
set(QP_PC_OPENMP "")
if(OpenMP_C_FOUND)
  set(QP_PC_OPENMP "${OpenMP_C_FLAGS}")
endif()
file(RELATIVE_PATH QP_PC_PREFIX_FROM_PCDIR ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" QP_PC_PREFIX_FROM_PCDIR "${QP_PC_PREFIX_FROM_PCDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/qprec.pc.in ${CMAKE_BINARY_DIR}/cmake/qprec.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/qprec.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
