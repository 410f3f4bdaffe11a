import type { InstanceConfig } from './instances.js';

export interface AdmissionOptions {
  /**
   * Tokens of KV memory one running episode is expected to hold. An instance admits
   * `floor(kvCapacityTokens / episodeTokens)` episodes at once (at least one; without a capacity, any number).
   */
  episodeTokens: number;
  /**
   * A lease not renewed within this time is considered abandoned (its episode was terminated or
   * its workers died); running episodes renew theirs while they work.
   */
  leaseTtlMs: number;
}

export interface Lease {
  episodeId: string;
  instance: string;
}

export interface InstanceLoad {
  instance: string;
  running: number;
  slots: number;
}

/**
 * Where leases live: the shared store (`trajectory/store`), so every worker on every host counts
 * the same leases. Declared here by shape, as the scheduler imports nothing above it.
 */
export interface LeaseBook {
  tryAdmit(
    episodeId: string,
    candidates: { instance: string; slots: number; available: boolean }[],
    ttlMs: number,
    now?: number,
  ): Promise<{ episodeId: string; instance: string } | undefined>;
  renewLease(episodeId: string, instance: string, ttlMs: number, now?: number): Promise<void>;
  releaseLease(episodeId: string): Promise<void>;
  releaseLeasesWithPrefix(prefix: string): Promise<number>;
  listLeases(now?: number): Promise<{ episodeId: string; instance: string }[]>;
  capLeases(ttlMs: number): Promise<void>;
}

/**
 * The slots of an engine without a known KV capacity: no limit, yet finite, so the share of slots
 * in use still orders such engines by their running episodes (and a store can hold the number).
 */
const UNBOUNDED_SLOTS = Number.MAX_SAFE_INTEGER;

/**
 * Episode admission: limits running episodes by engine capacity and picks each episode's home
 * instance (the least loaded, by share of slots in use). The count is global: leases live in the
 * shared store and a crashed worker's leases expire.
 */
export class AdmissionControl {
  private constructor(
    private readonly leases: LeaseBook,
    private readonly instances: InstanceConfig[],
    private readonly options: AdmissionOptions,
    private readonly isAvailable: (instance: string) => boolean,
  ) {}

  /**
   * @param isAvailable whether an instance may be a new episode's home now (its health), so no
   *   episode is admitted to a dead engine. Default: every instance.
   */
  static async create(
    leases: LeaseBook,
    instances: InstanceConfig[],
    options: AdmissionOptions,
    isAvailable: (instance: string) => boolean = () => true,
  ): Promise<AdmissionControl> {
    if (instances.length === 0) throw new Error('admission needs at least one engine instance');
    // Leases taken under a longer TTL than configured now would otherwise block slots for longer.
    await leases.capLeases(options.leaseTtlMs);
    return new AdmissionControl(leases, instances, options, isAvailable);
  }

  private slots(instance: InstanceConfig): number {
    if (instance.kvCapacityTokens === undefined) return UNBOUNDED_SLOTS;
    return Math.max(1, Math.floor(instance.kvCapacityTokens / this.options.episodeTokens));
  }

  /** Current running episodes per instance (expired leases not counted). */
  async load(now = Date.now()): Promise<InstanceLoad[]> {
    const running = new Map<string, number>();
    for (const lease of await this.leases.listLeases(now)) running.set(lease.instance, (running.get(lease.instance) ?? 0) + 1);
    return this.instances.map((i) => ({ instance: i.name, running: running.get(i.name) ?? 0, slots: this.slots(i) }));
  }

  /**
   * Admits the episode if an instance has a free slot. Idempotent: an episode that already holds a
   * lease gets it back (a retried activity must not take a second slot).
   */
  async tryAdmit(episodeId: string, now = Date.now()): Promise<Lease | undefined> {
    const candidates = this.instances.map((i) => ({ instance: i.name, slots: this.slots(i), available: this.isAvailable(i.name) }));
    const lease = await this.leases.tryAdmit(episodeId, candidates, this.options.leaseTtlMs, now);
    return lease && { episodeId: lease.episodeId, instance: lease.instance };
  }

  /** Extends a running episode's lease (re-taking it if it had expired). */
  renew(lease: Lease, now = Date.now()): Promise<void> {
    return this.leases.renewLease(lease.episodeId, lease.instance, this.options.leaseTtlMs, now);
  }

  /** Drops the leases of episodes whose id starts with `prefix` (an abandoned batch). */
  releaseAll(prefix: string): Promise<number> {
    return this.leases.releaseLeasesWithPrefix(prefix);
  }

  release(episodeId: string): Promise<void> {
    return this.leases.releaseLease(episodeId);
  }
}
