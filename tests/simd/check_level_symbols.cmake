# cmake -DNM=<nm> -DOBJECTS=<objects;...> -P check_level_symbols.cmake
# The translation units heed_dispatch adds (one per instruction-set level, heed_dispatch/<target>/
# level_<level>.cpp) may define, for other objects to link to, only what is theirs: symbols in
# heed's namespace of their level (heed::simd::level_<level>, heed::detail::level_<level>), the
# level's table function heed::simd::tables_level_<level>(), and xsimd's templates on the level's
# own architecture types. Anything else (the standard library's or Eigen's inline functions
# compiled with the level's flags) is a weak symbol the linker may pick for a caller of another
# level: an AVX-512 copy run on a CPU without AVX-512.
include(${CMAKE_CURRENT_LIST_DIR}/level_objects.cmake)
heed_level_objects(_objects _levels)
set(_errors "")
foreach(_object _level IN ZIP_LISTS _objects _levels)
  heed_tool_output(_symbols ${NM} -C --defined-only --extern-only ${_object})
  string(REPLACE "\n" ";" _lines "${_symbols}")
  set(_own 0)
  foreach(_line ${_lines})
    if(NOT _line MATCHES "^[0-9a-fA-F]* *[A-Za-z] (.*)$")
      continue()
    endif()
    set(_name "${CMAKE_MATCH_1}")
    if(_name MATCHES "::level_${_level}::" OR _name MATCHES "^heed::simd::tables_level_${_level}\\(\\)"
       OR _name STREQUAL "DW.ref.__gxx_personality_v0")
      math(EXPR _own "${_own} + 1")
      continue()
    endif()
    string(APPEND _errors "  level ${_level}: ${_name}\n")
  endforeach()
  message(STATUS "level ${_level}: ${_own} symbols of its own")
endforeach()
if(_errors)
  message(FATAL_ERROR "symbols a level object shares with the rest of the program:\n${_errors}")
endif()
list(LENGTH _objects _checked)
message(STATUS "${_checked} level objects, each defining only its own symbols")
