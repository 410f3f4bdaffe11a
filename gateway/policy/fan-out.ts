import type { PolicyState, Registration } from '../../trajectory/index.js';
import type { PauseMode, PauseResult, PolicyControl } from './policy-control.js';

/** The query flag that makes a policy admin route act on the receiving replica only. */
export const LOCAL_SCOPE = 'local';

export interface PolicyFanOutDeps {
  policy: PolicyControl;
  /** This replica's id, so it is not asked over HTTP. */
  replicaId: string;
  /** The live gateway replicas. */
  replicas(): Promise<Registration[]>;
  adminToken: string;
  log(line: string): void;
}

/**
 * One policy state across gateway replicas: the replica that receives a pause or resume writes it
 * to the store, then asks every other live replica to follow it (`?scope=local`), and a pause
 * answers once none of them runs a generation. A replica that cannot be reached is left to the
 * store poll (`PolicyControl.startPolling`): a dead one runs nothing, a partitioned one follows
 * within one poll but lets a generation under way finish.
 */
export class PolicyFanOut {
  constructor(private readonly deps: PolicyFanOutDeps) {}

  async pause(mode: PauseMode): Promise<PauseResult> {
    await this.deps.policy.pause();
    const answers = await Promise.all([
      this.deps.policy.settle(mode),
      ...(await this.others()).map((r) => this.ask<PauseResult>(r, 'pause', { mode })),
    ]);
    const settled = answers.filter((a): a is PauseResult => a !== undefined);
    return {
      ...this.deps.policy.current(),
      finished: settled.reduce((sum, a) => sum + a.finished, 0),
      aborted: settled.reduce((sum, a) => sum + a.aborted, 0),
    };
  }

  /** Throws `PolicyVersionError` (nothing fanned out) when `version` is older than the stored one. */
  async resume(version: number): Promise<PolicyState> {
    const state = await this.deps.policy.resume(version);
    await Promise.all((await this.others()).map((r) => this.ask<PolicyState>(r, 'resume', { version })));
    return state;
  }

  private async others(): Promise<Registration[]> {
    return (await this.deps.replicas()).filter((r) => r.id !== this.deps.replicaId);
  }

  private async ask<T>(replica: Registration, action: 'pause' | 'resume', body: object): Promise<T | undefined> {
    try {
      const response = await fetch(`${replica.address}/admin/v1/policy/${action}?scope=${LOCAL_SCOPE}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.deps.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (response.ok) return (await response.json()) as T;
      this.deps.log(`policy ${action} on replica ${replica.id} answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
    } catch (error) {
      this.deps.log(`policy ${action} did not reach replica ${replica.id} (${replica.address}): ${(error as Error).message}`);
    }
    return undefined;
  }
}
