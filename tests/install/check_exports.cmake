# ctest driver: libtmashmem exports only the C API. Lists the defined dynamic symbols of
# LIBRARY (nm -D --defined-only) and fails on any whose name does not start with
# tmashmem_: C++ internals and the static CUDA runtime's symbols must stay private (an
# application's own libcudart must never interpose on ours, nor ours on it).
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY} OUTPUT_VARIABLE symbols
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed (${rc})")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
set(api "")
set(foreign "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>"
  if(line MATCHES "^[0-9a-fA-F]+ [A-Za-z] ([^ ]+)$")
    set(name ${CMAKE_MATCH_1})
    if(name MATCHES "^tmashmem_")
      list(APPEND api ${name})
    else()
      list(APPEND foreign ${name})
    endif()
  elseif(NOT line STREQUAL "")
    message(FATAL_ERROR "unexpected nm line: '${line}'")
  endif()
endforeach()
list(LENGTH foreign n_foreign)
if(n_foreign GREATER 0)
  list(JOIN foreign "\n  " shown)
  message(FATAL_ERROR "${LIBRARY} exports ${n_foreign} symbols outside the C API:\n  ${shown}")
endif()
# And the C API is still there, from each file that defines part of it.
foreach(required tmashmem_init_attr tmashmem_my_pe tmashmem_malloc tmashmem_signal_op_on_stream
                 tmashmem_last_error)
  if(NOT required IN_LIST api)
    message(FATAL_ERROR "${LIBRARY} does not export ${required}")
  endif()
endforeach()
list(LENGTH api n_api)
message(STATUS "${LIBRARY}: ${n_api} symbols, all tmashmem_*")
