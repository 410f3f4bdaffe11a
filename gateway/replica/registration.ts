import type { Registration, RegistryStore } from '../../trajectory/index.js';

/**
 * This gateway replica in the store's registry (`kind: 'gateway'`): registered when it listens
 * and every `ttlMs / 3` after, so the replicas seen within `ttlMs` are the live set that session
 * forwarding and the policy fan-out address.
 */
export class ReplicaRegistration {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: RegistryStore,
    readonly id: string,
    private readonly ttlMs: number,
    private readonly log: (line: string) => void,
  ) {}

  /** Registers `address` (the URL other replicas reach this one at) now and periodically. */
  async start(address: string): Promise<void> {
    const register = () => this.store.register({ kind: 'gateway', id: this.id, address, lastSeenAt: Date.now() });
    await register();
    this.timer = setInterval(() => {
      // A missed round is made up by the next; the registration outlives two of them.
      register().catch((error: unknown) => this.log(`gateway registration failed: ${(error as Error).message}`));
    }, Math.max(1, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
  }

  /** Every live replica, this one included once it registered. */
  live(): Promise<Registration[]> {
    return this.store.listRegistrations('gateway', this.ttlMs);
  }

  /** The URL of a live replica, undefined when it is not live. */
  async addressOf(id: string): Promise<string | undefined> {
    return (await this.live()).find((r) => r.id === id)?.address;
  }

  close(): void {
    clearInterval(this.timer);
  }
}
