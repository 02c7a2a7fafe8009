# Offline stand-in for the registry's xsimd port (scripts/check-packages): the registry's port
# downloads xsimd's release archive; this one packages Debian's xsimd 8.1.0 headers
# (libxsimd-dev), under the names the registry's port gives them (find_package(xsimd), target
# xsimd).
set(VCPKG_BUILD_TYPE release)
if(NOT EXISTS "/usr/include/xsimd/xsimd.hpp")
  message(FATAL_ERROR "the xsimd stand-in packages Debian's xsimd: apt-get install libxsimd-dev")
endif()
file(COPY "/usr/include/xsimd" DESTINATION "${CURRENT_PACKAGES_DIR}/include")
file(WRITE "${CURRENT_PACKAGES_DIR}/share/xsimd/xsimdConfig.cmake" [[
if(NOT TARGET xsimd)
  get_filename_component(_xsimd_prefix "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
  add_library(xsimd INTERFACE IMPORTED)
  set_target_properties(xsimd PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_xsimd_prefix}/include")
  unset(_xsimd_prefix)
endif()
]])
include(CMakePackageConfigHelpers)
write_basic_package_version_file("${CURRENT_PACKAGES_DIR}/share/xsimd/xsimdConfigVersion.cmake"
  VERSION "${VERSION}" COMPATIBILITY AnyNewerVersion ARCH_INDEPENDENT)
vcpkg_install_copyright(FILE_LIST "/usr/share/doc/libxsimd-dev/copyright")
