import { describe, expect, it } from 'vitest';
import { bwrapMountArgs } from '../../sandbox/bwrap-runner.js';
import { checkSandboxPath, maskBinds, reachableBy, type HostFs } from '../../sandbox/mounts.js';
import { InvalidSandboxSpecError } from '../../sandbox/provider.js';

type Node = { dir: Record<string, Node>; private?: true } | { file: true };

/** A host tree: directories are objects, files `{ file: true }`. */
function treeFs(tree: Record<string, Node>): HostFs {
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
        mode: 'private' in node ? 0o40700 : 'dir' in node ? 0o40755 : 0o100644,
        uid: 0,
        gid: 0,
      };
    },
  };
}

const host = treeFs({
  srv: {
    dir: {
      agents: { dir: { bin: { dir: {} }, keys: { dir: {} }, 'token.txt': { file: true } } },
      closed: { private: true, dir: { inner: { dir: {} } } },
    },
  },
  data: { dir: { sandboxes: { dir: {} } } },
});

const user = { uid: 65534, gid: 65534 };

describe('bwrapMountArgs', () => {
  it('shows the root read-only, fresh /proc, /dev and /dev/shm, then the binds in order', () => {
    expect(
      bwrapMountArgs({
        rootDir: '/run/x/sb-1/root',
        shmBytes: 1024,
        binds: [
          { hostPath: '/run/x/sb-1/workspace', sandboxPath: '/workspace', writable: true },
          { hostPath: '/srv/agents', sandboxPath: '/opt/agents', writable: false },
        ],
      }),
    ).toEqual([
      '--ro-bind',
      '/run/x/sb-1/root',
      '/',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--size',
      '1024',
      '--tmpfs',
      '/dev/shm',
      '--bind',
      '/run/x/sb-1/workspace',
      '/workspace',
      '--ro-bind',
      '/srv/agents',
      '/opt/agents',
    ]);
  });
});

describe('maskBinds', () => {
  const plan = {
    binds: [{ hostPath: '/srv/agents', sandboxPath: '/opt/agents', writable: false }],
    emptyDir: '/run/x/.empty-dir',
    emptyFile: '/run/x/.empty',
    user,
  };

  it('covers hidden paths inside a bind where the sandbox sees them, nested ones once', () => {
    expect(
      maskBinds(
        {
          ...plan,
          hiddenPaths: ['/srv/agents/keys', '/srv/agents/keys/sub', '/srv/agents/token.txt', '/data'],
        },
        host,
      ),
    ).toEqual([
      { hostPath: '/run/x/.empty-dir', sandboxPath: '/opt/agents/keys', writable: false },
      { hostPath: '/run/x/.empty', sandboxPath: '/opt/agents/token.txt', writable: false },
    ]);
  });

  it('needs no mask for what no bind shows, what is missing, or what the user cannot reach', () => {
    const binds = [...plan.binds, { hostPath: '/srv/closed', sandboxPath: '/opt/c', writable: false }];
    expect(
      maskBinds(
        { ...plan, binds, hiddenPaths: ['/data/sandboxes', '/srv/agents/missing', '/srv/closed/inner'] },
        host,
      ),
    ).toEqual([]);
    expect(reachableBy('/srv/closed/inner', { uid: 0, gid: 0 }, host)).toBe(true);
  });

  it('keeps a bind whose source lies inside a hidden path: it was bound on purpose', () => {
    expect(maskBinds({ ...plan, hiddenPaths: ['/srv', '/srv/agents/keys'] }, host)).toEqual([
      { hostPath: '/run/x/.empty-dir', sandboxPath: '/opt/agents/keys', writable: false },
    ]);
  });
});

describe('checkSandboxPath', () => {
  it('refuses relative, unnormalised and kernel paths', () => {
    for (const bad of ['relative', '/', '/proc/x', '/dev/x', '/a/../b', '/a/']) {
      expect(() => checkSandboxPath(bad), bad).toThrow(InvalidSandboxSpecError);
    }
    expect(() => checkSandboxPath('/opt/agent-rollout/reward')).not.toThrow();
  });
});
