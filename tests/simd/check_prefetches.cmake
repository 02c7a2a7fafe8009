# cmake -DOBJDUMP=<objdump> -DOBJECTS=<objects;...> -P check_prefetches.cmake
# The GEMM's float micro-kernel of every level object heed_dispatch adds (heed_dispatch/<target>/
# level_<level>.cpp) asks for the next panel of W and for C's tile: the disassembly of the
# micro-kernel, or of the panel entry where it is inlined, holds a prefetch instruction.
# gcc 12 at -O2 once deleted those loops (a loop that only prefetches, in a function of its own,
# counted as no effect); simd/arch.hpp's HEED_KEEP keeps them (docs/decisions.md, "Found: gcc
# deleted the GEMM's prefetches").
include(${CMAKE_CURRENT_LIST_DIR}/level_objects.cmake)
heed_level_objects(_objects _levels)
set(_errors "")
foreach(_object _level IN ZIP_LISTS _objects _levels)
  heed_tool_output(_text ${OBJDUMP} -d -C --no-show-raw-insn ${_object})
  # the function's block: from its label to the next blank line
  string(REGEX MATCH "<[^\n]*level_${_level}::gemm_panel_entry<float>\\([^\n]*>:\n([^\n]+\n)*" _entry "${_text}")
  string(REGEX MATCH "<[^\n]*level_${_level}::gemm_micro_kernel<float, float>\\([^\n]*>:\n([^\n]+\n)*" _kernel
         "${_text}")
  if(_entry STREQUAL "")
    string(APPEND _errors "  level_${_level}: no gemm_panel_entry<float> in ${_object}\n")
  elseif(NOT _entry MATCHES "prefetch" AND NOT _kernel MATCHES "prefetch")
    string(APPEND _errors "  level_${_level}: neither gemm_panel_entry<float> nor the micro-kernel it calls holds a prefetch instruction\n")
  endif()
endforeach()
if(NOT _errors STREQUAL "")
  message(FATAL_ERROR "the GEMM's prefetches were optimized away:\n${_errors}")
endif()
list(LENGTH _objects _checked)
message(STATUS "prefetches kept in ${_checked} level objects")
