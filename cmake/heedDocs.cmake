# The `docs` target: heed's API reference in HTML, by Doxygen (Debian: doxygen, graphviz), over
# the public headers only, with the README as its main page. An undocumented public entity or a
# broken doc comment fails the build (docs/Doxyfile.in: WARN_AS_ERROR). Output:
# <build>/docs/html/index.html. Without Doxygen there is no target, and a status line says so.
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "heed: no Doxygen, so no `docs` target (apt-get install doxygen graphviz)")
  return()
endif()
set(HEED_DOCS_OUTPUT ${PROJECT_BINARY_DIR}/docs)
set(HEED_HAVE_DOT NO)
if(DOXYGEN_DOT_FOUND)
  set(HEED_HAVE_DOT YES)
endif()
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${HEED_DOCS_OUTPUT}/Doxyfile @ONLY)
file(GLOB_RECURSE _heed_public_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/heed/*.hpp)
add_custom_command(
  OUTPUT ${HEED_DOCS_OUTPUT}/html/index.html
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${HEED_DOCS_OUTPUT}/html
  COMMAND Doxygen::doxygen ${HEED_DOCS_OUTPUT}/Doxyfile
  DEPENDS ${HEED_DOCS_OUTPUT}/Doxyfile ${PROJECT_SOURCE_DIR}/README.md ${_heed_public_headers}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  COMMENT "heed: the API reference (Doxygen), warnings as errors"
  VERBATIM)
add_custom_target(docs DEPENDS ${HEED_DOCS_OUTPUT}/html/index.html)
