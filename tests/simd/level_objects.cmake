# Included by the checks of heed_dispatch's level objects (check_level_symbols.cmake,
# check_prefetches.cmake), which run in script mode with -DOBJECTS=<objects;...>.

# heed_level_objects(<objects_var> <levels_var>): the objects among ${OBJECTS} that heed_dispatch
# adds, one per instruction-set level (heed_dispatch/<target>/level_<level>.cpp), and their levels,
# in the same order; a fatal error when there is none.
function(heed_level_objects objects_var levels_var)
  set(_objects "")
  set(_levels "")
  foreach(_object ${OBJECTS})
    if(_object MATCHES "heed_dispatch/.*level_([a-z0-9_]+)\\.cpp\\.o(bj)?$")
      list(APPEND _objects "${_object}")
      list(APPEND _levels "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(NOT _objects)
    message(FATAL_ERROR "no heed_dispatch level objects among: ${OBJECTS}")
  endif()
  set(${objects_var} "${_objects}" PARENT_SCOPE)
  set(${levels_var} "${_levels}" PARENT_SCOPE)
endfunction()

# heed_tool_output(<var> <command> <args...>): what the command writes to its standard output; a
# fatal error when it fails.
function(heed_tool_output var)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE _output RESULT_VARIABLE _result)
  if(NOT _result EQUAL 0)
    list(JOIN ARGN " " _command)
    message(FATAL_ERROR "failed (${_result}): ${_command}")
  endif()
  set(${var} "${_output}" PARENT_SCOPE)
endfunction()
