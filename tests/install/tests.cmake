# cmake --install into a temporary prefix, moved, then used from outside the
# source tree (tests/install/test_install.sh): the tools, the library through
# pkg-config and find_package(qprec), the headers alone, the man pages.
# Included from tests/CMakeLists.txt.
if(TARGET qtrain AND TARGET qsweep AND TARGET qplot AND TARGET qerr AND TARGET quantize)
  add_test(NAME install COMMAND ${CMAKE_CURRENT_LIST_DIR}/test_install.sh ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR}
                                ${CMAKE_CURRENT_BINARY_DIR}/install ${CMAKE_INSTALL_LIBDIR})
  set_tests_properties(install PROPERTIES LABELS "install" TIMEOUT 180)
endif()
