/*
 * The sandbox launcher (sandbox/launcher.ts): what runs first of every sandboxed command, as
 * root. It joins the sandbox's cgroups, drops to the sandbox user when asked, and execs the
 * rest of its argv: one small exec where a shell and setpriv took two larger ones.
 *
 *   sandbox-launcher [-j FILE]... [-u UID -g GID] -- PROGRAM [ARG]...
 *
 *   -j FILE  writes 0 to FILE, a cgroup's `tasks` (v1) or `cgroup.procs` (v2): the kernel moves
 *            the writer there. In v1 `tasks` moves just the writing thread, without the global
 *            threadgroup lock whose writer waits out an RCU grace period on `cgroup.procs`.
 *   -u, -g   clears the supplementary groups, then sets the real, effective and saved gid and
 *            uid (leaving uid 0 drops every capability), and checks that all of them took.
 *
 * Every failure before the exec exits 125 with a message on stderr, before anything of the
 * sandbox has started; a failed exec exits 127.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAILED 125

static void fail(const char *what, const char *arg) {
  fprintf(stderr, "sandbox-launcher: %s%s%s: %s\n", what, *arg ? " " : "", arg, strerror(errno));
  exit(FAILED);
}

static void join(const char *file) {
  int fd = open(file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open", file);
  if (write(fd, "0", 1) != 1) fail("cannot join", file);
  if (close(fd) != 0) fail("cannot join", file);
}

static long id_of(const char *text) {
  char *end;
  errno = EINVAL;
  long id = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || id < 0 || id > 0x7fffffff) fail("bad id", text);
  return id;
}

static void become(long uid, long gid) {
  uid_t ruid, euid, suid;
  gid_t rgid, egid, sgid;
  if (setgroups(0, NULL) != 0) fail("cannot clear groups", "");
  if (setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) != 0) fail("cannot set gid", "");
  if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) fail("cannot set uid", "");
  errno = EPERM;
  if (getresuid(&ruid, &euid, &suid) != 0 || ruid != uid || euid != uid || suid != uid)
    fail("uid not switched", "");
  if (getresgid(&rgid, &egid, &sgid) != 0 || rgid != gid || egid != gid || sgid != gid)
    fail("gid not switched", "");
  if (getgroups(0, NULL) != 0) fail("groups not cleared", "");
}

int main(int argc, char **argv) {
  long uid = -1, gid = -1;
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
    errno = EINVAL;
    if (i + 1 >= argc) fail("missing value of", argv[i]);
    if (strcmp(argv[i], "-j") == 0) join(argv[i + 1]);
    else if (strcmp(argv[i], "-u") == 0) uid = id_of(argv[i + 1]);
    else if (strcmp(argv[i], "-g") == 0) gid = id_of(argv[i + 1]);
    else fail("unknown option", argv[i]);
  }
  errno = EINVAL;
  if (i + 1 >= argc) fail("no program after", "--");
  if ((uid < 0) != (gid < 0)) fail("-u and -g go together", "");
  if (uid >= 0) become(uid, gid);
  execvp(argv[i + 1], &argv[i + 1]);
  fprintf(stderr, "sandbox-launcher: cannot run %s: %s\n", argv[i + 1], strerror(errno));
  return 127;
}
