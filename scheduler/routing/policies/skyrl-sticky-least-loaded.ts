import type { InstanceView, PrefixLookup, RouteDecision, RouteRequest, RoutingPolicy } from '../types.js';
import { decide } from './util.js';

/**
 * SkyRL's `sticky_least_loaded` (NovaSky-AI/SkyRL PR #1791: SkyRL passes a fixed session id per
 * trajectory to vllm-router, selects the policy through `router_init_kwargs` and calls
 * `/finish_session` when a trajectory ends; it pins the vllm-router 0.1.14.post1 wheel of
 * SumanthRH/router, whose policy was upstreamed as vllm-project/router
 * `src/policies/sticky_least_loaded.rs`, read at commit 335c57e2ee62):
 *
 * - the router counts the active sessions bound to each replica;
 * - a call of a session bound to an offered replica goes there, whatever its load or memory;
 * - a new session (or one whose replica is not offered, which is released first) goes to the
 *   replica with the fewest active sessions; ties are broken by rendezvous hashing of
 *   `session:replica` (the highest hash wins), so a session's choice among equally loaded replicas
 *   is reproducible;
 * - a finished session (`onChainsClosed`: the gateway's session close, the simulator's episode
 *   end) releases its replica's count.
 *
 * Not reproduced: the 2-hour idle expiry of sessions (`VLLM_ROUTER_SLL_SESSION_EXPIRATION_IN_S`;
 * policies see no clock, and no rollout here idles that long) and the exact bits of vllm-router's
 * tie-break hash (FNV-1a with MurmurHash3's finalizer here in place of its furc + MurmurHash64A: same rule,
 * other winners).
 */
export class SkyrlStickyLeastLoadedPolicy implements RoutingPolicy {
  readonly name = 'skyrl-sticky-least-loaded';
  /** chain → its replica. */
  private readonly sessions = new Map<string, string>();
  /** replica → active sessions bound to it. */
  private readonly active = new Map<string, number>();

  route(request: RouteRequest, instances: readonly InstanceView[], prefix: PrefixLookup): RouteDecision {
    const bound = this.sessions.get(request.chainId);
    if (bound !== undefined) {
      if (instances.some((v) => v.name === bound)) return decide(request, bound, prefix);
      this.release(request.chainId, bound);
    }
    const counts = instances.map((v) => this.active.get(v.name) ?? 0);
    const least = Math.min(...counts);
    let pick = -1;
    let pickWeight = -1;
    for (let i = 0; i < instances.length; i++) {
      if (counts[i] !== least) continue;
      const weight = rendezvous(`${request.chainId}:${instances[i]!.name}`);
      if (weight > pickWeight) {
        pick = i;
        pickWeight = weight;
      }
    }
    const name = instances[pick]!.name;
    this.sessions.set(request.chainId, name);
    this.active.set(name, (this.active.get(name) ?? 0) + 1);
    return decide(request, name, prefix);
  }

  onChainsClosed(closed: (chainId: string) => boolean): void {
    for (const [chain, instance] of this.sessions) if (closed(chain)) this.release(chain, instance);
  }

  /** Active sessions bound to `instance` (for tests and metrics). */
  activeSessions(instance: string): number {
    return this.active.get(instance) ?? 0;
  }

  private release(chain: string, instance: string): void {
    this.sessions.delete(chain);
    const left = (this.active.get(instance) ?? 0) - 1;
    if (left > 0) this.active.set(instance, left);
    else this.active.delete(instance);
  }
}

/**
 * The rendezvous weight of a session on a replica: 32-bit FNV-1a of `key` through MurmurHash3's
 * finalizer (keys differ only in their last characters, which FNV-1a alone mixes poorly).
 */
function rendezvous(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
