# Checks the include arrows of the source tree against the layers README's
# "Layout" section writes down: between the top-level folders (base <-
# inference, tools <- runtime) and between the rooms inside runtime/ and
# inference/, each of which may include only the rooms before it in its
# list. Run as `cmake -DSOURCE_DIR=... -P check_layers.cmake`; every include
# against the order is printed with its file and line, and the check fails.
cmake_minimum_required(VERSION 3.25)

# Rooms, lowest first. Folders not listed (fuzz/, tools_gen/, the public
# include/ headers) are not rooms: fuzz targets may use any room, the public
# headers none (they are checked below).
set(rooms_runtime common formats constrain chat remote journal telemetry prediction agent db mcp serve cli bench sdk)
set(rooms_inference gguf kv kernels tokenizer arch engine)
set(rooms_tools core logformat logs host mcp)
# What each top-level folder must not include.
set(forbidden_base "runtime/" "inference/" "tools/" "examples/" "boost/")
set(forbidden_inference "runtime/" "tools/" "examples/" "boost/asio" "boost/beast")
set(forbidden_tools "runtime/" "inference/" "examples/")
set(forbidden_runtime "examples/")

set(violations 0)
foreach(top base inference tools runtime)
  file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${top}/*.h ${SOURCE_DIR}/${top}/*.cpp)
  foreach(f IN LISTS files)
    file(STRINGS ${SOURCE_DIR}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    string(REPLACE "/" ";" parts ${f})
    list(LENGTH parts depth)
    set(room "")
    if(depth GREATER 2)
      list(GET parts 1 room)
    endif()
    set(rank -1)
    if(DEFINED rooms_${top})
      list(FIND rooms_${top} "${room}" rank)
    endif()
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" inc "${line}")
      foreach(bad IN LISTS forbidden_${top})
        string(FIND "${inc}" "${bad}" at)
        if(at EQUAL 0)
          message("${f}: includes ${inc}: ${top}/ must not use ${bad}")
          math(EXPR violations "${violations} + 1")
        endif()
      endforeach()
      if(f MATCHES "^runtime/include/" AND inc MATCHES "^(runtime|inference|tools|base)/")
        message("${f}: includes ${inc}: the public headers use only <tachyon/...> and the standard library")
        math(EXPR violations "${violations} + 1")
      endif()
      if(rank GREATER_EQUAL 0 AND inc MATCHES "^${top}/([a-z_]+)/")
        set(target_room ${CMAKE_MATCH_1})
        list(FIND rooms_${top} "${target_room}" target_rank)
        if(NOT target_room STREQUAL room AND (target_rank LESS 0 OR target_rank GREATER rank))
          message("${f}: includes ${inc}: ${top}/${room}/ may use only the rooms before it (${rooms_${top}})")
          math(EXPR violations "${violations} + 1")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations GREATER 0)
  message(FATAL_ERROR "${violations} include(s) against the layers")
endif()
message("layers: every include follows the order")
