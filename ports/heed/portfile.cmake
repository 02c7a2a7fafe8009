# vcpkg port of heed (header-only). An overlay port that builds the heed checkout it lives in:
#   vcpkg install heed --overlay-ports=<heed>/ports
# Submitted to the vcpkg registry, the SOURCE_PATH line becomes the release archive,
#   vcpkg_from_github(OUT_SOURCE_PATH SOURCE_PATH REPO <owner>/heed REF "v${VERSION}" SHA512 <its hash>)
# and the rest stays as it is.
set(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../..")
if(NOT EXISTS "${SOURCE_PATH}/include/heed/version.hpp")
  message(FATAL_ERROR "heed's port builds the checkout it lives in (<heed>/ports/heed); ${SOURCE_PATH} is not one")
endif()

set(VCPKG_BUILD_TYPE release)  # headers only: no debug tree

vcpkg_check_features(OUT_FEATURE_OPTIONS feature_options FEATURES openmp HEED_OPENMP)

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    ${feature_options}
    -DHEED_BUILD_TESTS=OFF
    -DHEED_BUILD_BENCHMARKS=OFF
    -DHEED_BUILD_EXAMPLES=OFF
    -DHEED_BUILD_DOCS=OFF
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(CONFIG_PATH share/cmake/heed)
vcpkg_fixup_pkgconfig()

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/lib" "${CURRENT_PACKAGES_DIR}/debug")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
