/**
 * The host-side filesystem work of creating and removing sandboxes (mounts, the directories on
 * them, their owners) done by one long-lived helper process that makes the system calls itself,
 * a batch per request, instead of a `mount` or `umount` process per call: a process spawned from
 * a large Node process costs milliseconds, a call microseconds. The helper is Python (ctypes) from
 * the host's `/usr/bin/python3`, started on first use; it ends when this process does (its stdin
 * closes).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { ProviderUnavailableError } from './provider.js';

/** mount(2) flags the sandboxes use. */
const MOUNT_FLAGS = { rdonly: 1, nosuid: 2, nodev: 4 } as const;
export type MountFlag = keyof typeof MOUNT_FLAGS;

/** errno names an operation may be allowed to fail with (then it counts as done). */
export type Tolerated = 'ENOENT' | 'EEXIST' | 'EINVAL';

/** One system call; `tolerate` lists the failures that are fine (already done, nothing there). */
export type HostOp = { tolerate?: Tolerated[] } & (
  | { op: 'mount'; fstype: string; source: string; target: string; flags: MountFlag[]; data: string }
  /** umount2(2); detaches lazily when the mount is busy. */
  | { op: 'umount'; target: string }
  /** mkdir(2) with exactly `mode` (no umask), then chown(2) to `owner` when given. */
  | { op: 'mkdir'; path: string; mode: number; owner?: { uid: number; gid: number } }
  | { op: 'rmdir'; path: string }
  | { op: 'unlink'; path: string }
);

/** Runs each request's operations in order and stops at the first that fails untolerated. */
const HELPER = `import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
os.umask(0)
def call(r):
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
def run(op):
    kind = op["op"]
    if kind == "mount":
        call(libc.mount(op["source"].encode(), op["target"].encode(), op["fstype"].encode(), ctypes.c_ulong(op["flags"]), op["data"].encode()))
    elif kind == "umount":
        try:
            call(libc.umount2(op["target"].encode(), 0))
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise
            call(libc.umount2(op["target"].encode(), 2))
    elif kind == "mkdir":
        os.mkdir(op["path"], op["mode"])
        if "owner" in op:
            os.chown(op["path"], op["owner"]["uid"], op["owner"]["gid"])
    elif kind == "rmdir":
        os.rmdir(op["path"])
    elif kind == "unlink":
        os.unlink(op["path"])
for line in sys.stdin:
    req = json.loads(line)
    reply = {"id": req["id"], "failed": None, "code": "", "error": ""}
    for i, op in enumerate(req["ops"]):
        try:
            run(op)
        except OSError as e:
            if errno.errorcode.get(e.errno) in op.get("tolerate", []):
                continue
            reply["failed"] = i
            reply["code"] = errno.errorcode.get(e.errno, str(e.errno))
            reply["error"] = e.strerror
            break
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
`;

const ReplySchema = z.object({
  id: z.number().int(),
  failed: z.number().int().nullable(),
  code: z.string(),
  error: z.string(),
});
type Reply = z.infer<typeof ReplySchema>;

/** The host's own interpreter, not a per-user shim: it must start fast and be there for root. */
const PYTHON = '/usr/bin/python3';

/** An operation of a batch failed; `index` says which. */
export class HostOpError extends ProviderUnavailableError {
  override name = 'HostOpError';
  constructor(
    readonly op: HostOp,
    readonly index: number,
    /** The errno's name, e.g. `EBUSY`. */
    readonly code: string,
    reason: string,
  ) {
    super(`${op.op} ${'target' in op ? op.target : op.path} failed: ${code} ${reason}`);
  }
}

export class Mounter {
  private child: ChildProcess | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();

  /** Runs `ops` in order; HostOpError names the first that failed (the ones before it are done). */
  async run(ops: HostOp[]): Promise<void> {
    const wire = ops.map((op) =>
      op.op === 'mount' ? { ...op, flags: op.flags.reduce((acc, f) => acc | MOUNT_FLAGS[f], 0) } : op,
    );
    const reply = await this.call(wire);
    if (reply.failed !== null) {
      throw new HostOpError(ops[reply.failed]!, reply.failed, reply.code, reply.error);
    }
  }

  /** mount(2). */
  async mount(fstype: string, source: string, target: string, flags: MountFlag[], data: string): Promise<void> {
    await this.run([{ op: 'mount', fstype, source, target, flags, data }]);
  }

  /** Unmounts `target` (lazily if busy); `false` when nothing was mounted there or it is missing. */
  async unmount(target: string): Promise<boolean> {
    try {
      await this.run([{ op: 'umount', target }]);
      return true;
    } catch (err) {
      if (err instanceof HostOpError && (err.code === 'EINVAL' || err.code === 'ENOENT')) return false;
      throw err;
    }
  }

  private call(ops: unknown[]): Promise<Reply> {
    const child = this.started();
    const id = this.nextId++;
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Held while a call is out, so the process does not exit under it; idle, it holds nothing.
      if (this.pending.size === 1) child.ref();
      child.stdin!.write(`${JSON.stringify({ id, ops })}\n`);
    }).finally(() => {
      this.pending.delete(id);
      if (this.pending.size === 0) this.child?.unref();
    });
  }

  private started(): ChildProcess {
    if (this.child) return this.child;
    const child = spawn(PYTHON, ['-I', '-S', '-c', HELPER], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let parsed: ReturnType<typeof ReplySchema.safeParse>;
      try {
        parsed = ReplySchema.safeParse(JSON.parse(line));
      } catch {
        return; // not a reply (a warning the interpreter printed)
      }
      if (parsed.success) this.pending.get(parsed.data.id)?.resolve(parsed.data);
    });
    const fail = (why: string): void => {
      if (this.child === child) this.child = undefined;
      const error = new ProviderUnavailableError(`host helper (${PYTHON}) ${why}: ${stderr.trim()}`);
      for (const { reject } of this.pending.values()) reject(error);
    };
    child.on('error', (err) => fail(`cannot start: ${err.message}`));
    child.on('exit', (code, signal) => fail(`exited (${signal ?? code})`));
    child.stdin!.on('error', () => undefined);
    // The pipes would keep the event loop alive between calls; the child's ref/unref governs it.
    for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as unknown as { unref(): void }).unref();
    child.unref();
    return child;
  }
}

/** The helper of this process: one serves every provider. */
let shared: Mounter | undefined;
export function sharedMounter(): Mounter {
  shared ??= new Mounter();
  return shared;
}
