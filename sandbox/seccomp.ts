/**
 * The seccomp filter every sandboxed command runs under, written as a classic BPF program by hand
 * so no libseccomp tooling is needed. bwrap loads it with `--seccomp FD` just before it execs the
 * command, so bwrap's own setup is not filtered.
 *
 * The filter is a deny list on top of what namespaces and dropped capabilities already stop: it
 * refuses the syscalls that widen the kernel's attack surface or undo isolation (ptrace, mounts,
 * new namespaces, keyrings, BPF, perf, userfaultfd, modules, kexec, io_uring, ...) with EPERM, and
 * kills a process that switches to another syscall ABI (32-bit or x32) to get around the list.
 */
import { ProviderUnavailableError } from './provider.js';

/** `struct seccomp_data` offsets. */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
/** Low 32 bits of args[0] (little endian). */
const OFFSET_ARG0_LOW = 16;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;

const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;

const AUDIT_ARCH_X86_64 = 0xc000003e;
const X32_SYSCALL_BIT = 0x40000000;

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET. */
const CLONE_NAMESPACE_FLAGS = 0x7e020000;

/** Syscalls refused with EPERM (x86_64 numbers). */
export const DENIED_SYSCALLS_X86_64: Readonly<Record<string, number>> = {
  ptrace: 101,
  process_vm_readv: 310,
  process_vm_writev: 311,
  mount: 165,
  umount2: 166,
  pivot_root: 155,
  chroot: 161,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  mount_setattr: 442,
  unshare: 272,
  setns: 308,
  keyctl: 250,
  add_key: 248,
  request_key: 249,
  bpf: 321,
  perf_event_open: 298,
  userfaultfd: 323,
  kexec_load: 246,
  kexec_file_load: 320,
  init_module: 175,
  finit_module: 313,
  delete_module: 176,
  reboot: 169,
  swapon: 167,
  swapoff: 168,
  acct: 163,
  syslog: 103,
  quotactl: 179,
  open_by_handle_at: 304,
  name_to_handle_at: 303,
  lookup_dcookie: 212,
  iopl: 172,
  ioperm: 173,
  settimeofday: 164,
  clock_settime: 227,
  clock_adjtime: 305,
  adjtimex: 159,
  vhangup: 153,
  uselib: 134,
  personality: 135,
};

/**
 * Refused with ENOSYS rather than EPERM: libraries probe these and fall back when the kernel
 * "does not have" them (glibc's clone3 falls back to clone, whose flags the filter can inspect;
 * libuv falls back from io_uring to its thread pool).
 */
export const UNAVAILABLE_SYSCALLS_X86_64: Readonly<Record<string, number>> = {
  clone3: 435,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
};

const CLONE_X86_64 = 56;

interface Insn {
  code: number;
  jt: number | string;
  jf: number | string;
  k: number;
}

/** Resolves label jumps to relative offsets and encodes `struct sock_filter`s. */
function assemble(program: (Insn | { label: string })[]): Buffer {
  const insns: Insn[] = [];
  const labels = new Map<string, number>();
  for (const item of program) {
    if ('label' in item) labels.set(item.label, insns.length);
    else insns.push(item);
  }
  const offset = (target: number | string, at: number): number => {
    if (typeof target === 'number') return target;
    const to = labels.get(target);
    if (to === undefined || to <= at || to - at - 1 > 255) throw new Error(`bad jump to ${target}`);
    return to - at - 1;
  };
  const buf = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, i) => {
    buf.writeUInt16LE(insn.code, i * 8);
    buf.writeUInt8(offset(insn.jt, i), i * 8 + 2);
    buf.writeUInt8(offset(insn.jf, i), i * 8 + 3);
    buf.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return buf;
}

const ld = (k: number): Insn => ({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k });
const ret = (k: number): Insn => ({ code: BPF_RET_K, jt: 0, jf: 0, k });

/** The compiled filter for the host's architecture (x86_64 only). */
export function seccompProgram(arch: string = process.arch): Buffer {
  if (arch !== 'x64') {
    throw new ProviderUnavailableError(
      `no seccomp syscall table for ${arch}; run the bubblewrap provider with seccomp: false`,
    );
  }
  const deny = Object.values(DENIED_SYSCALLS_X86_64);
  const unavailable = Object.values(UNAVAILABLE_SYSCALLS_X86_64);
  return assemble([
    ld(OFFSET_ARCH),
    { code: BPF_JEQ_K, jt: 1, jf: 0, k: AUDIT_ARCH_X86_64 },
    ret(SECCOMP_RET_KILL_PROCESS),
    ld(OFFSET_NR),
    { code: BPF_JGE_K, jt: 'kill', jf: 0, k: X32_SYSCALL_BIT },
    ...deny.map((nr): Insn => ({ code: BPF_JEQ_K, jt: 'eperm', jf: 0, k: nr })),
    ...unavailable.map((nr): Insn => ({ code: BPF_JEQ_K, jt: 'enosys', jf: 0, k: nr })),
    { code: BPF_JEQ_K, jt: 0, jf: 'allow', k: CLONE_X86_64 },
    ld(OFFSET_ARG0_LOW),
    { code: BPF_JSET_K, jt: 'eperm', jf: 'allow', k: CLONE_NAMESPACE_FLAGS },
    { label: 'allow' },
    ret(SECCOMP_RET_ALLOW),
    { label: 'eperm' },
    ret(SECCOMP_RET_ERRNO | EPERM),
    { label: 'enosys' },
    ret(SECCOMP_RET_ERRNO | ENOSYS),
    { label: 'kill' },
    ret(SECCOMP_RET_KILL_PROCESS),
  ]);
}
