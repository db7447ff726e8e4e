# Compiler flags shared by every tachyon target, applied through tachyon_flags.
add_library(tachyon_flags INTERFACE)
target_compile_options(tachyon_flags INTERFACE -Wall -Wextra -Wpedantic)
if(TACHYON_WARNINGS_AS_ERRORS)
  target_compile_options(tachyon_flags INTERFACE -Werror)
endif()
if(TACHYON_ARCH)
  target_compile_options(tachyon_flags INTERFACE -march=${TACHYON_ARCH})
endif()
if(TACHYON_SANITIZE)
  target_compile_options(tachyon_flags INTERFACE -fsanitize=${TACHYON_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(tachyon_flags INTERFACE -fsanitize=${TACHYON_SANITIZE})
  # clang 14's function-type check (part of "undefined", which g++ does not
  # have) makes its assembler fail on the Asio coroutine frames ("Cannot
  # represent a difference across sections").
  if(TACHYON_SANITIZE MATCHES "undefined" AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(tachyon_flags INTERFACE -fno-sanitize=function)
  endif()
endif()
# The libFuzzer targets live in the sanitizer build: every library carries
# libFuzzer's coverage instrumentation there (tachyon_add_library; the tests,
# linked without libFuzzer, take the sanitizer runtime's no-op hooks), and
# each fuzz/fuzz_*.cpp becomes a target linked with it (tachyon_add_fuzzers).
if(TACHYON_FUZZ AND (NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT TACHYON_SANITIZE MATCHES "address"))
  message(FATAL_ERROR "TACHYON_FUZZ needs clang and TACHYON_SANITIZE with address (the sanitize preset)")
endif()
function(tachyon_add_fuzzers dir lib)
  if(NOT TACHYON_FUZZ)
    return()
  endif()
  file(GLOB fuzzers CONFIGURE_DEPENDS ${dir}/fuzz/fuzz_*.cpp)
  foreach(f IN LISTS fuzzers)
    get_filename_component(n ${f} NAME_WE)
    add_executable(${n} ${f})
    target_link_options(${n} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${n} PRIVATE ${lib})
  endforeach()
endfunction()
# lld, where installed, links in a fraction of GNU ld's time: a sanitized
# test executable in 1.3 s against 4.7 s, and the suite links over a hundred.
include(CheckLinkerFlag)
check_linker_flag(CXX -fuse-ld=lld TACHYON_HAVE_LLD)
if(TACHYON_HAVE_LLD)
  target_link_options(tachyon_flags INTERFACE -fuse-ld=lld)
endif()
target_include_directories(tachyon_flags INTERFACE ${PROJECT_SOURCE_DIR})
target_compile_definitions(tachyon_flags INTERFACE TACHYON_VERSION="${PROJECT_VERSION}")

# tachyon_add_library(NAME DIR [UNITY] [LINK ...]): a static library from every
# .cpp of DIR and its sub-folders, so that adding a file never needs a CMake
# edit. UNITY (with TACHYON_UNITY) compiles it in batches of 8 files: the
# Asio, Beast and simdjson headers and their templates, most of the time of
# each file, are then compiled once a batch. Names in a file's anonymous
# namespace must therefore be unique across its library.
# SANITIZE_O0: under the sanitizers (TACHYON_SANITIZE) the library is built
# at -O0. For the Asio/Beast coroutine code of tools and runtime clang's
# -O1 with ASan and UBSan is most of the sanitize build: runtime's largest
# batch took 103 s at -O1 and 52 s at -O0, and most of the suite's time is
# in processes, sockets and the kernels (inference keeps -O1). simdjson's
# development checks, which follow __OPTIMIZE__ and change its parsers'
# layout, stay off as in every other library and test.
function(tachyon_add_library name dir)
  cmake_parse_arguments(arg "UNITY;SANITIZE_O0" "" "LINK;EXCLUDE" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${dir}/*.cpp)
  foreach(ex IN LISTS arg_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "${ex}")
  endforeach()
  add_library(${name} STATIC ${sources})
  if(TACHYON_FUZZ)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
  if(arg_UNITY AND TACHYON_UNITY)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
  if(arg_SANITIZE_O0 AND TACHYON_SANITIZE)
    target_compile_options(${name} PRIVATE -O0)
    target_compile_definitions(${name} PRIVATE SIMDJSON_DEVELOPMENT_CHECKS=0)
  endif()
  # The flags are for building tachyon, not for who links it (an installed package carries none).
  target_link_libraries(${name} PUBLIC $<BUILD_INTERFACE:tachyon_flags> ${arg_LINK})
endfunction()
