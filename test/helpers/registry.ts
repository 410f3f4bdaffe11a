/**
 * A real OCI registry for tests: Debian's `docker-registry` (distribution 2.8) on a free
 * 127.0.0.1 port, storing in a temp directory. Plain HTTP, so clients pull and push with TLS
 * verification off (skopeo `--src-tls-verify=false` / `--dest-tls-verify=false`; the image store's
 * `insecureRegistries: [host]`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestRegistry {
  /** `127.0.0.1:<port>`, the registry part of image references. */
  host: string;
  /** The registry's storage (`docker/registry/v2/blobs/<algo>/<2 hex>/<hex>/data` are the blobs). */
  storageDir: string;
  /** Stops the registry and removes its storage. */
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

/** Resolves once `GET /v2/` answers, or rejects when the registry exits first. */
async function ready(child: ChildProcess, host: string, output: () => string): Promise<void> {
  let gone = false;
  void exited(child).then(() => (gone = true));
  for (let attempt = 0; attempt < 200; attempt++) {
    if (gone) throw new Error(`docker-registry exited before serving: ${output()}`);
    const ok = await fetch(`http://${host}/v2/`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`docker-registry on ${host} never answered: ${output()}`);
}

/** Starts a registry; retries on another port if the one picked was taken in the meantime. */
export async function startRegistry(): Promise<TestRegistry> {
  const dir = await mkdtemp(join(tmpdir(), 'registry-'));
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const host = `127.0.0.1:${await freePort()}`;
    const config = join(dir, 'config.yml');
    await writeFile(
      config,
      [
        'version: 0.1',
        'log:',
        '  level: error',
        '  accesslog:',
        '    disabled: true',
        'storage:',
        '  filesystem:',
        `    rootdirectory: ${join(dir, 'storage')}`,
        'http:',
        `  addr: ${host}`,
        '',
      ].join('\n'),
    );
    const child = spawn('docker-registry', ['serve', config], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let output = '';
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    try {
      await ready(child, host, () => output);
    } catch (err) {
      lastError = err;
      child.kill('SIGKILL');
      await exited(child);
      continue;
    }
    return {
      host,
      storageDir: join(dir, 'storage'),
      async stop() {
        child.kill('SIGTERM');
        await exited(child);
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError;
}
