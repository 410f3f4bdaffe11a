/**
 * Hand-made tar archives (POSIX ustar, no tool in between), for layers no honest tool would
 * write: absolute and `..` member names, links out of the archive, device nodes.
 */
import { writeFile } from 'node:fs/promises';

export interface TarMember {
  /** The member name exactly as stored (up to 100 bytes). */
  name: string;
  /** Default `file`. */
  type?: 'file' | 'dir' | 'symlink' | 'hardlink' | 'char' | 'block';
  /** A file's content. Default empty. */
  content?: string;
  /** A link's target, exactly as stored. */
  linkname?: string;
  /** A device node's numbers. Default 0, 0. */
  major?: number;
  minor?: number;
  /** Default 0o644 (0o755 for directories). */
  mode?: number;
  /** Owner and group by number. Default 0 (root). */
  uid?: number;
  gid?: number;
}

const TYPE_FLAGS = { file: '0', hardlink: '1', symlink: '2', char: '3', block: '4', dir: '5' };

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function header(m: TarMember, size: number): Buffer {
  const block = Buffer.alloc(512);
  const put = (text: string, offset: number, width: number): void => {
    if (Buffer.byteLength(text) > width) throw new Error(`tar field too long: ${text}`);
    block.write(text, offset, width, 'utf8');
  };
  const type = m.type ?? 'file';
  put(m.name, 0, 100);
  put(octal(m.mode ?? (type === 'dir' ? 0o755 : 0o644), 8), 100, 8);
  put(octal(m.uid ?? 0, 8), 108, 8);
  put(octal(m.gid ?? 0, 8), 116, 8);
  put(octal(size, 12), 124, 12);
  put(octal(0, 12), 136, 12);
  put(' '.repeat(8), 148, 8);
  put(TYPE_FLAGS[type], 156, 1);
  put(m.linkname ?? '', 157, 100);
  put('ustar\u000000', 257, 8);
  put(octal(m.major ?? 0, 8), 329, 8);
  put(octal(m.minor ?? 0, 8), 337, 8);
  let sum = 0;
  for (const byte of block) sum += byte;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return block;
}

/** Writes `members` as a tar archive to `file`. */
export async function writeTar(file: string, members: TarMember[]): Promise<void> {
  const parts: Buffer[] = [];
  for (const m of members) {
    const data = Buffer.from(m.type === undefined || m.type === 'file' ? (m.content ?? '') : '');
    parts.push(header(m, data.length), data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  await writeFile(file, Buffer.concat(parts));
}
