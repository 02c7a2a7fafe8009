# The layering rules of docs/design.md, checked over the include lines of every header:
#   - dependencies point down: core < simd < io < kernels < nn; a header never includes a
#     header of a layer above its own, nor an umbrella header (heed/heed.hpp, heed/nn.hpp, ...);
#   - a header under a detail/ folder includes heed/core/detail/internal_header_check.hpp first
#     and opens no namespace but heed::detail (and heed, for forward declarations);
#   - a public header defines HEED_INTERNAL_HEADER_ALLOWED before it includes a detail header,
#     and keeps nothing in a detail namespace itself;
#   - only simd/ includes xsimd or intrinsics headers;
#   - simd/'s code sits in the inline namespace of the translation unit's level
#     (heed::simd::inline HEED_SIMD_LEVEL_NAMESPACE, heed::detail::inline ...), except what
#     every level shares: simd/cpu.hpp, simd/detail/cpu_features.hpp, the table type of
#     simd/kernel_table.hpp.
# Usage: cmake -DHEED_INCLUDE_DIR=<dir holding heed/> -P check_layers.cmake (fails on a violation).
cmake_minimum_required(VERSION 3.21)
set(_layers core simd io kernels nn)
file(GLOB_RECURSE _headers RELATIVE ${HEED_INCLUDE_DIR} ${HEED_INCLUDE_DIR}/heed/*.hpp)
set(_errors "")
foreach(_header ${_headers})
  if(NOT _header MATCHES "^heed/([a-z0-9_]+)/")
    continue()  # an umbrella header: it may include everything
  endif()
  set(_layer ${CMAKE_MATCH_1})
  list(FIND _layers ${_layer} _rank)
  if(_rank LESS 0)
    string(APPEND _errors "${_header}: not in a known layer (${_layers})\n")
    continue()
  endif()
  file(STRINGS ${HEED_INCLUDE_DIR}/${_header} _lines)
  set(_allowed OFF)
  set(_first_include "")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^#define HEED_INTERNAL_HEADER_ALLOWED")
      set(_allowed ON)
    endif()
    # (simd/detail's code sits in the inline namespace of its level: heed::detail::inline
    # HEED_SIMD_LEVEL_NAMESPACE, simd/detail/level_namespace.hpp)
    if(_line MATCHES "^namespace ([a-z:_]+)::inline HEED_SIMD_LEVEL_NAMESPACE")
      set(_ns ${CMAKE_MATCH_1})
      if(NOT _layer STREQUAL "simd" OR (NOT _ns STREQUAL "heed::detail" AND NOT _ns STREQUAL "heed::simd"))
        string(APPEND _errors "${_header}: opens the level namespace in ${_ns} (only simd/, in heed::detail or heed::simd)\n")
      elseif(_header MATCHES "/detail/" AND NOT _ns STREQUAL "heed::detail")
        string(APPEND _errors "${_header}: internal code opens namespace ${_ns} (only heed::detail)\n")
      endif()
    elseif(_line MATCHES "^namespace ([a-z:_]+)")
      set(_ns ${CMAKE_MATCH_1})
      # simd/'s code is compiled per level: outside the level namespace only what every level
      # shares (the CPU's features, the kernel table's type)
      if(_layer STREQUAL "simd" AND (_ns STREQUAL "heed::simd" OR _ns STREQUAL "heed::detail") AND
         NOT _header MATCHES "^heed/simd/(cpu|kernel_table|detail/cpu_features)\\.hpp$")
        string(APPEND _errors "${_header}: simd code outside namespace ${_ns}::inline HEED_SIMD_LEVEL_NAMESPACE\n")
      endif()
      if(_header MATCHES "/detail/")
        if(NOT _ns STREQUAL "heed::detail" AND NOT _ns STREQUAL "heed")
          string(APPEND _errors "${_header}: internal code opens namespace ${_ns} (only heed::detail)\n")
        endif()
      elseif(_ns MATCHES "detail")
        string(APPEND _errors "${_header}: a public header opens namespace ${_ns} (internals go under detail/)\n")
      endif()
    endif()
    if(_line MATCHES "^#include <(xsimd/|[a-z0-9]*intrin\\.h)" AND NOT _layer STREQUAL "simd")
      string(APPEND _errors "${_header}: ${_line} outside simd/\n")
    endif()
    if(NOT _line MATCHES "^#include [\"<]heed/([^\">]+)[\">]")
      continue()
    endif()
    set(_included heed/${CMAKE_MATCH_1})
    if(_first_include STREQUAL "")
      set(_first_include ${_included})
    endif()
    if(NOT _included MATCHES "^heed/([a-z0-9_]+)/")
      string(APPEND _errors "${_header}: includes the umbrella header ${_included}\n")
      continue()
    endif()
    list(FIND _layers ${CMAKE_MATCH_1} _included_rank)
    if(_included_rank GREATER _rank)
      string(APPEND _errors "${_header} (layer ${_layer}): includes ${_included}, a layer above its own\n")
    endif()
    if(_included MATCHES "/detail/" AND NOT _header MATCHES "/detail/" AND NOT _allowed)
      string(APPEND _errors "${_header}: includes ${_included} without defining HEED_INTERNAL_HEADER_ALLOWED first\n")
    endif()
  endforeach()
  if(_header MATCHES "/detail/" AND NOT _header STREQUAL "heed/core/detail/internal_header_check.hpp"
     AND NOT _first_include STREQUAL "heed/core/detail/internal_header_check.hpp")
    string(APPEND _errors "${_header}: does not include heed/core/detail/internal_header_check.hpp first\n")
  endif()
endforeach()
list(LENGTH _headers _count)
if(_errors)
  message(FATAL_ERROR "heed's layering is broken:\n${_errors}")
endif()
message(STATUS "heed's layering holds over ${_count} headers")
