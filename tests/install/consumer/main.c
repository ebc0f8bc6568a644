/* Plain C against the installed headers and library: the host API is C. */
#include <stdio.h>
#include <tmashmem/tmashmem.h>

int main(void) {
  tmashmem_init_attr_t attr;
  tmashmem_init_attr_set_defaults(&attr);
  attr.bootstrap = TMASHMEM_BOOTSTRAP_SINGLE;
  tmashmem_status_t st = tmashmem_init_attr(&attr);
  if (st == TMASHMEM_ERROR_NO_DRIVER || st == TMASHMEM_ERROR_NO_DEVICE) {
    /* Expected on a machine without a GPU: the error must say so. */
    printf("consumer: %s: %s\n", tmashmem_error_string(st), tmashmem_last_error());
    return tmashmem_last_error()[0] ? 0 : 1;
  }
  if (st != TMASHMEM_SUCCESS) {
    printf("consumer: init failed: %s\n", tmashmem_last_error());
    return 1;
  }
  void* p = tmashmem_malloc(4096);
  int ok = p != NULL && tmashmem_ptr(p, 0) == p && tmashmem_free(p) == TMASHMEM_SUCCESS;
  ok = ok && tmashmem_finalize() == TMASHMEM_SUCCESS;
  printf("consumer: %s\n", ok ? "ok" : tmashmem_last_error());
  return ok ? 0 : 1;
}
