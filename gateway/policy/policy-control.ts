import type { PolicyState, PolicyStore } from '../../trajectory/index.js';
import { Mutex } from '../session/mutex.js';

/** How a pause treats generations under way: let them finish, or abort them for resumption. */
export type PauseMode = 'finish' | 'abort';

/** The answer to a pause, once no generation is under way. */
export interface PauseResult {
  version: number;
  paused: boolean;
  /** Generations that were under way and ended on their own while the pause waited. */
  finished: number;
  /** Generations the pause aborted; their turns keep the tokens and continue after resume. */
  aborted: number;
}

/**
 * Highest policy version a resume may set: versions only grow, so one near
 * `Number.MAX_SAFE_INTEGER` would leave no version to move to (and no lower one can be set).
 */
export const MAX_POLICY_VERSION = 2 ** 31 - 1;

/** A resume asked for an older version than the one served. */
export class PolicyVersionError extends Error {
  override name = 'PolicyVersionError';
}

/**
 * The right to run one generation on the engines at the version it names. `signal` fires when a
 * pause in abort mode wants the generation stopped; `release` says how it ended.
 */
export interface GenerationLease {
  readonly version: number;
  readonly signal: AbortSignal;
  /** `preempted`: stopped by the pause, its tokens kept for resumption; `ended`: anything else. */
  release(outcome: 'ended' | 'preempted'): void;
}

class Lease implements GenerationLease {
  private readonly controller = new AbortController();
  private resolveDone!: (preempted: boolean) => void;
  /** Resolves when the generation is over: true when it was preempted. */
  readonly done = new Promise<boolean>((resolve) => (this.resolveDone = resolve));

  constructor(
    readonly version: number,
    private readonly onRelease: (lease: Lease) => void,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  preempt(): void {
    this.controller.abort();
  }

  release(outcome: 'ended' | 'preempted'): void {
    this.onRelease(this);
    this.resolveDone(outcome === 'preempted');
  }
}

/**
 * The policy version as service state, and the pause around a weight update. Every generation
 * holds a lease taken at the current version; while paused, no lease is given out, so new model
 * calls wait. A pause answers once no lease is held: in `finish` mode when the generations under
 * way completed, in `abort` mode when they were aborted (their turns wait to continue). Resume
 * sets the new version (never older) and lets the waiting calls go. The state lives in the store,
 * shared by every gateway replica: a restarted gateway serves the same version and is still paused,
 * and `sync` (polled) makes a replica follow what another one wrote (policy/fan-out.ts).
 */
export class PolicyControl {
  private state: PolicyState;
  private readonly leases = new Set<Lease>();
  /** Opens the gate that held calls wait on; set while paused. */
  private reopen: (() => void) | undefined;
  private gate: Promise<void> = Promise.resolve();
  private poller: NodeJS.Timeout | undefined;
  /**
   * One store round trip at a time: a poll's read that started before a pause was written could
   * otherwise land after it and reopen the gate.
   */
  private readonly storeLock = new Mutex();

  private constructor(
    private readonly store: PolicyStore,
    state: PolicyState,
  ) {
    this.state = state;
    if (this.state.paused) this.closeGate();
  }

  /** Starts from the stored state: a restarted gateway serves the same version and is still paused. */
  static async create(store: PolicyStore): Promise<PolicyControl> {
    return new PolicyControl(store, await store.loadPolicy());
  }

  /** The version and pause flag now. */
  current(): PolicyState {
    return { ...this.state };
  }

  /**
   * Waits while paused, then hands out a lease at the current version. Undefined when `signal`
   * (the client's) fires first.
   */
  async acquire(signal: AbortSignal): Promise<GenerationLease | undefined> {
    while (this.state.paused) {
      if (signal.aborted) return undefined;
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener('abort', done);
          resolve();
        };
        signal.addEventListener('abort', done, { once: true });
        void this.gate.then(done);
      });
    }
    if (signal.aborted) return undefined;
    const lease = new Lease(this.state.version, (l) => this.leases.delete(l));
    this.leases.add(lease);
    return lease;
  }

  /** Writes the pause to the store (idempotent) and holds new calls here. */
  async pause(): Promise<void> {
    await this.storeLock.run(async () => this.apply(await this.store.pausePolicy()));
  }

  /**
   * Follows the stored state, then, when paused, answers once no generation runs here. A replica
   * told to pause by another one settles; the one that wrote the pause settles too.
   */
  async settle(mode: PauseMode): Promise<PauseResult> {
    await this.sync();
    if (!this.state.paused) return { ...this.state, finished: 0, aborted: 0 };
    const underWay = [...this.leases];
    if (mode === 'abort') for (const lease of underWay) lease.preempt();
    const preempted = await Promise.all(underWay.map((lease) => lease.done));
    const aborted = preempted.filter(Boolean).length;
    return { ...this.state, finished: underWay.length - aborted, aborted };
  }

  /** Serves `version` from now on and ends a pause. */
  async resume(version: number): Promise<PolicyState> {
    if (version < this.state.version) {
      throw new PolicyVersionError(`version ${version} is older than the version served, ${this.state.version}`);
    }
    return this.storeLock.run(async () => {
      const { applied, state } = await this.store.resumePolicy(version);
      if (!applied) throw new PolicyVersionError(`version ${version} is older than the version stored, ${state.version}`);
      this.apply(state);
      return { ...this.state };
    });
  }

  /** Takes the stored state (version and pause) as this replica's own. */
  sync(): Promise<PolicyState> {
    return this.storeLock.run(async () => {
      this.apply(await this.store.loadPolicy());
      return { ...this.state };
    });
  }

  /** Polls the store every `intervalMs`, so a replica that missed a fan-out converges. */
  startPolling(intervalMs: number, log: (line: string) => void): void {
    this.poller = setInterval(() => {
      this.sync().catch((error: unknown) => log(`policy poll failed: ${(error as Error).message}`));
    }, intervalMs);
    this.poller.unref();
  }

  close(): void {
    clearInterval(this.poller);
  }

  private apply(next: PolicyState): void {
    // Versions never go back: a read that raced a newer write (another replica's) is ignored.
    if (next.version < this.state.version) return;
    const wasPaused = this.state.paused;
    this.state = { ...next };
    if (next.paused && !wasPaused) this.closeGate();
    if (!next.paused && wasPaused) {
      this.reopen?.();
      this.reopen = undefined;
    }
  }

  private closeGate(): void {
    this.gate = new Promise<void>((resolve) => (this.reopen = resolve));
  }
}
