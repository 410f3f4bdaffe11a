/**
 * Reads files of a sandbox's workspace on the host and stores them as git blobs (in a scratch
 * object directory). The host is root and the files are the agent's, so no read may go
 * through a symlink the agent made: a file is opened with O_NOFOLLOW (not its last component) and
 * then the descriptor's own path must be the path asked for (not a parent swapped for a symlink
 * meanwhile); a FIFO or device never blocks the open (O_NONBLOCK) and is refused by its type.
 * Git is handed the bytes, never a path.
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { constants } from 'node:fs';
import { open, readlink, type FileHandle } from 'node:fs/promises';
import { startHostGit, type HostGitDirs, type RunningGit } from './host-git.js';

const OPEN_FLAGS =
  constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const CHUNK = 1024 * 1024;

/**
 * Why a path of the workspace was left out of the diff: not a file, symlink or directory; not
 * readable by the host (or too long a path for it); replaced while read; a path git cannot hold (`.git` below the top, a
 * symlinked `.gitmodules`).
 */
export type SkipReason = 'special_file' | 'unreadable' | 'changed_while_read' | 'git_path';

/** An open regular file, or why it is not one. */
export type Opened = { fh: FileHandle; size: number; executable: boolean } | { skip: SkipReason };

/** Opens `path` (absolute, as bytes) for reading if it is a regular file reached without symlinks. */
export async function openRegular(path: Buffer): Promise<Opened> {
  let fh: FileHandle;
  try {
    fh = await open(path, OPEN_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENOTDIR')
      return { skip: 'changed_while_read' };
    if (code === 'EACCES' || code === 'EPERM') return { skip: 'unreadable' };
    // A socket cannot be opened at all; a device on the nodev tmpfs is refused.
    if (code === 'ENXIO' || code === 'ENODEV' || code === 'EOPNOTSUPP')
      return { skip: 'special_file' };
    throw err;
  }
  const st = await fh.stat();
  const skip: SkipReason | undefined = !st.isFile()
    ? 'special_file'
    : !(await readlink(`/proc/self/fd/${fh.fd}`, { encoding: 'buffer' })).equals(path)
      ? 'changed_while_read'
      : undefined;
  if (skip) {
    await fh.close();
    return { skip };
  }
  return { fh, size: st.size, executable: (st.mode & 0o100) !== 0 };
}

/** Whether bytes fed in order are UTF-8 so far, without holding them. */
class Utf8Check {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  valid = true;
  feed(chunk: Buffer): void {
    if (!this.valid) return;
    try {
      this.decoder.decode(chunk, { stream: true });
    } catch {
      this.valid = false;
    }
  }
  end(): boolean {
    this.feed(Buffer.alloc(0));
    if (this.valid) {
      try {
        this.decoder.decode();
      } catch {
        this.valid = false;
      }
    }
    return this.valid;
  }
}

/** Reads exactly `size` bytes of `fh` in chunks; fewer means the file shrank under us. */
async function* chunksOf(fh: FileHandle, size: number): AsyncGenerator<Buffer> {
  let left = size;
  while (left > 0) {
    const buf = Buffer.allocUnsafe(Math.min(CHUNK, left));
    const { bytesRead } = await fh.read(buf, 0, buf.length, size - left);
    if (bytesRead === 0) throw new ShrankError();
    left -= bytesRead;
    yield buf.subarray(0, bytesRead);
  }
}

class ShrankError extends Error {}

/** Whether the whole of an open file is UTF-8 (it is closed after). */
export async function isUtf8File(opened: { fh: FileHandle; size: number }): Promise<boolean> {
  const check = new Utf8Check();
  try {
    for await (const chunk of chunksOf(opened.fh, opened.size)) check.feed(chunk);
    return check.end();
  } catch (err) {
    if (err instanceof ShrankError) return false;
    throw err;
  } finally {
    await opened.fh.close();
  }
}

export interface Blob {
  sha: string;
  /** Whether the content is UTF-8 (a diff of it can be text). */
  utf8: boolean;
}

/**
 * Blobs streamed into one pack by `git fast-import` in the scratch object directory: a loose
 * object per file would cost a file creation each, which on a disk is milliseconds.
 */
export class BlobPack {
  private readonly git: RunningGit;

  constructor(dirs: HostGitDirs) {
    this.git = startHostGit(dirs, ['fast-import', '--quiet', '--done']);
    // A git that died is reported by finish(); meanwhile writes just go nowhere.
    this.git.done.catch(() => undefined);
  }

  /**
   * Stores an open file's content (and closes it): read whole first, so a file that changes
   * size while read is left out (`undefined`) rather than stored half. At most `maxBytes`.
   */
  async file(
    opened: { fh: FileHandle; size: number },
    maxBytes: number,
  ): Promise<Blob | undefined> {
    try {
      if (opened.size > maxBytes) return undefined;
      const buf = Buffer.allocUnsafe(opened.size);
      let got = 0;
      while (got < opened.size) {
        const { bytesRead } = await opened.fh.read(buf, got, opened.size - got, got);
        if (bytesRead === 0) return undefined;
        got += bytesRead;
      }
      return await this.bytes(buf);
    } finally {
      await opened.fh.close();
    }
  }

  async bytes(data: Buffer): Promise<Blob> {
    const header = Buffer.from(`blob ${data.length}\0`);
    const sha = createHash('sha1').update(header).update(data).digest('hex');
    // One blob's parts queued in one go, so blobs stored concurrently never interleave.
    await this.write([Buffer.from(`blob\ndata ${data.length}\n`), data, Buffer.from('\n')]);
    return { sha, utf8: isUtf8(data) };
  }

  /** Ends the stream; every blob stored is in the pack once this resolves. */
  async finish(): Promise<void> {
    this.git.stdin.end('done\n');
    await this.git.done;
  }

  private async write(chunks: Buffer[]): Promise<void> {
    let room = true;
    for (const chunk of chunks) room = this.git.stdin.write(chunk);
    if (!room && !this.git.stdin.destroyed) {
      await Promise.race([once(this.git.stdin, 'drain'), this.git.done]);
    }
  }
}
