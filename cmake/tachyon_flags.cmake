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
endif()
target_include_directories(tachyon_flags INTERFACE ${PROJECT_SOURCE_DIR})
target_compile_definitions(tachyon_flags INTERFACE TACHYON_VERSION="${PROJECT_VERSION}")

# tachyon_add_library(NAME DIR [LINK ...]): a static library from every .cpp of
# DIR and its sub-folders, so that adding a file never needs a CMake edit.
function(tachyon_add_library name dir)
  cmake_parse_arguments(arg "" "" "LINK;EXCLUDE" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${dir}/*.cpp)
  foreach(ex IN LISTS arg_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "${ex}")
  endforeach()
  add_library(${name} STATIC ${sources})
  # The flags are for building tachyon, not for who links it (an installed package carries none).
  target_link_libraries(${name} PUBLIC $<BUILD_INTERFACE:tachyon_flags> ${arg_LINK})
endfunction()
