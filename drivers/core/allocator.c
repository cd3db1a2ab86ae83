/*
 * The allocator the driver runs on, read back: which shared object the process's malloc
 * resolves to. The runner preloads another allocator (jemalloc, tcmalloc, mimalloc:
 * LD_PRELOAD) and names, in TLSBENCH_ALLOCATOR, the file name of the object malloc must
 * then come from ("libc.so.6" for glibc's own); a run whose malloc comes from anywhere else
 * (a preload that did not load, an allocator the environment slipped in, the heap driver's
 * own wrappers) is a mismatch, never a sample of the wrong allocator.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* The path of the object that defines the malloc every caller of this process reaches
 * (the first definition in the lookup order: the executable, the preloaded objects, then
 * the libraries), "" when it cannot be told. */
static const char *malloc_object(void) {
  void *fn = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info;
  if (fn == NULL || dladdr(fn, &info) == 0 || info.dli_fname == NULL) return "";
  return info.dli_fname;
}

int tb_check_allocator(tb_run *r, tb_json *j) {
  const char *expected = getenv("TLSBENCH_ALLOCATOR");
  if (expected == NULL) return TB_EXIT_OK;
  const char *object = malloc_object();
  const char *slash = strrchr(object, '/');
  const char *name = slash != NULL ? slash + 1 : object;
  tb_json_object(j, "allocator");
  tb_json_str(j, "expected", expected);
  tb_json_str(j, "malloc", object);
  tb_json_object_end(j);
  if (strcmp(name, expected) != 0) {
    snprintf(r->err, sizeof(r->err), "malloc comes from %s, not %s as the run asked",
             object[0] != '\0' ? object : "an object dladdr cannot name", expected);
    return tb_fail_stage(r, TB_EXIT_MISMATCH, "allocator");
  }
  return TB_EXIT_OK;
}
