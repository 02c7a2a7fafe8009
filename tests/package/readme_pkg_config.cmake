# cmake -DREADME=<README.md> -DPREFIX=<installed heed> -DSOURCE=<app.cpp> -DWORK=<dir> -P readme_pkg_config.cmake
# Runs the README's command line for a build without CMake (the line that calls
# `pkg-config --cflags heed`) as a user would copy it, against heed installed to PREFIX, with
# SOURCE for app.cpp; then runs the program it built.
file(STRINGS ${README} _lines REGEX "^c\\+\\+ .*\\$\\(pkg-config --cflags heed\\).* app\\.cpp")
list(LENGTH _lines _n)
if(NOT _n EQUAL 1)
  message(FATAL_ERROR "README.md should have one command line `c++ ... $(pkg-config --cflags heed) ... app.cpp`, found ${_n}")
endif()
file(MAKE_DIRECTORY ${WORK})
file(COPY_FILE ${SOURCE} ${WORK}/app.cpp)
file(GLOB_RECURSE _pc ${PREFIX}/*/heed.pc)
get_filename_component(_pc_dir "${_pc}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${_pc_dir})
message(STATUS "running in ${WORK} with PKG_CONFIG_PATH=${_pc_dir}: ${_lines}")
execute_process(COMMAND sh -c "${_lines}" WORKING_DIRECTORY ${WORK} RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "the README's pkg-config line failed (exit ${_rc})")
endif()
file(GLOB _built ${WORK}/app ${WORK}/a.out)
execute_process(COMMAND ${_built} RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "the program built by the README's pkg-config line failed (exit ${_rc})")
endif()
