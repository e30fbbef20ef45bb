// Counts the process's calls to dl_iterate_phdr (and the objects they
// visit, and the time in them), printed to stderr at exit: preloaded in
// front of nb's shim, it shows whether libunwind's stacks search the loaded
// objects on each call (its cache missing) or only at first sight. Every
// caller is counted (libgcc's unwinder for C++ exceptions, dlopen, ...), so
// compare with a run without stacks.
//
//   gcc -O2 -shared -fPIC -o count_phdr.so bench/gpu/count_phdr.c -ldl
//   LD_PRELOAD="count_phdr.so libnb_shim.so" NB_STACKS=all python3 bench/decode_loop.py
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <time.h>
#include <stdatomic.h>
static atomic_ulong calls, ns, objs;
typedef int (*cb_t)(struct dl_phdr_info*, size_t, void*);
static int count_cb_wrap(struct dl_phdr_info* i, size_t s, void* d);
struct w { cb_t cb; void* d; };
static int count_cb_wrap(struct dl_phdr_info* i, size_t s, void* d) { struct w* x = d; atomic_fetch_add(&objs, 1); return x->cb(i, s, x->d); }
int dl_iterate_phdr(cb_t cb, void* d) {
  static int (*real)(cb_t, void*);
  if (!real) real = dlsym(RTLD_NEXT, "dl_iterate_phdr");
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
  struct w x = {cb, d};
  int r = real(count_cb_wrap, &x);
  clock_gettime(CLOCK_MONOTONIC, &b);
  atomic_fetch_add(&calls, 1);
  atomic_fetch_add(&ns, (b.tv_sec - a.tv_sec) * 1000000000UL + b.tv_nsec - a.tv_nsec);
  return r;
}
__attribute__((destructor)) static void report(void) {
  fprintf(stderr, "count_phdr: %lu dl_iterate_phdr calls, %lu objects visited, %.3f ms in them\n", (unsigned long)calls, (unsigned long)objs, ns / 1e6);
}
