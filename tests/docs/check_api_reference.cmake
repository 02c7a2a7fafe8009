# cmake -DHEED_BINARY_DIR=<build> -P check_api_reference.cmake
# Builds the `docs` target (Doxygen, warnings as errors: an undocumented public entity fails it)
# and checks what came out: the README as the main page, the public classes each with a page,
# nothing of namespace heed::detail.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${HEED_BINARY_DIR} --target docs
                RESULT_VARIABLE _result OUTPUT_VARIABLE _output ERROR_VARIABLE _output)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "the docs target failed:\n${_output}")
endif()
set(_html ${HEED_BINARY_DIR}/docs/html)
file(READ ${_html}/index.html _index)
if(NOT _index MATCHES "heed is a header-only C\\+\\+20 library of tensors and attention")
  message(FATAL_ERROR "${_html}/index.html is not the README")
endif()
foreach(_page classheed_1_1Tensor classheed_1_1nn_1_1MultiheadAttention classheed_1_1io_1_1SafeTensors
              structheed_1_1mask_1_1Causal classheed_1_1mask_1_1BlockSparse)
  if(NOT EXISTS ${_html}/${_page}.html)
    message(FATAL_ERROR "no page ${_page}.html in ${_html}")
  endif()
endforeach()
file(GLOB _detail ${_html}/*1_1detail*)
if(_detail)
  message(FATAL_ERROR "internal pages in the API reference: ${_detail}")
endif()
file(GLOB _pages ${_html}/*.html)
list(LENGTH _pages _count)
message(STATUS "API reference: ${_count} pages in ${_html}, the README as the main page")
