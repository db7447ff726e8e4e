# Runs one SDK example on a fresh incident (cmake -P; see CMakeLists.txt):
#   cmake -DWORLD=incident-world -DSEED=S -DWORK=DIR -DEXIT_CODES="0|1" -DEXPECT="re1;re2"
#         -P run_example.cmake EXAMPLE [ARGS...]
# Generates incident SEED into WORK/incident and moves its answer aside (the
# tools must not see it), as `tachyon.sh demo` does; replaces @TASK@ and
# @INCIDENT@ in ARGS by the incident's task and directory; runs EXAMPLE and
# passes when its exit status matches EXIT_CODES and its output every EXPECT.
cmake_minimum_required(VERSION 3.25)

# Arguments after the script's own name belong to the example.
set(example_args "")
set(after_script FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_script)
    list(APPEND example_args "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} MATCHES "run_example\\.cmake$")
    set(after_script TRUE)
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${WORLD} generate --seed ${SEED} --out ${WORK}/incident RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "incident-world generate --seed ${SEED} failed (${rc})")
endif()
file(RENAME ${WORK}/incident/answer.json ${WORK}/answer.json)
file(READ ${WORK}/incident/task.txt task)
string(STRIP "${task}" task)

set(command "")
foreach(arg IN LISTS example_args)
  string(REPLACE "@TASK@" "${task}" arg "${arg}")
  string(REPLACE "@INCIDENT@" "${WORK}/incident" arg "${arg}")
  list(APPEND command "${arg}")
endforeach()

execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
message("${err}")
if(NOT rc MATCHES "^(${EXIT_CODES})$")
  message(FATAL_ERROR "exit status ${rc}, expected ${EXIT_CODES}")
endif()
foreach(re IN LISTS EXPECT)
  if(NOT "${out}${err}" MATCHES "${re}")
    message(FATAL_ERROR "the output does not match '${re}'")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
