import type Database from 'better-sqlite3';
import type { InstanceConfig } from './instances.js';

export interface AdmissionOptions {
  /**
   * Tokens of KV memory one running episode is expected to hold. An instance admits
   * `floor(kvCapacityTokens / episodeTokens)` episodes at once (at least one).
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
 * Episode admission: limits running episodes by engine capacity and picks each episode's home
 * instance (the least loaded, by share of slots in use). Leases live in SQLite so every worker
 * process on the machine sees the same counts and a crashed worker's leases expire.
 */
export class AdmissionControl {
  constructor(
    private readonly db: Database.Database,
    private readonly instances: InstanceConfig[],
    private readonly options: AdmissionOptions,
    /**
     * Whether an instance may be a new episode's home now: the gateway's router passes its health
     * so no episode is admitted to a dead engine. Default: every instance.
     */
    private readonly isAvailable: (instance: string) => boolean = () => true,
  ) {
    if (instances.length === 0) throw new Error('admission needs at least one engine instance');
    db.exec(`CREATE TABLE IF NOT EXISTS admission_leases (
      episode_id TEXT PRIMARY KEY, instance TEXT NOT NULL, expires_at INTEGER NOT NULL)`);
    // Leases taken under a longer TTL than configured now would otherwise block slots for longer.
    const latest = Date.now() + options.leaseTtlMs;
    db.prepare('UPDATE admission_leases SET expires_at = ? WHERE expires_at > ?').run(latest, latest);
  }

  private slots(instance: InstanceConfig): number {
    return Math.max(1, Math.floor(instance.kvCapacityTokens / this.options.episodeTokens));
  }

  /** Current running episodes per instance (expired leases not counted). */
  load(now = Date.now()): InstanceLoad[] {
    const rows = this.db
      .prepare('SELECT instance, COUNT(*) AS n FROM admission_leases WHERE expires_at > ? GROUP BY instance')
      .all(now) as { instance: string; n: number }[];
    const running = new Map(rows.map((r) => [r.instance, r.n]));
    return this.instances.map((i) => ({ instance: i.name, running: running.get(i.name) ?? 0, slots: this.slots(i) }));
  }

  /**
   * Admits the episode if an instance has a free slot. Idempotent: an episode that already holds a
   * lease gets it back (a retried activity must not take a second slot).
   */
  tryAdmit(episodeId: string, now = Date.now()): Lease | undefined {
    return this.db.transaction((): Lease | undefined => {
      const held = this.db
        .prepare('SELECT instance FROM admission_leases WHERE episode_id = ? AND expires_at > ?')
        .get(episodeId, now) as { instance: string } | undefined;
      if (held) return { episodeId, instance: held.instance };
      this.db.prepare('DELETE FROM admission_leases WHERE expires_at <= ?').run(now);
      const free = this.load(now)
        .filter((l) => l.running < l.slots && this.isAvailable(l.instance))
        .sort((a, b) => a.running / a.slots - b.running / b.slots);
      const pick = free[0];
      if (!pick) return undefined;
      this.db
        .prepare('INSERT OR REPLACE INTO admission_leases (episode_id, instance, expires_at) VALUES (?, ?, ?)')
        .run(episodeId, pick.instance, now + this.options.leaseTtlMs);
      return { episodeId, instance: pick.instance };
    }).immediate();
  }

  /** Extends a running episode's lease (re-taking it if it had expired). */
  renew(lease: Lease, now = Date.now()): void {
    this.db
      .prepare('INSERT OR REPLACE INTO admission_leases (episode_id, instance, expires_at) VALUES (?, ?, ?)')
      .run(lease.episodeId, lease.instance, now + this.options.leaseTtlMs);
  }

  /** Drops the leases of episodes whose id starts with `prefix` (an abandoned batch). */
  releaseAll(prefix: string): number {
    return this.db.prepare("DELETE FROM admission_leases WHERE substr(episode_id, 1, ?) = ?").run(prefix.length, prefix).changes;
  }

  release(episodeId: string): void {
    this.db.prepare('DELETE FROM admission_leases WHERE episode_id = ?').run(episodeId);
  }
}
