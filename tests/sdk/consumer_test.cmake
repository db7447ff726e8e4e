# An outside project against the installed package (cmake -P; see CMakeLists.txt):
#   cmake -DBUILD_DIR=build/release -DSOURCE=tests/sdk/consumer -DWORK=DIR -DCXX=g++ -DMODEL=m.gguf
#         [-DLINK_FLAGS=-fsanitize=...] -P consumer_test.cmake
# Installs BUILD_DIR into WORK/prefix, configures and builds SOURCE with only
# that prefix to find tachyon in, and runs the consumer on MODEL.
cmake_minimum_required(VERSION 3.25)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix)
# Nothing of the source tree is visible to the consumer: it finds tachyon in the prefix only.
run("configuring the consumer" ${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
    "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
run("building the consumer" ${CMAKE_COMMAND} --build ${WORK}/build)
run("running the consumer" ${WORK}/build/consumer ${MODEL})
message("${run_output}")
if(NOT run_output MATCHES "consumer: ok")
  message(FATAL_ERROR "the consumer did not report success")
endif()
file(REMOVE_RECURSE ${WORK})
