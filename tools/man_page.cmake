# tools/man_page.cmake — cmake -DTOOL=PATH -DOUT=FILE -P man_page.cmake:
# TOOL --man into FILE, whole or not at all (written beside it, then
# renamed); a tool that fails fails the build. Run by tools/man.cmake.
get_filename_component(_dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${_dir})
execute_process(COMMAND ${TOOL} --man OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "${TOOL} --man failed (${_rc}): ${_err}")
endif()
file(RENAME ${OUT}.tmp ${OUT})
