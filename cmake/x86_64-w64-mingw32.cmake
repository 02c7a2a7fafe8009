# Cross-compiles heed's tests for 64-bit Windows with Debian's MinGW-w64 (the POSIX-threads g++,
# for std::thread and OpenMP) and runs them under wine64 (ctest prefixes every test executable
# with the emulator).
#   apt-get install g++-mingw-w64-x86-64-posix wine64
#   cmake --workflow --preset mingw            (or: bash scripts/test-windows)
# Eigen and xsimd are headers: the host's copies serve the target, each through a folder of its
# own (xsimd's Debian config names /usr/include, whose glibc headers must not shadow MinGW's).
# GoogleTest is built for the target from Debian's sources in /usr/src/googletest
# (tests/CMakeLists.txt). Programs are linked statically (libstdc++, libgcc, winpthreads, libgomp),
# so wine needs no DLL search path.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)

find_program(HEED_MINGW_CXX x86_64-w64-mingw32-g++-posix)
find_program(HEED_WINE64 NAMES wine64 PATHS /usr/lib/wine NO_DEFAULT_PATH)  # Debian's wine64 package puts it there
if(NOT EXISTS "${HEED_MINGW_CXX}" OR NOT EXISTS "${HEED_WINE64}")
  # (the leading space keeps CMake from wrapping the message: one line to copy)
  message(FATAL_ERROR " heed: the Windows build needs Debian's MinGW-w64 and wine: apt-get install g++-mingw-w64-x86-64-posix wine64")
endif()
set(CMAKE_CXX_COMPILER ${HEED_MINGW_CXX})
string(REGEX REPLACE "g\\+\\+-posix$" "gcc-posix" HEED_MINGW_CC "${HEED_MINGW_CXX}")
set(CMAKE_C_COMPILER ${HEED_MINGW_CC})  # GoogleTest's project enables C
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_CROSSCOMPILING_EMULATOR /bin/sh ${CMAKE_CURRENT_LIST_DIR}/wine-run.sh ${HEED_WINE64})

include(${CMAKE_CURRENT_LIST_DIR}/heedCrossSysroot.cmake)
heed_cross_sysroot(/usr/x86_64-w64-mingw32)
# heedXsimdWorkaround.cmake points the xsimd target here when its include directory is a
# system-wide one: a folder that holds xsimd alone.
set(HEED_XSIMD_ONLY_INCLUDE_DIR ${CMAKE_BINARY_DIR}/xsimd-only-include)
# FindOpenMP names libgomp's import library by its full path, which -static does not turn into the
# static one: name the static one.
execute_process(COMMAND ${HEED_MINGW_CXX} -print-file-name=libgomp.a OUTPUT_VARIABLE _heed_libgomp
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(EXISTS "${_heed_libgomp}")
  set(OpenMP_gomp_LIBRARY ${_heed_libgomp} CACHE FILEPATH "libgomp, static (cmake/x86_64-w64-mingw32.cmake)")
endif()
