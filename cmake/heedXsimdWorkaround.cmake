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
