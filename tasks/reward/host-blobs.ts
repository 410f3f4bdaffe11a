/**
 * Reads files of a sandbox's workspace on the host and stores them as git blobs (loose objects in
 * a scratch object directory). The host is root and the files are the agent's, so no read may go
 * through a symlink the agent made: a file is opened with O_NOFOLLOW (not its last component) and
 * then the descriptor's own path must be the path asked for (not a parent swapped for a symlink
 * meanwhile); a FIFO or device never blocks the open (O_NONBLOCK) and is refused by its type.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readlink, rename, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { createDeflate } from 'node:zlib';

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const CHUNK = 1024 * 1024;

/**
 * Why a path of the workspace was left out of the diff: not a file, symlink or directory; not
 * readable by the host; replaced while read; a path git cannot hold (`.git` below the top, a
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
    if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENOTDIR') return { skip: 'changed_while_read' };
    if (code === 'EACCES' || code === 'EPERM') return { skip: 'unreadable' };
    // A socket cannot be opened at all; a device on the nodev tmpfs is refused.
    if (code === 'ENXIO' || code === 'ENODEV' || code === 'EOPNOTSUPP') return { skip: 'special_file' };
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

/** Loose objects written into `objectDir`. */
export class BlobWriter {
  constructor(private readonly objectDir: string) {}

  /** Stores an open file's content (and closes it); `undefined` when it shrank while read. */
  async file(opened: { fh: FileHandle; size: number }): Promise<Blob | undefined> {
    try {
      return await this.store(opened.size, chunksOf(opened.fh, opened.size));
    } catch (err) {
      if (err instanceof ShrankError) return undefined;
      throw err;
    } finally {
      await opened.fh.close();
    }
  }

  async bytes(data: Buffer): Promise<Blob> {
    return this.store(data.length, (async function* (): AsyncGenerator<Buffer> {
      yield data;
    })());
  }

  private async store(size: number, chunks: AsyncIterable<Buffer>): Promise<Blob> {
    const header = Buffer.from(`blob ${size}\0`);
    const hash = createHash('sha1').update(header);
    const check = new Utf8Check();
    const tmp = join(this.objectDir, `tmp-${randomBytes(8).toString('hex')}`);
    await pipeline(
      async function* (): AsyncGenerator<Buffer> {
        yield header;
        for await (const chunk of chunks) {
          hash.update(chunk);
          check.feed(chunk);
          yield chunk;
        }
      },
      // Fast over small: the objects live only as long as one diff.
      createDeflate({ level: 1 }),
      createWriteStream(tmp),
    );
    const sha = hash.digest('hex');
    await mkdir(join(this.objectDir, sha.slice(0, 2)), { recursive: true });
    await rename(tmp, join(this.objectDir, sha.slice(0, 2), sha.slice(2)));
    return { sha, utf8: check.end() };
  }
}
