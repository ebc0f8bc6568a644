# Warnings for the project's own code; errors when TMASHMEM_WERROR is ON (CI).
add_library(tmashmem_warnings INTERFACE)
target_compile_options(tmashmem_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${TMASHMEM_WERROR}>>:-Werror>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${TMASHMEM_WERROR}>>:-Werror=all-warnings>)
