# Offline stand-in for the registry's eigen3 port (scripts/check-packages): the registry's port
# downloads Eigen's release archive; this one packages the same Eigen 3.4.0 headers from
# Debian's libeigen3-dev, under the names the registry's port gives them (find_package(Eigen3),
# Eigen3::Eigen).
set(VCPKG_BUILD_TYPE release)
set(EIGEN "/usr/include/eigen3")
if(NOT EXISTS "${EIGEN}/Eigen/Core")
  message(FATAL_ERROR "the eigen3 stand-in packages Debian's Eigen: apt-get install libeigen3-dev")
endif()
file(COPY "${EIGEN}/Eigen" "${EIGEN}/unsupported" DESTINATION "${CURRENT_PACKAGES_DIR}/include/eigen3")
file(WRITE "${CURRENT_PACKAGES_DIR}/share/eigen3/Eigen3Config.cmake" [[
if(NOT TARGET Eigen3::Eigen)
  get_filename_component(_eigen3_prefix "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
  add_library(Eigen3::Eigen INTERFACE IMPORTED)
  set_target_properties(Eigen3::Eigen PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_eigen3_prefix}/include/eigen3")
  unset(_eigen3_prefix)
endif()
]])
include(CMakePackageConfigHelpers)
write_basic_package_version_file("${CURRENT_PACKAGES_DIR}/share/eigen3/Eigen3ConfigVersion.cmake"
  VERSION "${VERSION}" COMPATIBILITY SameMajorVersion ARCH_INDEPENDENT)
vcpkg_install_copyright(FILE_LIST "/usr/share/doc/libeigen3-dev/copyright")
