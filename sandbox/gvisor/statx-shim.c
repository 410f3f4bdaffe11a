/*
 * Preloaded into every gVisor sandbox (sandbox/gvisor/statx-shim.ts). The Sentry of runsc
 * 0.0~20221219 (Debian 12) rejects AT_NO_AUTOMOUNT in statx(2) and fstatat(2) with EINVAL, and
 * coreutils 9 (ls, stat, cp -a, mv…) always passes it, so `ls /` fails. gVisor has no automount
 * points, so the flag means nothing there: these wrappers drop it and make the system call.
 *
 * Built without the C library (-nostdlib), so it loads into glibc and musl programs alike: the
 * only symbol it needs, __errno_location, both of them provide.
 */
#define NO_AUTOMOUNT 0x800
#define SYS_NEWFSTATAT 262
#define SYS_STATX 332

int *__errno_location(void);

static long syscall5(long nr, long a, long b, long c, long d, long e) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                   : "rcx", "r11", "memory");
  if (ret < 0 && ret > -4096) {
    *__errno_location() = (int)-ret;
    return -1;
  }
  return ret;
#else
#error "the statx shim is written for x86_64"
#endif
}

struct statx;
struct stat;

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf) {
  return (int)syscall5(SYS_STATX, dirfd, (long)path, flags & ~NO_AUTOMOUNT, mask, (long)buf);
}

int fstatat(int dirfd, const char *path, struct stat *buf, int flags) {
  return (int)syscall5(SYS_NEWFSTATAT, dirfd, (long)path, (long)buf, flags & ~NO_AUTOMOUNT, 0);
}

int fstatat64(int dirfd, const char *path, struct stat *buf, int flags) {
  return fstatat(dirfd, path, buf, flags);
}
