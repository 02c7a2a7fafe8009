# cmake -DOBJDUMP=<objdump> -DOBJECTS=<objects;...> -P check_prefetches.cmake
# The GEMM's panel entry of every level object heed_dispatch adds (heed_dispatch/<target>/
# level_<level>.cpp) asks for the next panel of W: its disassembly holds a prefetch instruction.
# gcc 12 at -O2 once deleted those loops (a loop that only prefetches, in a function of its own,
# counted as no effect); simd/arch.hpp's HEED_KEEP keeps them (docs/decisions.md, "Found: gcc
# deleted the GEMM's prefetches").
set(_checked 0)
set(_errors "")
foreach(_object ${OBJECTS})
  if(NOT _object MATCHES "heed_dispatch/.*level_([a-z0-9_]+)\\.cpp\\.o(bj)?$")
    continue()
  endif()
  set(_level ${CMAKE_MATCH_1})
  math(EXPR _checked "${_checked} + 1")
  execute_process(COMMAND ${OBJDUMP} -d -C --no-show-raw-insn ${_object} OUTPUT_VARIABLE _text RESULT_VARIABLE _result)
  if(NOT _result EQUAL 0)
    message(FATAL_ERROR "${OBJDUMP} failed on ${_object}")
  endif()
  # the function's block: from its label to the next blank line
  string(REGEX MATCH "<[^\n]*level_${_level}::gemm_panel_entry<float>\\([^\n]*>:\n([^\n]+\n)*" _entry "${_text}")
  if(_entry STREQUAL "")
    string(APPEND _errors "  level_${_level}: no gemm_panel_entry<float> in ${_object}\n")
  elseif(NOT _entry MATCHES "prefetch")
    string(APPEND _errors "  level_${_level}: gemm_panel_entry<float> holds no prefetch instruction\n")
  endif()
endforeach()
if(_checked EQUAL 0)
  message(FATAL_ERROR "no level objects among: ${OBJECTS}")
endif()
if(NOT _errors STREQUAL "")
  message(FATAL_ERROR "the GEMM's prefetches were optimized away:\n${_errors}")
endif()
message(STATUS "prefetches kept in ${_checked} level objects")
