/**
 * Mounts and unmounts on the host through one long-lived helper process that makes the system
 * calls itself, instead of a `mount` or `umount` process per call: a process spawned from a large
 * Node process costs milliseconds, the calls microseconds, and a sandbox's create and destroy
 * need four of them. The helper is Python (ctypes) from the host's `/usr/bin/python3`, started
 * on first use; it ends when this process does (its stdin closes).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { ProviderUnavailableError } from './provider.js';

/** mount(2) flags the sandboxes use. */
const MOUNT_FLAGS = { rdonly: 1, nosuid: 2, nodev: 4 } as const;
export type MountFlag = keyof typeof MOUNT_FLAGS;

const EINVAL = 22;
const ENOENT = 2;

/** Reads requests, one JSON object a line, and answers each with its errno (0 on success). */
const HELPER = `import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "mount":
        r = libc.mount(req["source"].encode(), req["target"].encode(), req["fstype"].encode(), ctypes.c_ulong(req["flags"]), req["data"].encode())
    else:
        r = libc.umount2(req["target"].encode(), 2 if req["lazy"] else 0)
    err = ctypes.get_errno() if r != 0 else 0
    sys.stdout.write(json.dumps({"id": req["id"], "errno": err, "error": os.strerror(err) if err else ""}) + "\\n")
    sys.stdout.flush()
`;

const ReplySchema = z.object({ id: z.number().int(), errno: z.number().int(), error: z.string() });
type Reply = z.infer<typeof ReplySchema>;

/** The host's own interpreter, not a per-user shim: it must start fast and be there for root. */
const PYTHON = '/usr/bin/python3';

export class Mounter {
  private child: ChildProcess | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();

  /** mount(2); ProviderUnavailableError when the kernel refuses. */
  async mount(fstype: string, source: string, target: string, flags: MountFlag[], data: string): Promise<void> {
    const bits = flags.reduce((acc, f) => acc | MOUNT_FLAGS[f], 0);
    const reply = await this.call({ op: 'mount', fstype, source, target, flags: bits, data });
    if (reply.errno !== 0) {
      throw new ProviderUnavailableError(`mount -t ${fstype} ${target} failed: ${reply.error}`);
    }
  }

  /**
   * umount2(2), detaching lazily when the mount is still busy; `false` when nothing was mounted
   * at `target` (or it does not exist).
   */
  async unmount(target: string): Promise<boolean> {
    let reply = await this.call({ op: 'umount', target, lazy: false });
    if (reply.errno === EINVAL || reply.errno === ENOENT) return false;
    if (reply.errno !== 0) reply = await this.call({ op: 'umount', target, lazy: true });
    if (reply.errno !== 0) throw new ProviderUnavailableError(`umount ${target} failed: ${reply.error}`);
    return true;
  }

  private call(request: Record<string, unknown>): Promise<Reply> {
    const child = this.started();
    const id = this.nextId++;
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Held while a call is out, so the process does not exit under it; idle, it holds nothing.
      if (this.pending.size === 1) child.ref();
      child.stdin!.write(`${JSON.stringify({ ...request, id })}\n`);
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
      const error = new ProviderUnavailableError(`mount helper (${PYTHON}) ${why}: ${stderr.trim()}`);
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
