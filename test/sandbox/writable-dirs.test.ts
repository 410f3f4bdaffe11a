import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { InvalidSandboxSpecError } from '../../sandbox/provider.js';
import { removeDirs, tempDir, writeTree } from './helpers.js';

const dirs: string[] = [];
let provider: BubblewrapProvider;
let workspaceDir: string;
let n = 0;
const key = (): string => `writable-${process.pid}-${n++}`;

beforeAll(async () => {
  const rootDir = await tempDir('writable-root');
  workspaceDir = await tempDir('writable-ws');
  dirs.push(rootDir, workspaceDir);
  await writeTree(workspaceDir, { 'README.md': 'hi\n' });
  provider = new BubblewrapProvider({ rootDir });
});

afterAll(async () => {
  await provider.release();
  await removeDirs(dirs);
});

describe('SandboxSpec.writableDirs', () => {
  it('makes each path an empty, writable directory that keeps its files across execs', async () => {
    const a = await provider.create({
      idempotencyKey: key(),
      workspaceDir,
      writableDirs: ['/logs/verifier', '/var/agent-out'],
    });
    const b = await provider.create({
      idempotencyKey: key(),
      workspaceDir,
      writableDirs: ['/logs/verifier'],
    });
    try {
      const write = await provider.exec(a.id, {
        shell:
          'ls -A /logs/verifier && echo 1 > /logs/verifier/reward.txt && echo x > /var/agent-out/f',
      });
      expect(write).toMatchObject({ exitCode: 0, stdout: '' });
      const read = await provider.exec(a.id, {
        shell: 'cat /logs/verifier/reward.txt /var/agent-out/f',
      });
      expect(read.stdout).toBe('1\nx\n');
      // Another sandbox's directory of the same path is its own.
      const other = await provider.exec(b.id, { shell: 'ls -A /logs/verifier' });
      expect(other).toMatchObject({ exitCode: 0, stdout: '' });
    } finally {
      await provider.destroy(a.id);
      await provider.destroy(b.id);
    }
  });

  it("counts what is written there against the sandbox's disk cap", async () => {
    const s = await provider.create({
      idempotencyKey: key(),
      workspaceDir,
      writableDirs: ['/logs/verifier'],
      limits: { diskBytes: 8 * 1024 * 1024 },
    });
    try {
      const fill = await provider.exec(s.id, {
        shell: 'dd if=/dev/zero of=/logs/verifier/big bs=1M count=16 2>&1',
      });
      expect(fill.exitCode).not.toBe(0);
      expect(fill.stdout).toContain('No space left on device');
    } finally {
      await provider.destroy(s.id);
    }
  });

  it.each(['/tmp/x', '/workspace/out', 'relative/dir', '/proc/x', '/'])(
    'refuses %s',
    async (path) => {
      await expect(
        provider.create({ idempotencyKey: key(), workspaceDir, writableDirs: [path] }),
      ).rejects.toThrow(InvalidSandboxSpecError);
    },
  );
});
