/**
 * `<cacheDir>/tmp/`: scratch directories for pulls and unpacks in progress, on the cache's file
 * system so that finished ones are renamed into place. Each is named after the process that
 * made it; what a process that died (killed mid-unpack, say) left behind is removed the first
 * time a store of this cache needs scratch space.
 */
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from '../process-alive.js';

const NAME = /^[a-z]+-(\d+)-/;


export class ScratchSpace {
  private swept: Promise<void> | undefined;

  constructor(readonly dir: string) {}

  /** A new empty directory `<dir>/<kind>-<pid>-<random>` (mode 0700). */
  async make(kind: string): Promise<string> {
    this.swept ??= this.sweep();
    await this.swept;
    return mkdtemp(join(this.dir, `${kind}-${process.pid}-`));
  }

  private async sweep(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    for (const name of await readdir(this.dir)) {
      const pid = Number(NAME.exec(name)?.[1]);
      if (!Number.isInteger(pid) || pid === process.pid || processAlive(pid)) continue;
      await rm(join(this.dir, name), { recursive: true, force: true });
    }
  }
}
