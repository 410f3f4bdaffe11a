import { describe, expect, it } from 'vitest';
import { FreezerUnavailableError } from '../../sandbox/cgroups.js';
import { FaultInjectingProvider } from '../../sandbox/fault-injection.js';
import { createSandboxProvider, BubblewrapProvider } from '../../sandbox/index.js';
import {
  ProviderUnavailableError,
  type SandboxInfo,
  type SandboxProvider,
  type SandboxSpec,
} from '../../sandbox/provider.js';

/** Counts creates and answers everything else trivially; fault injection never looks further. */
class CountingProvider implements SandboxProvider {
  readonly name = 'counting';
  creates = 0;
  async create(spec: SandboxSpec): Promise<SandboxInfo> {
    this.creates++;
    return { id: spec.idempotencyKey, labels: {}, createdAt: 0, expiresAt: 1 };
  }
  async exec(): Promise<never> {
    throw new Error('not used');
  }
  async readFile(): Promise<Buffer> {
    return Buffer.from('file');
  }
  async writeFile(): Promise<void> {}
  async status(): Promise<'running'> {
    return 'running';
  }
  async extendTtl(): Promise<void> {}
  async destroy(): Promise<void> {}
  async list(): Promise<SandboxInfo[]> {
    return [];
  }
}

async function failures(rate: number, seed: number, n = 200): Promise<boolean[]> {
  const inner = new CountingProvider();
  const p = new FaultInjectingProvider(inner, { createFailureRate: rate, seed });
  const out: boolean[] = [];
  for (let i = 0; i < n; i++) {
    const failed = await p.create({ idempotencyKey: `k${i}`, workspaceDir: '/' }).then(
      () => false,
      (err: unknown) => {
        expect(err).toBeInstanceOf(ProviderUnavailableError);
        expect((err as Error).message).toBe('injected fault');
        return true;
      },
    );
    out.push(failed);
  }
  expect(inner.creates).toBe(out.filter((f) => !f).length);
  return out;
}

describe('FaultInjectingProvider', () => {
  it('fails about the configured share of creates, the same ones for the same seed', async () => {
    const a = await failures(0.3, 7);
    const count = a.filter(Boolean).length;
    expect(count).toBeGreaterThanOrEqual(40);
    expect(count).toBeLessThanOrEqual(80);
    expect(await failures(0.3, 7)).toEqual(a);
    expect(await failures(0.3, 8)).not.toEqual(a);
  });

  it('never fails at rate 0 and always at rate 1', async () => {
    expect((await failures(0, 1)).some(Boolean)).toBe(false);
    expect((await failures(1, 1)).every(Boolean)).toBe(true);
  });

  it('delegates everything but create', async () => {
    const p = new FaultInjectingProvider(new CountingProvider(), { createFailureRate: 1 });
    expect(p.name).toBe('counting+faults');
    expect((await p.readFile('x', 'f')).toString()).toBe('file');
    expect(await p.status('x')).toBe('running');
    expect(await p.sweepExpired()).toEqual([]);
    // Optional operations the inner provider lacks: the exec fallback, or a clear refusal.
    expect(await p.usage('x')).toEqual({});
    await expect(p.pause('x')).rejects.toBeInstanceOf(FreezerUnavailableError);
  });

  it('rejects rates outside 0..1', () => {
    expect(
      () => new FaultInjectingProvider(new CountingProvider(), { createFailureRate: 1.5 }),
    ).toThrow(RangeError);
  });
});

describe('createSandboxProvider', () => {
  it('wraps the bubblewrap provider only when a failure rate is set', () => {
    expect(
      createSandboxProvider({ provider: 'bubblewrap', rootDir: '/var/tmp/unused' }),
    ).toBeInstanceOf(BubblewrapProvider);
    expect(
      createSandboxProvider({
        provider: 'bubblewrap',
        rootDir: '/var/tmp/unused',
        createFailureRate: 0.1,
        seed: 3,
      }),
    ).toBeInstanceOf(FaultInjectingProvider);
  });
});
