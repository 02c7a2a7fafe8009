# Included by the cross toolchain files (aarch64-linux-gnu.cmake, x86_64-w64-mingw32.cmake):
#   heed_cross_sysroot(<sysroot>)
# Libraries come from the target's sysroot; headers and CMake packages also from the host, for
# Eigen's and xsimd's architecture-independent configs. Debian installs xsimd's (header-only)
# CMake config under the host's multiarch directory, which a search for the target does not
# visit: xsimd_DIR points there.
macro(heed_cross_sysroot sysroot)
  set(CMAKE_FIND_ROOT_PATH ${sysroot})
  set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
  set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
  set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
  foreach(_dir /usr/lib/x86_64-linux-gnu/cmake/xsimd /usr/lib/cmake/xsimd /usr/share/cmake/xsimd)
    if(EXISTS ${_dir}/xsimdConfig.cmake AND NOT xsimd_DIR)
      set(xsimd_DIR ${_dir} CACHE PATH "xsimd's CMake config (headers only: the host's serves the target)")
    endif()
  endforeach()
endmacro()
