/**
 * Where runsc keeps its container state and where the runs' bundles go, on the host:
 *
 *   <stateDir>/<pid>/state/         runsc's `--root` for the runs of the process `pid`
 *   <stateDir>/<pid>/bundles/<cid>/ one run's `config.json` and runsc's log
 *
 * A run removes its own bundle and, when it was killed, its runsc state. A process that died
 * mid-run (its runsc children are then killed with the sandbox's cgroup) leaves its directory
 * behind; the first run of any later process on the host deletes such leftovers.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { processAlive } from '../process-alive.js';

const execFileAsync = promisify(execFile);

/** `runsc list --format=json`: the containers of a root. */
const ContainerList = z.array(z.object({ id: z.string() }).loose()).nullable();


export class RunscState {
  /** This process's directory under `stateDir`. */
  readonly dir: string;
  readonly root: string;
  private ready: Promise<void> | undefined;

  constructor(
    private readonly stateDir: string,
    private readonly runscPath: string,
  ) {
    this.dir = join(stateDir, String(process.pid));
    this.root = join(this.dir, 'state');
  }

  bundleDir(containerId: string): string {
    return join(this.dir, 'bundles', containerId);
  }

  /** Makes this process's directories (root only: 0700) and sweeps dead processes' ones, once. */
  prepare(): Promise<void> {
    this.ready ??= (async () => {
      await mkdir(join(this.dir, 'bundles'), { recursive: true, mode: 0o700 });
      await mkdir(this.root, { recursive: true, mode: 0o700 });
      for (const name of await readdir(this.stateDir).catch(() => [])) {
        const pid = Number(name);
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && !processAlive(pid)) {
          await this.sweep(join(this.stateDir, name));
        }
      }
    })();
    return this.ready;
  }

  /** Deletes a container's runsc state, killing what is left of it; one already gone is fine. */
  async deleteContainer(containerId: string, root: string = this.root): Promise<void> {
    await execFileAsync(this.runscPath, [`--root=${root}`, 'delete', '--force', containerId]).catch(
      () => undefined,
    );
  }

  /** Removes this process's directories if no run is left in them (process exit, tests). */
  async release(): Promise<void> {
    await rmdir(join(this.dir, 'bundles')).catch(() => undefined);
    const left = await readdir(this.root).catch(() => []);
    if (left.length === 0) await rm(this.dir, { recursive: true, force: true });
    this.ready = undefined;
  }

  /** A dead process's directory: every container of its root deleted, then the directory. */
  private async sweep(dir: string): Promise<void> {
    const root = join(dir, 'state');
    const listed = await execFileAsync(this.runscPath, [`--root=${root}`, 'list', '--format=json'])
      .then(({ stdout }) => ContainerList.safeParse(JSON.parse(stdout)))
      .catch(() => undefined);
    for (const c of listed?.success ? (listed.data ?? []) : []) await this.deleteContainer(c.id, root);
    await rm(dir, { recursive: true, force: true });
  }
}
