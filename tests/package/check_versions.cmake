# cmake -DHEED_SOURCE_DIR=<source> -DHEED_PREFIX=<installed heed> -P check_versions.cmake
# The version is written once, in include/heed/version.hpp; every package description must say
# the same: the installed heedConfigVersion.cmake and heed.pc (generated from it), the vcpkg
# port's vcpkg.json (written by hand, as vcpkg requires) and the Conan recipe (which reads it).
file(STRINGS ${HEED_SOURCE_DIR}/include/heed/version.hpp _lines REGEX "#define HEED_VERSION_(MAJOR|MINOR|PATCH) ")
foreach(_part MAJOR MINOR PATCH)
  string(REGEX REPLACE ".*#define HEED_VERSION_${_part} ([0-9]+).*" "\\1" _${_part} "${_lines}")
endforeach()
set(_version ${_MAJOR}.${_MINOR}.${_PATCH})
set(_errors "")

file(GLOB_RECURSE _config_version ${HEED_PREFIX}/*/heedConfigVersion.cmake)
if(NOT _config_version)
  string(APPEND _errors "no heedConfigVersion.cmake under ${HEED_PREFIX}\n")
else()
  file(STRINGS ${_config_version} _line REGEX "^set\\(PACKAGE_VERSION \"[0-9]")
  string(REGEX REPLACE ".*\"([^\"]*)\".*" "\\1" _found "${_line}")
  if(NOT _found STREQUAL _version)
    string(APPEND _errors "heedConfigVersion.cmake says ${_found}\n")
  endif()
endif()

file(GLOB_RECURSE _pc ${HEED_PREFIX}/*/heed.pc)
if(NOT _pc)
  string(APPEND _errors "no heed.pc under ${HEED_PREFIX}\n")
else()
  file(STRINGS ${_pc} _line REGEX "^Version: ")
  string(REGEX REPLACE "^Version: (.*)$" "\\1" _found "${_line}")
  if(NOT _found STREQUAL _version)
    string(APPEND _errors "heed.pc says ${_found}\n")
  endif()
endif()

file(READ ${HEED_SOURCE_DIR}/ports/heed/vcpkg.json _json)
string(JSON _found GET "${_json}" version)
if(NOT _found STREQUAL _version)
  string(APPEND _errors "ports/heed/vcpkg.json says ${_found}\n")
endif()

# The recipe has no version of its own: set_version() reads version.hpp.
file(READ ${HEED_SOURCE_DIR}/conanfile.py _recipe)
if(_recipe MATCHES "\n    version = ")
  string(APPEND _errors "conanfile.py writes a version of its own\n")
endif()
if(NOT _recipe MATCHES "def set_version\\(self\\):[^\n]*\n[^\n]*\"include\", \"heed\", \"version.hpp\"")
  string(APPEND _errors "conanfile.py's set_version() does not read include/heed/version.hpp\n")
endif()

if(_errors)
  message(FATAL_ERROR "heed ${_version} (version.hpp), but:\n${_errors}")
endif()
message(STATUS "heed ${_version}: version.hpp, heedConfigVersion.cmake, heed.pc, vcpkg.json and conanfile.py agree")
