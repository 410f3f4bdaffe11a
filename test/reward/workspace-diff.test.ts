/**
 * The agent's changes read by the host from the sandbox's layers: real sandboxes (bubblewrap, and
 * gVisor where both are run), real git, the diff applied back into a fresh sandbox.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider } from '../../sandbox/local-provider.js';
import { SandboxGoneError } from '../../sandbox/provider.js';
import { evaluateReward, MAX_DIFF_BYTES, workspaceDiff } from '../../tasks/reward/index.js';
import { PROVIDER_FACTORIES } from '../attacks/providers.js';
import { removeDirs, tempDir, writeTree } from '../sandbox/helpers.js';
import { PY_FIX, pythonTask } from './fixtures.js';

const dirs: string[] = [];
const providers: LocalSandboxProvider[] = [];
let workspace: string;
/** A host directory no sandbox sees: what a symlink of the agent's may point at. */
let hostSecrets: string;
let n = 0;
const key = (): string => `wsdiff-${process.pid}-${n++}`;

/** Every entry outside .git with its mode and content hash (a symlink: its target). */
const TREE = [
  "find . -path ./.git -prune -o -type f -printf '%m %p ' -exec sh -c 'sha256sum < \"$1\" 2>/dev/null || echo unreadable' _ {} \\;",
  "find . -path ./.git -prune -o -type l -printf 'link %p %l\\n'",
].join('; ');

const BASE_FILES = {
  'keep.txt': 'unchanged\n',
  'edit.txt': 'line 1\nline 2\n',
  'gone.txt': 'delete me\n',
  'old-name.txt': 'moved content\n',
  'script.sh': 'echo hi\n',
  'file-to-dir': 'a file for now\n',
  'dir-to-file/inner.txt': 'a directory for now\n',
  'tree/a/b.txt': 'b\n',
  'tree/c.txt': 'c\n',
  'ignored/.gitignore': '*.log\nbuild/\n',
  'secret.txt': 'locked away\n',
};

beforeAll(async () => {
  workspace = await tempDir('wsdiff-ws');
  hostSecrets = await tempDir('wsdiff-host');
  dirs.push(workspace, hostSecrets);
  await writeTree(workspace, BASE_FILES);
  // Latin-1, not UTF-8: a base file whose old side of the diff is not UTF-8 either.
  await writeFile(join(workspace, 'latin1.txt'), Buffer.from('caf\xe9\n', 'latin1'));
  await writeFile(join(hostSecrets, 'secret'), 'HOST-SECRET-CONTENT\n');
});

afterAll(async () => {
  for (const p of providers) await p.release();
  await removeDirs(dirs);
});

async function providerOf(name: string): Promise<LocalSandboxProvider> {
  const rootDir = await tempDir(`wsdiff-root-${name}`);
  dirs.push(rootDir);
  const provider = PROVIDER_FACTORIES.find((f) => f.name === name)!.make({ rootDir });
  providers.push(provider);
  return provider;
}

/** A sandbox of the workspace where `script` ran, its diff, and its tree as the agent left it. */
async function agentRun(
  provider: LocalSandboxProvider,
  script: string,
  options: { workspaceKey?: string } = {},
): Promise<{ id: string; tree: string }> {
  const { id } = await provider.create({
    idempotencyKey: key(),
    workspaceDir: workspace,
    ...options,
  });
  const r = await provider.exec(id, { shell: script }, { timeoutMs: 120_000 });
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  const tree = (await provider.exec(id, { shell: TREE })).stdout;
  return { id, tree };
}

/** Applies `diff` in a fresh sandbox of the base and returns its tree. */
async function appliedTree(provider: LocalSandboxProvider, diff: string): Promise<string> {
  const { id } = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
  try {
    const applied = await provider.exec(id, ['git', 'apply', '-'], { stdin: diff });
    expect(applied.stderr).toBe('');
    expect(applied.exitCode).toBe(0);
    return (await provider.exec(id, { shell: TREE })).stdout;
  } finally {
    await provider.destroy(id);
  }
}

const EDITS = [
  "printf 'line 1\\nline two\\n' > edit.txt",
  'mkdir -p new/dir && echo "brand new" > new/dir/new.txt',
  'head -c 4096 /dev/urandom > blob.bin',
  'rm gone.txt',
  'mv old-name.txt new-name.txt',
  'chmod +x script.sh',
  'ln -s keep.txt link-to-keep',
  'rm file-to-dir && mkdir file-to-dir && echo inside > file-to-dir/now.txt',
  'rm -r dir-to-file && echo "a file now" > dir-to-file',
  'rm -r tree && mkdir -p tree/a && echo "b again" > tree/a/b.txt',
  "printf 'caf\\351 cr\\350me\\n' > latin1.txt",
  "printf 'na\\357ve\\n' > new-latin1.txt",
  "printf 'spaces and\\nnewline\\n' > 'name with spaces\nand a newline'",
  "echo unicode > 'ünïcødé ✓.txt'",
  'echo raw > "$(printf \'raw\\377name\')"',
  "echo magic > ':(top,exclude)x' && echo glob > '*.txt' && echo dash > -n",
  'echo noise > ignored/debug.log',
  "echo noise > 'ignored/:(top)magic.log'",
  'mkdir -p ignored/build && echo out > ignored/build/out.o',
  'echo more >> secret.txt && chmod 000 secret.txt',
].join(' && ');

/**
 * What the applied tree cannot show: ignored files; the chmod 000 file, which the agent cannot
 * read back (its edit is asserted in the diff).
 */
const comparable = (tree: string): string =>
  tree
    .split('\n')
    .filter((l) => !/ignored\/.*\.log|ignored\/build|\.\/secret\.txt/.test(l))
    .sort()
    .join('\n');

describe.each(PROVIDER_FACTORIES.map((f) => f.name))('workspaceDiff on %s', (name) => {
  let provider: LocalSandboxProvider;
  beforeAll(async () => {
    provider = await providerOf(name);
  });

  it('captures every kind of change and applies back to the same tree', async () => {
    const agent = await agentRun(provider, EDITS);
    const changes = await workspaceDiff(provider, agent.id);
    expect(changes.rejected).toBeUndefined();
    expect(changes.skipped).toEqual([]);
    const { diff } = changes;
    expect(diff).toContain('deleted file mode 100644');
    expect(diff).toContain('GIT binary patch');
    expect(diff).toContain('new mode 100755');
    expect(diff).toContain('new file mode 120000');
    expect(diff).toContain('+more');
    expect(diff).not.toContain('debug.log');
    expect(diff).not.toContain('magic.log');
    expect(diff).not.toContain('out.o');
    expect(diff).not.toContain('rename');
    expect(comparable(await appliedTree(provider, diff))).toBe(comparable(agent.tree));
    await provider.destroy(agent.id);
  });

  it('gives the same diff with the .git deleted', async () => {
    const kept = await agentRun(provider, EDITS);
    const removed = await agentRun(provider, `${EDITS} && rm -rf .git`);
    const diff = (await workspaceDiff(provider, removed.id)).diff;
    // The random blob differs between the two runs; everything else must match.
    const strip = (d: string): string =>
      d.replace(/diff --git a\/blob\.bin[\s\S]*?(?=diff --git)/, '');
    expect(strip(diff)).toBe(strip((await workspaceDiff(provider, kept.id)).diff));
    expect(comparable(await appliedTree(provider, diff))).toBe(comparable(removed.tree));
    await provider.destroy(kept.id);
    await provider.destroy(removed.id);
  });

  it('is empty when nothing changed', async () => {
    const { id } = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    expect(await workspaceDiff(provider, id)).toEqual({ diff: '', skipped: [] });
    await provider.destroy(id);
  });
});

describe('workspaceDiff against what the agent may leave', () => {
  let provider: LocalSandboxProvider;
  beforeAll(async () => {
    provider = await providerOf('bubblewrap');
  });

  it('reads a shared workspace layer the same way', async () => {
    const agent = await agentRun(provider, EDITS, { workspaceKey: `wsdiff-${process.pid}` });
    const { diff } = await workspaceDiff(provider, agent.id);
    expect(comparable(await appliedTree(provider, diff))).toBe(comparable(agent.tree));
    await provider.destroy(agent.id);
  });

  it('ignores a corrupted .git and one that sets drivers, textconv, hooks and attributes', async () => {
    const marker = join(hostSecrets, 'driver-ran');
    const agent = await agentRun(
      provider,
      [
        'echo edited >> keep.txt',
        "printf 'a\\0b' > nul.bin",
        // Attributes and config that would force text output, run programs or hide the edit.
        "printf '* diff=evil\\nnul.bin diff\\nkeep.txt -diff\\n' > .gitattributes",
        `git config diff.evil.textconv 'sh -c "touch ${marker}; echo forged"'`,
        `git config diff.external 'sh -c "touch ${marker}"'`,
        'git config diff.noprefix true',
        'git config core.attributesFile /workspace/.gitattributes',
        `mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/post-index-change && chmod +x .git/hooks/post-index-change`,
        'echo garbage > .git/index',
        'rm -rf .git/objects/*',
        'echo "ref: refs/heads/nowhere" > .git/HEAD',
      ].join(' && '),
    );
    const { diff } = await workspaceDiff(provider, agent.id);
    expect(existsSync(marker)).toBe(false);
    expect(diff).toContain('diff --git a/keep.txt b/keep.txt');
    expect(diff).toContain('+edited');
    expect(diff).not.toContain('forged');
    expect(diff).toMatch(
      /diff --git a\/nul\.bin b\/nul\.bin\nnew file mode 100644\nindex [0-9a-f]+\.\.[0-9a-f]+\nGIT binary patch/,
    );
    expect(comparable(await appliedTree(provider, diff))).toBe(comparable(agent.tree));
    await provider.destroy(agent.id);
  });

  it('never reads through a symlink: links to host files stay links', async () => {
    const secret = join(hostSecrets, 'secret');
    const agent = await agentRun(
      provider,
      [
        'ln -s /etc/shadow shadow-link',
        `ln -s ${secret} host-link`,
        `ln -s ${hostSecrets} host-dir`,
        `ln -s ${secret} .gitignore`,
        `mkdir -p sub && ln -s ${secret} sub/.gitignore`,
      ].join(' && '),
    );
    const { diff, skipped } = await workspaceDiff(provider, agent.id);
    expect(skipped).toEqual([]);
    expect(diff).toContain('+/etc/shadow');
    expect(diff).toContain(`+${secret}`);
    expect(diff).toContain(`+${hostSecrets}`);
    expect(diff).not.toContain('HOST-SECRET-CONTENT');
    expect(diff).not.toMatch(/^\+root:/m);
    expect(diff.match(/^new file mode 120000$/gm)).toHaveLength(5);
    expect(comparable(await appliedTree(provider, diff))).toBe(comparable(agent.tree));
    await provider.destroy(agent.id);
  });

  it('skips FIFOs and nested .git directories and lists them', async () => {
    const agent = await agentRun(
      provider,
      'mkfifo pipe && echo kept > kept.txt && mkdir -p vendor/.git && echo x > vendor/.git/HEAD && echo v > vendor/v.txt && rm gone.txt && mkfifo gone.txt',
    );
    const changes = await workspaceDiff(provider, agent.id);
    expect(changes.skipped).toEqual(
      expect.arrayContaining([
        { path: 'pipe', why: 'special_file' },
        { path: 'gone.txt', why: 'special_file' },
        { path: 'vendor/.git', why: 'git_path' },
      ]),
    );
    expect(changes.diff).toContain('+kept');
    expect(changes.diff).toContain('+v');
    // The file a FIFO replaced is gone from the agent's tree.
    expect(changes.diff).toContain('diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644');
    await provider.destroy(agent.id);
  });

  it('skips a path too long for the host and takes the rest', async () => {
    const name = 'x'.repeat(250);
    const deep = `${Array.from({ length: 16 }, () => name).join('/')}/${'y'.repeat(60)}`;
    const agent = await agentRun(
      provider,
      `mkdir -p ${deep} && echo deep > ${deep}/f && echo short > short.txt`,
    );
    const changes = await workspaceDiff(provider, agent.id);
    expect(changes.skipped).toHaveLength(1);
    expect(changes.skipped[0]!.why).toBe('unreadable');
    expect(changes.diff).toContain('+short');
    await provider.destroy(agent.id);
  });

  it(
    'rejects changes whose .gitignore rules take too long to apply',
    { timeout: 240_000 },
    async () => {
      const { id } = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
      // Thousands of wildcard patterns over 60,000 new paths: minutes of matching. The scratch tree
      // holds no files, so git looks each one up for every directory-only pattern: over 20,000
      // paths that took 54 s on a fast machine, inside the 60 s budget.
      let rules = '';
      for (let i = 0; rules.length < 250 * 1024; i++)
        rules += `*${(i * 7919).toString(2).slice(-6)}*${i.toString(2).slice(-6)}*/\n`;
      await provider.writeFile(id, '.gitignore', rules);
      await provider.exec(
        id,
        { shell: 'mkdir d && cd d && seq 1 60000 | while read i; do : > f$i; done' },
        { timeoutMs: 120_000 },
      );
      const changes = await workspaceDiff(provider, id);
      expect(changes).toMatchObject({
        diff: '',
        rejected: 'the .gitignore rules took too long to apply',
      });
      await provider.destroy(id);
    },
  );

  it('takes many files', async () => {
    const { id } = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    await provider.exec(id, {
      shell: 'mkdir many && cd many && seq 1 20000 | while read i; do echo $i > f$i; done',
    });
    const { diff } = await workspaceDiff(provider, id);
    expect(diff.match(/^diff --git /gm)).toHaveLength(20000);
    expect(diff).toMatch(
      /^diff --git a\/many\/f20000 b\/many\/f20000\nnew file mode 100644\nindex 0+\.\.[0-9a-f]+\n--- \/dev\/null\n\+\+\+ b\/many\/f20000\n@@ -0,0 \+1 @@\n\+20000$/m,
    );
    await provider.destroy(id);
  });

  it('rejects a diff over MAX_DIFF_BYTES, and a single file over it, and the reward is 0 diff_rejected', async () => {
    const third = Math.ceil(MAX_DIFF_BYTES / 3);
    const spread = await agentRun(
      provider,
      `for i in 1 2 3 4; do head -c ${third} /dev/urandom > big$i; done`,
    );
    const many = await workspaceDiff(provider, spread.id);
    expect(many).toMatchObject({ diff: '', rejected: expect.stringContaining('larger than') });
    await provider.destroy(spread.id);

    // An ignored one is not part of the changes, whatever its size.
    const ignoredOnly = await agentRun(
      provider,
      `head -c ${MAX_DIFF_BYTES + 1} /dev/zero > ignored/huge.log`,
    );
    expect(await workspaceDiff(provider, ignoredOnly.id)).toEqual({ diff: '', skipped: [] });
    await provider.destroy(ignoredOnly.id);

    const one = await agentRun(provider, `head -c ${MAX_DIFF_BYTES + 1} /dev/zero > huge`);
    const huge = await workspaceDiff(provider, one.id);
    expect(huge).toMatchObject({ diff: '', rejected: expect.stringContaining('huge is') });
    await provider.destroy(one.id);

    const { task, dir } = await pythonTask();
    dirs.push(dir);
    const result = await evaluateReward(
      { provider },
      { task, agentDiff: huge.diff, agentDiffRejected: huge.rejected, idempotencyKey: key() },
    );
    expect(result).toMatchObject({ reward: 0, resolved: false, reason: 'diff_rejected' });
    expect(result.detail).toContain('huge is');
    expect(await provider.list({ role: 'reward' })).toEqual([]);
  });

  it('scores an agent that deleted its .git: the fix resolves, no fix is 0', async () => {
    const { task, dir } = await pythonTask();
    dirs.push(dir);
    const score = async (
      files: Record<string, string>,
    ): Promise<{ reward: number; reason: string }> => {
      const { id } = await provider.create({ idempotencyKey: key(), workspaceDir: dir });
      for (const [path, content] of Object.entries(files))
        await provider.writeFile(id, path, content);
      await provider.exec(id, ['rm', '-rf', '.git']);
      const changes = await workspaceDiff(provider, id);
      await provider.destroy(id);
      return evaluateReward(
        { provider },
        {
          task,
          agentDiff: changes.diff,
          agentDiffRejected: changes.rejected,
          idempotencyKey: key(),
        },
      );
    };
    expect(await score(PY_FIX)).toMatchObject({ reward: 1, reason: 'resolved' });
    expect(await score({})).toMatchObject({ reward: 0, reason: 'unresolved' });
  });

  it('throws SandboxGoneError (retryable) for a sandbox that is gone', async () => {
    const { id } = await provider.create({ idempotencyKey: key(), workspaceDir: workspace });
    await provider.destroy(id);
    const err = await workspaceDiff(provider, id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxGoneError);
    expect((err as SandboxGoneError).retryable).toBe(true);
  });
});
