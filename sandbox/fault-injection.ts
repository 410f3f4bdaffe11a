/**
 * A provider wrapper whose `create` fails on purpose, for tests that prove episodes survive
 * sandbox failures. Seeded, so a failing run can be replayed exactly.
 */
import {
  ProviderUnavailableError,
  SandboxError,
  type Command,
  type ExecOptions,
  type ExecResult,
  type SandboxInfo,
  type SandboxProvider,
  type SandboxSpec,
  type SandboxState,
  type SandboxUsage,
  type WorkspaceLayers,
} from './provider.js';
import { FreezerUnavailableError } from './cgroups.js';
import { downloadTarViaExec, uploadTarViaExec } from './files.js';

export interface FaultInjectionOptions {
  /** Probability (0..1) that a `create` fails with ProviderUnavailableError. Default 0. */
  createFailureRate?: number;
  /** PRNG seed; the same seed fails the same creates. Default 0. */
  seed?: number;
}

/** mulberry32: small, fast and good enough to decide coin flips. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class FaultInjectingProvider implements SandboxProvider {
  readonly name: string;
  private readonly rate: number;
  private readonly random: () => number;

  constructor(
    private readonly inner: SandboxProvider,
    options: FaultInjectionOptions = {},
  ) {
    this.rate = options.createFailureRate ?? 0;
    if (!(this.rate >= 0 && this.rate <= 1))
      throw new RangeError(`createFailureRate must be in 0..1, got ${this.rate}`);
    this.random = mulberry32(options.seed ?? 0);
    this.name = `${inner.name}+faults`;
  }

  async create(spec: SandboxSpec): Promise<SandboxInfo> {
    if (this.random() < this.rate) throw new ProviderUnavailableError('injected fault');
    return this.inner.create(spec);
  }

  exec(id: string, command: Command, options?: ExecOptions): Promise<ExecResult> {
    return this.inner.exec(id, command, options);
  }

  readFile(id: string, path: string): Promise<Buffer> {
    return this.inner.readFile(id, path);
  }

  writeFile(id: string, path: string, data: Buffer | string): Promise<void> {
    return this.inner.writeFile(id, path, data);
  }

  status(id: string): Promise<SandboxState> {
    return this.inner.status(id);
  }

  extendTtl(id: string, ms: number): Promise<void> {
    return this.inner.extendTtl(id, ms);
  }

  destroy(id: string): Promise<void> {
    return this.inner.destroy(id);
  }

  list(labels?: Record<string, string>): Promise<SandboxInfo[]> {
    return this.inner.list(labels);
  }

  async sweepExpired(now?: number): Promise<string[]> {
    return this.inner.sweepExpired ? this.inner.sweepExpired(now) : [];
  }

  upload(id: string, tar: Buffer, dir?: string): Promise<void> {
    return this.inner.upload
      ? this.inner.upload(id, tar, dir)
      : uploadTarViaExec(this.inner, id, tar, dir);
  }

  download(id: string, dir?: string): Promise<Buffer> {
    return this.inner.download
      ? this.inner.download(id, dir)
      : downloadTarViaExec(this.inner, id, dir);
  }

  async pause(id: string): Promise<void> {
    if (!this.inner.pause) throw new FreezerUnavailableError();
    return this.inner.pause(id);
  }

  async resume(id: string): Promise<void> {
    if (!this.inner.resume) throw new FreezerUnavailableError();
    return this.inner.resume(id);
  }

  async usage(id: string): Promise<SandboxUsage> {
    return this.inner.usage ? this.inner.usage(id) : {};
  }

  async workspaceLayers(id: string): Promise<WorkspaceLayers> {
    if (!this.inner.workspaceLayers)
      throw new SandboxError(`${this.inner.name} cannot show its workspace layers`, false);
    return this.inner.workspaceLayers(id);
  }

  async release(): Promise<void> {
    await this.inner.release?.();
  }
}
