# tools/man.cmake — the man pages of qtrain, qsweep, qplot and qerr, written
# at build time by each built tool's --man into build/share/man/man1/TOOL.1
# (the tree `cmake --install` copies to PREFIX/share/man/man1). A tool's
# --man prints the option table its parser reads (io/qp_cli.h), so a page
# lists every option --help does. Included from the top-level CMakeLists.txt
# after every tool's folder.
set(QP_MAN_DIR ${CMAKE_BINARY_DIR}/share/man/man1)
set(_qp_man_pages)
foreach(_tool qtrain qsweep qplot qerr)
  if(TARGET ${_tool})
    add_custom_command(OUTPUT ${QP_MAN_DIR}/${_tool}.1
      COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:${_tool}> -DOUT=${QP_MAN_DIR}/${_tool}.1
              -P ${CMAKE_CURRENT_LIST_DIR}/man_page.cmake
      DEPENDS ${_tool} ${CMAKE_CURRENT_LIST_DIR}/man_page.cmake
      COMMENT "man page ${_tool}.1 (${_tool} --man)" VERBATIM)
    list(APPEND _qp_man_pages ${QP_MAN_DIR}/${_tool}.1)
  endif()
endforeach()
add_custom_target(qp_man_pages ALL DEPENDS ${_qp_man_pages})
