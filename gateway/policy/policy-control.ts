import type { PolicyState, PolicyStore } from '../../trajectory/index.js';

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
 * sets the new version (never older) and lets the waiting calls go. The state is written through
 * to the store, so a restarted gateway serves the same version and is still paused.
 */
export class PolicyControl {
  private state: PolicyState;
  private readonly leases = new Set<Lease>();
  /** Opens the gate that held calls wait on; set while paused. */
  private reopen: (() => void) | undefined;
  private gate: Promise<void> = Promise.resolve();

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

  /** Pauses (idempotent) and answers once no generation runs. */
  async pause(mode: PauseMode): Promise<PauseResult> {
    if (!this.state.paused) {
      this.state = await this.store.pausePolicy();
      this.closeGate();
    }
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
    const { applied, state } = await this.store.resumePolicy(version);
    if (!applied) throw new PolicyVersionError(`version ${version} is older than the version stored, ${state.version}`);
    this.state = state;
    this.reopen?.();
    this.reopen = undefined;
    return { ...this.state };
  }

  private closeGate(): void {
    this.gate = new Promise<void>((resolve) => (this.reopen = resolve));
  }
}
