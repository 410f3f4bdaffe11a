/**
 * The host-side lifecycle of local sandboxes, shared by every isolation level: ids and records,
 * TTL, quota, the janitor's sweep, cgroups and limits, the layers and mounts on the host, pause
 * through the freezer, destroy. Running a command is the job of a `SandboxRunner` (`runner.ts`):
 * bubblewrap (`bubblewrap.ts`) or another one given to the constructor.
 *
 * Host layout: `<rootDir>/<id>/{base/, meta.json}`, shared workspace layers in
 * `<rootDir>/.layers/`, the sandbox's own mounts in `<mountRoot>/<id>/{rw/, workspace/}` (see
 * `layers.ts`) and the shared read-only roots in `<mountRoot>/{.roots,.root-layers}/`
 * (`shared-roots.ts`), which outlive the sandboxes until `release` or the abandoned-root sweep. The
 * sandbox's root is its image (`images`), never the host's root; the only host paths it sees are
 * its workspace and /tmp (both on its size-capped tmpfs) and the read-only mounts of its spec.
 */
import {
  chmod,
  chown,
  mkdir,
  readdir,
  readFile,
  realpath,
  rm,
  stat,
  statfs,
  writeFile,
} from 'node:fs/promises';
import { join, posix, resolve } from 'node:path';
import {
  InvalidSandboxSpecError,
  ProviderUnavailableError,
  SandboxError,
  SandboxGoneError,
  SandboxPausedError,
  SandboxQuotaError,
  type Command,
  type ExecOptions,
  type ExecResult,
  type SandboxInfo,
  type SandboxLimits,
  type SandboxProvider,
  type SandboxSpec,
  type SandboxState,
  type SandboxUsage,
  type WorkspaceLayers,
} from './provider.js';
import {
  downloadTarViaExec,
  readFileViaExec,
  uploadTarViaExec,
  writeFileViaExec,
} from './files.js';
import { maskBinds, reachableBy, SANDBOX_TMP, WORKSPACE } from './mounts.js';
import {
  detectResourceControl,
  rootKeyOf,
  type ResourceControl,
  type ResourceControlKind,
  type ResourceControlOptions,
} from './cgroups.js';
import {
  layerPaths,
  mountLayers,
  removeLayersOps,
  unmountAllUnder,
  writableDirHost,
  type LayerPaths,
} from './layers.js';
import { buildLauncher, DEFAULT_LAUNCHER_DIR } from './launcher.js';
import { sharedMounter, type Mounter } from './mounter.js';
import { SharedRoots, type RootPlan } from './shared-roots.js';
import { checkSpec, limitsOf, rootPlanOf } from './spec-check.js';
import {
  infoOf,
  isSandboxId,
  metaPath,
  readMeta,
  sandboxId,
  stageMeta,
  writeMeta,
  type SandboxMeta,
} from './meta.js';
import type { RunningCommand } from './process.js';
import type { SandboxBind, SandboxRunner, SandboxUser } from './runner.js';
import { prepareWorkspace, WorkspaceLayerCache } from './workspace-layer.js';
import { BaseImageOnlyStore } from './images/base-only.js';
import { BASE_IMAGE, ImageError, type ImageRoot, type ImageStore } from './images/types.js';

export interface LocalSandboxProviderOptions {
  /** Host directory holding one subdirectory per sandbox; created when missing. Required. */
  rootDir: string;
  /**
   * Where sandbox images come from (`SandboxSpec.image`). Default: a store that holds only the
   * base image (`BaseImageOnlyStore`).
   */
  images?: ImageStore;
  /**
   * Host paths hidden in every sandbox wherever a read-only mount shows them (a mount of a
   * directory that holds the data dir, say). Nothing else of the host is visible to hide.
   * `rootDir` and `mountRoot` are always hidden. Default: none.
   */
  hiddenPaths?: string[];
  /** TTL of a sandbox whose spec gives none. Default 1 hour. */
  defaultTtlMs?: number;
  /** Most sandbox directories on this host (live, expired but not yet swept, half-made). Default 1000. */
  maxSandboxes?: number;
  /**
   * How old a half-made sandbox (no meta.json) must be before `sweepExpired` removes it, so a
   * janitor in another process does not remove a create still in flight. Default 10 minutes.
   */
  halfMadeGraceMs?: number;
  /**
   * The unprivileged host user every sandboxed command runs as, so host files readable only by
   * root stay unreadable whatever uid the sandbox believes it has. Default nobody, 65534:65534.
   */
  sandboxUser?: SandboxUser;
  /**
   * How limits are enforced: `auto` picks cgroup v2, else cgroup v1 (memory, pids, cpu, freezer),
   * else `prlimit` (no CPU share, no pause). Default `auto`.
   */
  resourceControl?: ResourceControlKind | 'auto';
  /** The cgroup directory, under each hierarchy's root, holding this host's sandboxes. Default `agent-rollout`. */
  cgroupParent?: string;
  /** Limits of a sandbox whose spec gives none; see SandboxLimits for each default. */
  defaultLimits?: SandboxLimits;
  /**
   * Where the sandboxes' host mount points go; it must be reachable by the sandbox user, unlike
   * `rootDir`. Default `/run/agent-rollout/<hash of rootDir>`.
   */
  mountRoot?: string;
  /**
   * Where the sandbox launcher (`launcher.ts`) is built on first use; root only. Default
   * `/run/agent-rollout-launcher`.
   */
  launcherDir?: string;
  /** The C compiler that builds the launcher. Default `cc` from PATH. */
  cc?: string;
}

/** Where the default mount roots of all providers on this host live. */
const MOUNT_BASE = '/run/agent-rollout';

/** In a mount root: the `rootDir` of the provider that made it. */
const ROOT_OWNER_FILE = '.root';
/** In a mount root: the empty stand-ins bound over hidden files and directories. */
const EMPTY_FILE = '.empty';
const EMPTY_DIR = '.empty-dir';
/** In `rootDir`: the shared workspace layers. */
const LAYERS_DIR = '.layers';
/** In a mount root: the shared roots, and their top layers (empty mount points, a symlink). */
const ROOTS_DIR = '.roots';
const ROOT_LAYERS_DIR = '.root-layers';

/** The default `mountRoot` of a provider whose root directory is `rootDir`. */
export function defaultMountRoot(rootDir: string): string {
  return join(MOUNT_BASE, rootKeyOf(resolve(rootDir)));
}

export const DEFAULT_LIMITS: Required<SandboxLimits> = {
  memoryBytes: 2 * 1024 ** 3,
  maxProcesses: 512,
  cpus: 1,
  diskBytes: 1024 ** 3,
};

const HOUR_MS = 60 * 60 * 1000;
const DEFAULT_EXEC_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/** `/dev/shm` size: 64 MiB, or the disk cap when that is smaller. */
const SHM_BYTES = 64 * 1024 * 1024;
/** PATH of an image that sets none. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export class LocalSandboxProvider implements SandboxProvider {
  readonly name: string;
  private readonly rootDir: string;
  private readonly images: ImageStore;
  private readonly hiddenPaths: string[];
  private readonly defaultTtlMs: number;
  private readonly maxSandboxes: number;
  private readonly halfMadeGraceMs: number;
  private readonly mountRoot: string;
  private readonly sandboxUser: SandboxUser;
  private readonly defaultLimits: Required<SandboxLimits>;
  private readonly resourceControlOptions: Omit<ResourceControlOptions, 'launcher'>;
  private readonly launcherDir: string;
  private readonly cc: string;
  private readonly layerCache: WorkspaceLayerCache;
  private readonly mounter: Mounter = sharedMounter();
  private readonly roots: SharedRoots;
  /** The provider's hidden paths as real paths, resolved on first use. */
  private ownHiddenReal: Promise<string[]> | undefined;
  private resourceControlReady: Promise<ResourceControl> | undefined;
  /** Creates in flight in this process, by id: a concurrent retry joins the first. */
  private readonly creating = new Map<string, Promise<SandboxInfo>>();
  /** Commands running in this process, by sandbox id: destroy kills them. */
  private readonly running = new Map<string, Set<RunningCommand>>();
  /** Sandboxes being removed: an exec starting meanwhile is killed at once. */
  private readonly removing = new Set<string>();
  private rootReady: Promise<string> | undefined;

  constructor(
    options: LocalSandboxProviderOptions,
    private readonly runner: SandboxRunner,
  ) {
    this.name = runner.name;
    this.rootDir = resolve(options.rootDir);
    this.images = options.images ?? new BaseImageOnlyStore();
    this.hiddenPaths = (options.hiddenPaths ?? []).map((p) => resolve(p));
    this.defaultTtlMs = options.defaultTtlMs ?? HOUR_MS;
    this.maxSandboxes = options.maxSandboxes ?? 1000;
    this.halfMadeGraceMs = options.halfMadeGraceMs ?? 10 * 60 * 1000;
    this.mountRoot = resolve(options.mountRoot ?? defaultMountRoot(this.rootDir));
    this.sandboxUser = options.sandboxUser ?? { uid: 65534, gid: 65534 };
    this.defaultLimits = { ...DEFAULT_LIMITS, ...options.defaultLimits };
    this.resourceControlOptions = {
      kind: options.resourceControl ?? 'auto',
      parent: options.cgroupParent ?? 'agent-rollout',
      rootDir: this.rootDir,
    };
    this.launcherDir = options.launcherDir ?? DEFAULT_LAUNCHER_DIR;
    this.cc = options.cc ?? 'cc';
    this.layerCache = new WorkspaceLayerCache(join(this.rootDir, LAYERS_DIR), this.sandboxUser);
    this.roots = new SharedRoots(
      join(this.mountRoot, ROOT_LAYERS_DIR),
      join(this.mountRoot, ROOTS_DIR),
      this.mounter,
    );
  }

  /** How this provider enforces limits (`cgroup-v2`, `cgroup-v1` or `prlimit`). */
  async resourceControl(): Promise<ResourceControlKind> {
    return (await this.rc()).kind;
  }

  /** Detected, and the launcher built, on first use: constructing a provider touches nothing on the host. */
  private rc(): Promise<ResourceControl> {
    this.resourceControlReady ??= buildLauncher(this.launcherDir, this.cc)
      .then((launcher) => detectResourceControl({ ...this.resourceControlOptions, launcher }))
      .catch((err: unknown) => {
        // A failed build or detection is tried again by the next call, not cached for ever.
        this.resourceControlReady = undefined;
        throw err;
      });
    return this.resourceControlReady;
  }

  async create(spec: SandboxSpec): Promise<SandboxInfo> {
    if (!spec.idempotencyKey) throw new InvalidSandboxSpecError('idempotencyKey is required');
    const id = sandboxId(spec.idempotencyKey);
    const pending = this.creating.get(id);
    if (pending) return pending;
    const creation = this.createOnce(id, spec).finally(() => this.creating.delete(id));
    this.creating.set(id, creation);
    return creation;
  }

  async exec(id: string, command: Command, options: ExecOptions = {}): Promise<ExecResult> {
    const meta = await this.liveMeta(id);
    if (meta.paused) throw new SandboxPausedError(id);
    const rc = await this.rc();
    const argv = Array.isArray(command) ? command : ['/bin/sh', '-c', command.shell];
    if (argv.length === 0) throw new InvalidSandboxSpecError('empty command');
    const layers = this.layers(id);
    const binds: SandboxBind[] = [
      { hostPath: layers.workspace, sandboxPath: WORKSPACE, writable: true },
      { hostPath: layers.tmp, sandboxPath: SANDBOX_TMP, writable: true },
      ...(meta.writableDirs ?? []).map((sandboxPath, i) => ({
        hostPath: writableDirHost(layers, i),
        sandboxPath,
        writable: true,
      })),
      ...meta.readOnlyMounts.map((m) => ({ ...m, writable: false })),
    ];
    const mountRoot = await this.prepareRoot();
    const masks = maskBinds({
      hiddenPaths: [...(await this.ownHiddenPaths()), ...meta.hiddenPaths],
      binds: binds.filter((b) => !b.writable),
      emptyDir: join(mountRoot, EMPTY_DIR),
      emptyFile: join(mountRoot, EMPTY_FILE),
      user: this.sandboxUser,
    });
    const run = this.runner.run({
      sandboxId: id,
      rootDir: await this.roots.root(meta.root),
      binds: [...binds, ...masks],
      // The image's environment is the base; the root is read-only, so HOME is the sandbox's /tmp.
      env: {
        PATH: DEFAULT_PATH,
        LANG: 'C.UTF-8',
        ...meta.image.env,
        HOME: SANDBOX_TMP,
        ...options.env,
      },
      cwd: posix.resolve(WORKSPACE, options.cwd ?? WORKSPACE),
      argv,
      stdin: options.stdin,
      // The hard TTL bounds every command too: nothing outlives its sandbox.
      timeoutMs: Math.max(
        1,
        Math.min(options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS, meta.expiresAt - Date.now()),
      ),
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      limits: meta.limits,
      launcher: (user) => rc.launcher(id, this.hostLimits(meta.limits), user),
      shmBytes: Math.min(SHM_BYTES, meta.limits.diskBytes),
      user: this.sandboxUser,
      beforeKill: () => rc.thaw(id).catch(() => undefined),
    });
    const runs = this.running.get(id) ?? new Set<RunningCommand>();
    this.running.set(id, runs.add(run));
    // Registered and checked in one tick: a concurrent remove either sees this run or is seen.
    if (this.removing.has(id)) run.kill();
    const { signal } = options;
    const abort = () => run.kill();
    if (signal?.aborted) abort();
    else signal?.addEventListener('abort', abort, { once: true });
    try {
      const outcome = await run.done;
      if (signal?.aborted) throw signal.reason;
      if (outcome.killed) throw new SandboxGoneError(id);
      const { exitCode, timedOut, stdout, stderr, truncated, durationMs } = outcome;
      return { exitCode, timedOut, stdout, stderr, truncated, durationMs };
    } catch (err) {
      // A sandbox removed while the runner was starting makes it fail: report the cause instead.
      if (err instanceof ProviderUnavailableError && (await this.status(id)) === 'gone') {
        throw new SandboxGoneError(id);
      }
      throw err;
    } finally {
      signal?.removeEventListener('abort', abort);
      runs.delete(run);
      if (runs.size === 0 && this.running.get(id) === runs) this.running.delete(id);
    }
  }

  async readFile(id: string, path: string): Promise<Buffer> {
    return readFileViaExec(this, id, path);
  }

  async writeFile(id: string, path: string, data: Buffer | string): Promise<void> {
    return writeFileViaExec(this, id, path, data);
  }

  async upload(id: string, tar: Buffer, dir?: string): Promise<void> {
    return uploadTarViaExec(this, id, tar, dir);
  }

  async download(id: string, dir?: string): Promise<Buffer> {
    return downloadTarViaExec(this, id, dir);
  }

  async status(id: string): Promise<SandboxState> {
    try {
      return (await this.liveMeta(id)).paused ? 'paused' : 'running';
    } catch {
      return 'gone';
    }
  }

  async pause(id: string): Promise<void> {
    const meta = await this.liveMeta(id);
    await (await this.rc()).freeze(id);
    await writeMeta(this.dir(id), { ...meta, paused: true });
  }

  async resume(id: string): Promise<void> {
    const meta = await this.liveMeta(id);
    await (await this.rc()).thaw(id);
    await writeMeta(this.dir(id), { ...meta, paused: false });
  }

  /** Memory charged to the sandbox's cgroup and bytes used on its writable layer. */
  async usage(id: string): Promise<SandboxUsage> {
    await this.liveMeta(id);
    const memoryBytes = await (await this.rc()).memoryUsage(id);
    const rw = await statfs(this.layers(id).rw).catch(() => undefined);
    const diskBytes = rw ? (rw.blocks - rw.bfree) * rw.bsize : undefined;
    return { memoryBytes, diskBytes };
  }

  async workspaceLayers(id: string): Promise<WorkspaceLayers> {
    const meta = await this.liveMeta(id);
    // Made by a provider version that did not record it: its layers cannot be told apart.
    if (!meta.workspaceLower) throw new SandboxGoneError(id);
    const layers = this.layers(id);
    return { lower: meta.workspaceLower, upper: layers.upper, merged: layers.workspace };
  }

  async extendTtl(id: string, ms: number): Promise<void> {
    const meta = await this.liveMeta(id);
    await writeMeta(this.dir(id), {
      ...meta,
      expiresAt: Math.max(meta.expiresAt, Date.now() + ms),
    });
  }

  async destroy(id: string): Promise<void> {
    if (!isSandboxId(id)) return;
    await this.creating.get(id)?.catch(() => undefined);
    await this.remove(id);
  }

  /** Every sandbox with all of `labels`, expired ones not yet swept included. */
  async list(labels: Record<string, string> = {}): Promise<SandboxInfo[]> {
    const infos: SandboxInfo[] = [];
    for (const id of await this.sandboxDirs()) {
      const meta = await readMeta(this.dir(id));
      if (meta && Object.entries(labels).every(([k, v]) => meta.labels[k] === v))
        infos.push(infoOf(meta));
    }
    return infos;
  }

  /**
   * The janitor's job: removes sandboxes whose TTL has passed at `now` and half-made ones older
   * than `halfMadeGraceMs`, killing their running commands first. Returns the ids removed.
   */
  async sweepExpired(now: number = Date.now()): Promise<string[]> {
    const removed = await this.sweepOwn(now);
    await this.sweepAbandonedRoots();
    return removed;
  }

  /**
   * Removes the sandboxes (mounts, cgroups) under default mount roots whose provider's `rootDir` no
   * longer exists (a data dir deleted while sandboxes were live): no provider of theirs will ever
   * sweep them. Runs with every sweep.
   */
  private async sweepAbandonedRoots(): Promise<void> {
    for (const name of await readdir(MOUNT_BASE).catch(() => [])) {
      const mountRoot = join(MOUNT_BASE, name);
      if (mountRoot === this.mountRoot) continue;
      const rootDir = await readFile(join(mountRoot, ROOT_OWNER_FILE), 'utf8').catch(
        () => undefined,
      );
      if (
        !rootDir ||
        (await stat(rootDir).then(
          () => true,
          () => false,
        ))
      )
        continue;
      const abandoned = new LocalSandboxProvider({ rootDir, mountRoot }, this.runner);
      await abandoned.sweepOwn(Number.MAX_SAFE_INTEGER);
      await abandoned.release();
    }
  }

  /** `sweepExpired` for this provider's own sandboxes only. */
  private async sweepOwn(now: number): Promise<string[]> {
    const removed: string[] = [];
    const dirs = await this.sandboxDirs();
    // Cgroups whose sandbox directory is gone (a crash between the two removals).
    const rc = await this.rc();
    // A create (here or in another process) makes the directory before the cgroup and mounts,
    // so one seen without its directory, checked again just now, is debris.
    const orphan = async (id: string): Promise<boolean> =>
      isSandboxId(id) &&
      !dirs.includes(id) &&
      !this.creating.has(id) &&
      (await stat(this.dir(id)).then(
        () => false,
        () => true,
      ));
    for (const id of await rc.listIds()) if (await orphan(id)) await rc.remove(id);
    for (const id of await readdir(this.mountRoot).catch(() => [])) {
      if (await orphan(id)) await this.remove(id);
    }
    for (const id of dirs) {
      if (this.creating.has(id)) continue;
      const meta = await readMeta(this.dir(id));
      const expired = meta
        ? meta.expiresAt <= now
        : now - (await this.dirMtime(id)) >= this.halfMadeGraceMs;
      if (expired) {
        await this.remove(id);
        removed.push(id);
      }
    }
    return removed;
  }

  /** Host directory the sandbox sees as `/tmp` (where the gateway bridge's socket goes). */
  tmpHostDir(id: string): string {
    return this.layers(id).tmp;
  }

  /**
   * Removes this provider's host directories outside `rootDir` (the mount root, the cgroup
   * parents) if no sandbox is left in them; for short-lived processes such as tests and
   * benchmarks. The provider prepares them again when it is used next.
   */
  async release(): Promise<void> {
    const own = new Set([EMPTY_FILE, EMPTY_DIR, ROOT_OWNER_FILE, ROOTS_DIR, ROOT_LAYERS_DIR]);
    const entries = await readdir(this.mountRoot).catch(() => undefined);
    if (entries && entries.every((e) => own.has(e))) {
      await this.roots.release();
      await rm(this.mountRoot, { recursive: true, force: true });
    }
    await (await this.rc()).release();
    await this.runner.release?.();
    this.rootReady = undefined;
    this.resourceControlReady = undefined;
  }

  private dir(id: string): string {
    return join(this.rootDir, id);
  }

  private mountDir(id: string): string {
    return join(this.mountRoot, id);
  }

  private layers(id: string): LayerPaths {
    return layerPaths(this.mountDir(id));
  }

  /** The sandbox's meta, or SandboxGoneError when it is missing, half-made or expired. */
  private async liveMeta(id: string): Promise<SandboxMeta> {
    const meta = isSandboxId(id) ? await readMeta(this.dir(id)) : undefined;
    // No root: made by a provider version that showed the host root, unusable with this one.
    if (!meta || meta.expiresAt <= Date.now() || !meta.root) throw new SandboxGoneError(id);
    return meta;
  }

  private async createOnce(id: string, spec: SandboxSpec): Promise<SandboxInfo> {
    const workspaceDir = resolve(spec.workspaceDir);
    const dir = this.dir(id);
    // Independent reads overlap here and below: each one is a trip to the thread pool.
    const [readOnlyMounts, existing] = await Promise.all([
      checkSpec(workspaceDir, spec, this.sandboxUser),
      readMeta(dir),
    ]);
    if (existing && existing.expiresAt > Date.now()) {
      if (existing.idempotencyKey !== spec.idempotencyKey) {
        throw new InvalidSandboxSpecError(
          `sandbox id ${id} collides with key ${existing.idempotencyKey}`,
        );
      }
      return infoOf(existing);
    }
    const reference = spec.image ?? BASE_IMAGE;
    const [image, leftover] = await Promise.all([
      this.resolveImage(reference),
      Promise.all([exists(dir), exists(this.mountDir(id))]).then((found) => found.includes(true)),
    ]);
    // Expired or half-made: what is there is of no use to this create. (A cgroup left without
    // either is the sweep's; creating the group again reuses it.)
    if (leftover) await this.remove(id);
    const limits = limitsOf(spec.limits, this.defaultLimits);
    const writableDirs = spec.writableDirs ?? [];
    const [planned] = await Promise.all([
      rootPlanOf(image, readOnlyMounts, spec.workspaceLink, writableDirs, spec.hiddenImagePaths),
      this.checkQuota(id),
      this.prepareRoot(),
    ]);
    // The runner's own bind targets (gVisor's preloaded shim) are mount points of the root too.
    const root: RootPlan = {
      ...planned,
      mountPoints: [...planned.mountPoints, ...(this.runner.mountPoints ?? [])],
    };
    const source = { workspaceDir, initGitRepo: spec.initGitRepo ?? true };
    try {
      const [workspaceLower, hiddenPaths] = await Promise.all([
        spec.workspaceKey ? this.layerCache.layer(spec.workspaceKey, source) : join(dir, 'base'),
        realPaths(spec.hiddenPaths ?? []),
        mkdir(dir),
      ]);
      if (!spec.workspaceKey) await prepareWorkspace(source, workspaceLower, this.sandboxUser);
      const createdAt = Date.now();
      const meta: SandboxMeta = {
        version: 1,
        id,
        idempotencyKey: spec.idempotencyKey,
        labels: { ...spec.labels },
        createdAt,
        expiresAt: createdAt + (spec.ttlMs ?? this.defaultTtlMs),
        image: { reference, digest: image.digest, env: image.env },
        root,
        readOnlyMounts,
        hiddenPaths,
        writableDirs,
        workspaceLower,
        limits,
      };
      const [staged] = await Promise.all([
        // Written meanwhile under a scratch name: renamed into place last, it makes the sandbox.
        stageMeta(dir, meta),
        (await this.rc()).create(id, this.hostLimits(limits)),
        this.roots.root(root),
        mountLayers(this.mounter, this.mountDir(id), {
          diskBytes: limits.diskBytes,
          user: this.sandboxUser,
          workspaceLower,
        }),
      ]);
      const layers = this.layers(id);
      for (const i of writableDirs.keys()) {
        await mkdir(writableDirHost(layers, i), { recursive: true });
        await chown(writableDirHost(layers, i), this.sandboxUser.uid, this.sandboxUser.gid);
      }
      await staged.commit();
      return infoOf(meta);
    } catch (err) {
      await this.remove(id).catch(() => undefined);
      if (err instanceof SandboxError) throw err;
      throw new ProviderUnavailableError(
        `cannot prepare sandbox ${id}: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  /** The spec's image; one that cannot be had is a spec error unless trying again may help. */
  private async resolveImage(reference: string): Promise<ImageRoot> {
    try {
      return await this.images.resolve(reference);
    } catch (err) {
      if (!(err instanceof ImageError)) throw err;
      if (err.retryable) {
        throw new ProviderUnavailableError(`image ${reference}: ${err.message}`, { cause: err });
      }
      throw new InvalidSandboxSpecError(`image ${reference}: ${err.message}`);
    }
  }

  /** What the sandbox's cgroup enforces: its limits, as its runner needs them on the host. */
  private hostLimits(limits: Required<SandboxLimits>): Required<SandboxLimits> {
    return this.runner.hostLimits?.(limits) ?? limits;
  }

  /** Counts every sandbox directory and create in flight; sweeps once before refusing. */
  private async checkQuota(id: string): Promise<void> {
    const count = async (): Promise<number> => {
      const ids = new Set([...(await this.sandboxDirs()), ...this.creating.keys()]);
      ids.delete(id);
      return ids.size;
    };
    if ((await count()) < this.maxSandboxes) return;
    await this.sweepExpired();
    if ((await count()) >= this.maxSandboxes) {
      throw new SandboxQuotaError(
        `${this.maxSandboxes} sandboxes already exist under ${this.rootDir}`,
      );
    }
  }

  /**
   * Kills the sandbox's running commands (those of this process, then any left in its cgroup by
   * another), waits until their processes are gone, unmounts its layers, removes its cgroup and
   * its directory.
   */
  private async remove(id: string): Promise<void> {
    this.removing.add(id);
    try {
      const rc = await this.rc();
      const runs = [...(this.running.get(id) ?? [])];
      for (const run of runs) run.kill();
      await Promise.allSettled(runs.map((run) => run.done));
      const mountDir = this.mountDir(id);
      const dir = this.dir(id);
      // The group and the mounts are independent: what is left in the group (other processes'
      // commands) is killed while the layers go. A live command keeps its own copies of the
      // mounts in its namespace until it dies, so it loses nothing it could use to get out.
      const group = rc.remove(id);
      const layers = this.mounter
        .run([
          ...removeLayersOps(mountDir),
          { op: 'unlink', path: metaPath(dir), tolerate: ['ENOENT'] },
          { op: 'rmdir', path: dir, tolerate: ['ENOENT'] },
        ])
        .catch(async () => {
          // More than a keyed sandbox leaves (its own workspace copy, a half-written record,
          // mounts of another layout): unmount whatever is there, then remove everything.
          await unmountAllUnder(this.mounter, mountDir);
          await rm(mountDir, { recursive: true, force: true, maxRetries: 3 });
          await rm(dir, { recursive: true, force: true, maxRetries: 3 });
        });
      await Promise.all([group, layers]);
    } finally {
      this.removing.delete(id);
    }
  }

  private async sandboxDirs(): Promise<string[]> {
    try {
      return (await readdir(this.rootDir)).filter(isSandboxId);
    } catch {
      return [];
    }
  }

  private async dirMtime(id: string): Promise<number> {
    try {
      return (await stat(this.dir(id))).mtimeMs;
    } catch {
      return 0;
    }
  }

  /**
   * Makes `rootDir`, and `mountRoot` with its empty stand-ins, once per provider; returns
   * mountRoot. mountRoot is traversable but not listable: the sandbox user reaches its own
   * sandbox's mount points (the runner runs as that user) and cannot list the others.
   */
  private prepareRoot(): Promise<string> {
    this.rootReady ??= (async (): Promise<string> => {
      await mkdir(this.rootDir, { recursive: true });
      await mkdir(this.mountRoot, { recursive: true, mode: 0o711 });
      await chmod(this.mountRoot, 0o711);
      await writeFile(join(this.mountRoot, EMPTY_FILE), '', { mode: 0o444, flag: 'wx' }).catch(
        (err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        },
      );
      await mkdir(join(this.mountRoot, EMPTY_DIR), { mode: 0o555 }).catch(
        (err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        },
      );
      // Who owns this mount root, for the sweep of roots whose provider's rootDir is gone.
      await writeFile(join(this.mountRoot, ROOT_OWNER_FILE), this.rootDir, { mode: 0o600 });
      if (!reachableBy(join(this.mountRoot, EMPTY_FILE), this.sandboxUser)) {
        throw new SandboxError(
          `mountRoot ${this.mountRoot} is not reachable by the sandbox user; choose another`,
          false,
        );
      }
      return this.mountRoot;
    })();
    return this.rootReady;
  }

  /** rootDir, mountRoot and the provider's hidden paths as real paths (a symlinked data dir is hidden where it lives). */
  private ownHiddenPaths(): Promise<string[]> {
    this.ownHiddenReal ??= realPaths([this.rootDir, this.mountRoot, ...this.hiddenPaths]);
    return this.ownHiddenReal;
  }
}

function realPaths(paths: string[]): Promise<string[]> {
  return Promise.all(paths.map((p) => realpath(resolve(p)).catch(() => resolve(p))));
}

function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
