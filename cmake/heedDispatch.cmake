# heed_dispatch(<target>): the one line that makes a program built for any x86-64 (or AArch64)
# run heed's kernels at the best instruction-set level its CPU has (docs/design.md,
# "Instruction-set levels, and run-time dispatch"). It adds to <target> one small translation
# unit per level, compiled with that level's flags, each including heed/simd/dispatch_level.ipp,
# and defines HEED_DISPATCH on the target. The level is chosen once per process (heed::cpu_info()
# reports it); HEED_ISA=baseline|v3|v4|v4-bf16|neon lowers it.
# heed_dispatch(<target> SCALAR), on x86-64, also carries the portable one-lane kernels
# (HEED_SIMD_SCALAR), chosen only by HEED_ISA=scalar: heed's tests run them that way.
# Included by heedConfig.cmake, so find_package(heed), vcpkg and Conan users have it.
function(heed_dispatch target)
  cmake_parse_arguments(ARG "SCALAR" "" "" ${ARGN})
  if(NOT TARGET ${target})
    message(FATAL_ERROR "heed_dispatch: ${target} is not a target")
  endif()
  if(MSVC AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(WARNING "heed_dispatch: MSVC is not supported yet; ${target} runs heed's kernels at the level it is built for")
    return()
  endif()
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(_levels baseline v3 v4 v4_bf16)
    set(_flags_baseline -march=x86-64)
    set(_flags_v3 -march=x86-64-v3)
    set(_flags_v4 -march=x86-64-v4)
    set(_flags_v4_bf16 -march=x86-64-v4 -mavx512bf16)
    if(ARG_SCALAR)
      list(PREPEND _levels scalar)
      set(_flags_scalar -march=x86-64 -DHEED_SIMD_SCALAR=1)
      target_compile_definitions(${target} PRIVATE HEED_DISPATCH_SCALAR)
    endif()
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
    set(_levels neon)
    set(_flags_neon -march=armv8-a)
  else()
    message(WARNING "heed_dispatch: no levels for ${CMAKE_SYSTEM_PROCESSOR}; ${target} runs heed's kernels at the level it is built for")
    return()
  endif()
  set(_dir ${CMAKE_CURRENT_BINARY_DIR}/heed_dispatch/${target})
  foreach(_level ${_levels})
    set(_source ${_dir}/level_${_level}.cpp)
    set(_text "// written by heed_dispatch(${target}): heed's kernels at level ${_level}\n#include <heed/simd/dispatch_level.ipp>\n")
    # @ONLY: the text is C++, not a template; written only when it changes (no rebuild at each configure)
    file(CONFIGURE OUTPUT ${_source} CONTENT "${_text}" @ONLY)
    target_sources(${target} PRIVATE ${_source})
    # gcc 12 warns of maybe-uninitialized values in xsimd's AVX-512 code that are not
    set(_options ${_flags_${_level}})
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND _level MATCHES "^v4")
      list(APPEND _options -Wno-maybe-uninitialized -Wno-uninitialized)
    endif()
    # A level object must inline what it calls (xsimd's and Eigen's helpers) into its own
    # namespace: out of line, they are symbols every level defines, and the linker keeps one
    # level's copy for all (ctest simd/dispatch_levels_own_their_symbols). Without optimization
    # (a Debug build's -O0, or -Og) they stay out of line, so the level objects are compiled at
    # -O1 at least in every configuration.
    list(APPEND _options "$<$<NOT:$<OR:$<CONFIG:Release>,$<CONFIG:RelWithDebInfo>,$<CONFIG:MinSizeRel>>>:-O1>")
    # no precompiled header: one made with the target's flags would bring them, or its headers, in
    set_source_files_properties(${_source} TARGET_DIRECTORY ${target} PROPERTIES COMPILE_OPTIONS "${_options}"
                                SKIP_PRECOMPILE_HEADERS ON)
  endforeach()
  target_compile_definitions(${target} PRIVATE HEED_DISPATCH)
  set_property(TARGET ${target} PROPERTY HEED_DISPATCH_LEVELS ${_levels})
endfunction()
