# Debian 12's xsimd 8.1 exports a target whose INTERFACE_LINK_LIBRARIES names `xtl`,
# a target that package does not provide, so every consumer fails to link with -lxtl.
# xsimd itself does not need xtl. Drop the dangling name; a healthy xsimd (one that
# does not name xtl, or where a real xtl target exists) is left untouched.
if(TARGET xsimd AND NOT TARGET xtl)
  get_target_property(_heed_xsimd_libs xsimd INTERFACE_LINK_LIBRARIES)
  if(_heed_xsimd_libs AND "xtl" IN_LIST _heed_xsimd_libs)
    find_package(xtl QUIET CONFIG)
    if(NOT TARGET xtl)
      list(REMOVE_ITEM _heed_xsimd_libs xtl)
      set_property(TARGET xsimd PROPERTY INTERFACE_LINK_LIBRARIES "${_heed_xsimd_libs}")
    endif()
  endif()
  unset(_heed_xsimd_libs)
endif()

# A cross build for a system with its own C library (cmake/x86_64-w64-mingw32.cmake) cannot take
# Debian's xsimd through its include directory, /usr/include, whose glibc headers would shadow the
# target's: the toolchain file names HEED_XSIMD_ONLY_INCLUDE_DIR, a folder where xsimd alone is
# linked, and the target is pointed there.
if(TARGET xsimd AND HEED_XSIMD_ONLY_INCLUDE_DIR)
  get_target_property(_heed_xsimd_includes xsimd INTERFACE_INCLUDE_DIRECTORIES)
  if(_heed_xsimd_includes MATCHES "^/usr/include/?$" AND EXISTS /usr/include/xsimd/xsimd.hpp)
    file(MAKE_DIRECTORY ${HEED_XSIMD_ONLY_INCLUDE_DIR})
    file(CREATE_LINK /usr/include/xsimd ${HEED_XSIMD_ONLY_INCLUDE_DIR}/xsimd SYMBOLIC)
    set_property(TARGET xsimd PROPERTY INTERFACE_INCLUDE_DIRECTORIES ${HEED_XSIMD_ONLY_INCLUDE_DIR})
  endif()
  unset(_heed_xsimd_includes)
endif()
