/*
 * Preloaded into every gVisor sandbox (sandbox/gvisor/statx-shim.ts). The Sentry of runsc
 * 0.0~20221219 (Debian 12) rejects AT_NO_AUTOMOUNT in statx(2) and fstatat(2) with EINVAL, and
 * coreutils 9 (ls, stat, cp -a, mv…) always passes it, so `ls /` fails. gVisor has no automount
 * points, so the flag means nothing there: these wrappers drop it and make the system call.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#define NO_AUTOMOUNT 0x800

struct statx;
struct stat;

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf) {
  return (int)syscall(SYS_statx, dirfd, path, flags & ~NO_AUTOMOUNT, mask, buf);
}

int fstatat(int dirfd, const char *path, struct stat *buf, int flags) {
  return (int)syscall(SYS_newfstatat, dirfd, path, buf, flags & ~NO_AUTOMOUNT);
}

int fstatat64(int dirfd, const char *path, struct stat *buf, int flags) {
  return (int)syscall(SYS_newfstatat, dirfd, path, buf, flags & ~NO_AUTOMOUNT);
}
