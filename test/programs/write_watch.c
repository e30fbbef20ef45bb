/* A witness for "nb writes nothing outside its output prefix":
 * preloaded beside the shim, it sees every call that can create or change a
 * file by name (open for writing, creat, fopen for writing, mkdir, rename,
 * link, symlink, unlink, truncate) made through the PLT, the shim's
 * included, and appends the path to $WRITE_WATCH_LOG, one per line, then
 * forwards to libc. Writes its log with system calls, so it never watches
 * itself. Not a sandbox: a raw system call would pass unseen; the shim makes
 * none that create files. */
/* Both open and open64 are defined here: no redirection of one to the other. */
#undef _FILE_OFFSET_BITS
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void note(const char* what, const char* path) {
  const char* log = getenv("WRITE_WATCH_LOG");
  if (log == NULL || path == NULL) return;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  char line[4352];
  int n = snprintf(line, sizeof line, "%s %s\n", what, path);
  if (n > 0) syscall(SYS_write, fd, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
  syscall(SYS_close, fd);
}

static int writes(int flags) { return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0; }

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

#define OPEN_LIKE(name, ...)                                    \
  {                                                             \
    mode_t mode = 0;                                            \
    if (flags & (O_CREAT | O_TMPFILE)) {                        \
      va_list ap;                                               \
      va_start(ap, flags);                                      \
      mode = va_arg(ap, mode_t);                                \
      va_end(ap);                                               \
    }                                                           \
    /* An unnamed file in a directory (it never has a name). */ \
    if ((flags & O_TMPFILE) == O_TMPFILE) note("tmpfile", path); \
    else if (writes(flags)) note(#name, path);                  \
    return NEXT(name)(__VA_ARGS__, flags, mode);                \
  }

int open(const char* path, int flags, ...) OPEN_LIKE(open, path)
int open64(const char* path, int flags, ...) OPEN_LIKE(open64, path)
int openat(int dir, const char* path, int flags, ...) OPEN_LIKE(openat, dir, path)
int openat64(int dir, const char* path, int flags, ...) OPEN_LIKE(openat64, dir, path)

int creat(const char* path, mode_t mode) { note("creat", path); return NEXT(creat)(path, mode); }
int creat64(const char* path, mode_t mode) { note("creat64", path); return NEXT(creat64)(path, mode); }
FILE* fopen(const char* path, const char* mode) {
  if (strpbrk(mode, "wa+")) note("fopen", path);
  return NEXT(fopen)(path, mode);
}
FILE* fopen64(const char* path, const char* mode) {
  if (strpbrk(mode, "wa+")) note("fopen64", path);
  return NEXT(fopen64)(path, mode);
}
int mkdir(const char* path, mode_t mode) { note("mkdir", path); return NEXT(mkdir)(path, mode); }
int mkdirat(int dir, const char* path, mode_t mode) { note("mkdirat", path); return NEXT(mkdirat)(dir, path, mode); }
int rename(const char* from, const char* to) {
  note("rename-from", from);
  note("rename-to", to);
  return NEXT(rename)(from, to);
}
int renameat(int fd1, const char* from, int fd2, const char* to) {
  note("renameat-from", from);
  note("renameat-to", to);
  return NEXT(renameat)(fd1, from, fd2, to);
}
int link(const char* from, const char* to) { note("link", to); return NEXT(link)(from, to); }
int symlink(const char* target, const char* path) { note("symlink", path); return NEXT(symlink)(target, path); }
int unlink(const char* path) { note("unlink", path); return NEXT(unlink)(path); }
int unlinkat(int dir, const char* path, int flags) { note("unlinkat", path); return NEXT(unlinkat)(dir, path, flags); }
int truncate(const char* path, off_t len) { note("truncate", path); return NEXT(truncate)(path, len); }
