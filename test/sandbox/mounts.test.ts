import { describe, expect, it } from 'vitest';
import { checkSandboxPath, mountArgs, reachableBy, type HostFs } from '../../sandbox/mounts.js';
import { InvalidSandboxSpecError } from '../../sandbox/provider.js';

type Node = { dir: Record<string, Node>; private?: true } | { link: string } | { file: true };

/** A fake host tree: directories are objects, symlinks `{ link }`, files `{ file: true }`. */
function fakeFs(tree: Record<string, Node>): HostFs {
  const find = (path: string): Node | undefined => {
    let node: Node = { dir: tree };
    for (const part of path.split('/').filter(Boolean)) {
      if (!('dir' in node)) return undefined;
      const next: Node | undefined = node.dir[part];
      if (!next) return undefined;
      node = next;
    }
    return node;
  };
  return {
    lstat: (path) => {
      const node = find(path);
      if (!node) return undefined;
      return {
        isDirectory: () => 'dir' in node,
        isSymbolicLink: () => 'link' in node,
        mode: 'private' in node ? 0o40700 : 'dir' in node ? 0o40755 : 0o100644,
        uid: 0,
        gid: 0,
      };
    },
    readdir: (path) => Object.keys((find(path) as { dir: Record<string, Node> }).dir).sort(),
    readlink: (path) => (find(path) as { link: string }).link,
  };
}

const host = fakeFs({
  bin: { link: 'usr/bin' },
  usr: { dir: { bin: { dir: {} } } },
  opt: { dir: { tool: { dir: {} } } },
  etc: { dir: {} },
  tmp: { dir: { scratch: { dir: {} } } },
  proc: { dir: {} },
  dev: { dir: {} },
  data: { dir: { sandboxes: { dir: {} }, pack: { dir: {} } } },
  secret: { file: true },
});

const plan = {
  workspaceHostDir: '/data/sandboxes/sb-1/workspace',
  tmpHostDir: '/data/sandboxes/sb-1/tmp',
  maskedPaths: ['/data', '/data/sandboxes', '/secret', '/tmp/scratch', '/missing'],
  emptyFile: '/data/sandboxes/.empty',
  readOnlyMounts: [{ hostPath: '/data/runners', sandboxPath: '/opt/agent-rollout/reward' }],
};

describe('mountArgs', () => {
  it('builds the root from host entries, opening directories on the way to missing mount points', () => {
    expect(mountArgs(plan, host)).toEqual([
      '--symlink',
      'usr/bin',
      '/bin',
      '--ro-bind-try',
      '/data',
      '/data',
      '--ro-bind-try',
      '/etc',
      '/etc',
      // /opt is opened up: /opt/agent-rollout does not exist on the host and / is read-only.
      '--perms',
      '755',
      '--dir',
      '/opt',
      '--ro-bind-try',
      '/opt/tool',
      '/opt/tool',
      '--ro-bind-try',
      '/secret',
      '/secret',
      '--ro-bind-try',
      '/usr',
      '/usr',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--bind',
      '/data/sandboxes/sb-1/tmp',
      '/tmp',
      '--size',
      String(64 * 1024 * 1024),
      '--tmpfs',
      '/dev/shm',
      // Nested and missing masks are dropped; /tmp is the sandbox's own anyway.
      '--size',
      '4096',
      '--tmpfs',
      '/data',
      '--remount-ro',
      '/data',
      '--ro-bind',
      '/data/sandboxes/.empty',
      '/secret',
      '--bind',
      '/data/sandboxes/sb-1/workspace',
      '/workspace',
      '--perms',
      '0755',
      '--dir',
      '/opt/agent-rollout',
      '--ro-bind',
      '/data/runners',
      '/opt/agent-rollout/reward',
    ]);
  });

  it('masks only what the sandbox user could reach', () => {
    const fs = fakeFs({
      open: { dir: { hidden: { dir: {} } } },
      closed: { private: true, dir: { hidden: { dir: {} } } },
    });
    const args = mountArgs(
      {
        ...plan,
        readOnlyMounts: [],
        maskedPaths: ['/open/hidden', '/closed/hidden'],
        sandboxUser: { uid: 65534, gid: 65534 },
      },
      fs,
    );
    expect(args).toContain('/open/hidden');
    // Nobody can look up /closed/hidden: root owns /closed with mode 0700.
    expect(args).not.toContain('/closed/hidden');
    expect(reachableBy('/closed/hidden', { uid: 0, gid: 0 }, fs)).toBe(true);
  });

  it('leaves unbound paths out entirely, binding their siblings one by one', () => {
    const fs = fakeFs({
      run: { dir: { lock: { dir: {} }, 'agent-rollout': { dir: { h1: { dir: {} } } } } },
      usr: { dir: {} },
    });
    const args = mountArgs(
      { ...plan, readOnlyMounts: [], maskedPaths: ['/run/agent-rollout/h1'], unboundPaths: ['/run/agent-rollout'] },
      fs,
    );
    expect(args.join(' ')).toContain('--dir /run --ro-bind-try /run/lock /run/lock --ro-bind-try /usr /usr');
    // Neither bound (recursively, with other sandboxes' mounts under it) nor masked: absent.
    expect(args.filter((a) => a.startsWith('/run/agent-rollout'))).toEqual([]);
  });

  it('refuses mount points that cross a symlink', () => {
    expect(() =>
      mountArgs(
        { ...plan, readOnlyMounts: [{ hostPath: '/x', sandboxPath: '/bin/new/tool' }] },
        host,
      ),
    ).toThrow(InvalidSandboxSpecError);
  });

  it('checks sandbox paths', () => {
    for (const bad of ['relative', '/', '/proc/x', '/dev/x', '/a/../b', '/a/']) {
      expect(() => checkSandboxPath(bad), bad).toThrow(InvalidSandboxSpecError);
    }
    expect(() => checkSandboxPath('/opt/agent-rollout/reward')).not.toThrow();
  });
});
