/**
 * skopeo, the one tool this store fetches images with: `copy` into a private OCI layout and
 * `inspect --raw` to learn what a tag points at. Its failures become `ImageError`s that say
 * whether trying again can help.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { ImageError } from './types.js';

export interface SkopeoOptions {
  /** The skopeo binary. */
  path: string;
  /** Skopeo auth file for registries that need credentials; none when undefined. */
  authFile?: string;
}

/** Where skopeo's sources are: registries pulled without TLS, given per call. */
export interface SourceOptions {
  insecure: boolean;
}

// The platform sandboxes run; an image index resolves to its linux/amd64 image.
const PLATFORM = ['--override-os', 'linux', '--override-arch', 'amd64'];

const NOT_FOUND =
  /manifest unknown|name unknown|not found|no such file|does not exist|unauthorized|denied|no image tagged|choose an image/i;
const UNREACHABLE =
  /connection refused|no such host|i\/o timeout|timeout|tls handshake|connection reset|network is unreachable|server misbehaving|too many requests|\b50[234]\b|\b429\b|EOF/i;
const DIGEST_MISMATCH = /digest did not match[^"\n]*/i;

/** Classifies a skopeo failure about `reference`. */
export function skopeoError(reference: string, what: string, stderr: string): ImageError {
  const last = stderr.trim().split('\n').filter(Boolean).at(-1) ?? 'no output';
  // skopeo logs `time=… level=fatal msg="…"`; the message is what a reader needs.
  const msg = /msg="((?:[^"\\]|\\.)*)"/.exec(last)?.[1]?.replaceAll('\\"', '"');
  const detail = msg ?? last;
  const mismatch = DIGEST_MISMATCH.exec(stderr);
  if (mismatch)
    return new ImageError(`image ${reference}: ${what}: corrupt blob (${mismatch[0]})`, false);
  if (NOT_FOUND.test(stderr))
    return new ImageError(`image ${reference}: ${what}: not found (${detail})`, false);
  if (UNREACHABLE.test(stderr)) {
    return new ImageError(`image ${reference}: ${what}: source unreachable (${detail})`, true);
  }
  return new ImageError(`image ${reference}: ${what}: ${detail}`, false);
}

export class Skopeo {
  constructor(private readonly options: SkopeoOptions) {}

  private run(args: string[], reference: string, what: string): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      execFile(
        this.options.path,
        args,
        { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
        (err, stdout, stderr) => {
          if (!err) return resolve(stdout);
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
            return reject(
              new ImageError(
                `image ${reference}: ${what}: ${this.options.path} is not installed`,
                false,
              ),
            );
          }
          reject(skopeoError(reference, what, stderr.toString()));
        },
      );
    });
  }

  private auth(flag: string): string[] {
    return this.options.authFile === undefined ? [] : [flag, this.options.authFile];
  }

  /** Copies `source` into the OCI layout `layoutDir` as tag `tag`. */
  async copy(
    source: string,
    layoutDir: string,
    tag: string,
    reference: string,
    src: SourceOptions,
  ): Promise<void> {
    const args = [
      ...PLATFORM,
      'copy',
      '--quiet',
      ...this.auth('--src-authfile'),
      ...(src.insecure ? ['--src-tls-verify=false'] : []),
      source,
      `oci:${layoutDir}:${tag}`,
    ];
    await this.run(args, reference, 'pull');
  }

  /** The exact bytes of the manifest (or image index) a registry serves for `source`. */
  rawManifest(source: string, reference: string, src: SourceOptions): Promise<Buffer> {
    const args = [
      'inspect',
      '--raw',
      ...this.auth('--authfile'),
      ...(src.insecure ? ['--tls-verify=false'] : []),
      source,
    ];
    return this.run(args, reference, 'inspect');
  }

  /**
   * The digest of the manifest a registry serves for `source` (an image index's own digest for a
   * multi-platform image), from its exact bytes.
   */
  async manifestDigest(source: string, reference: string, src: SourceOptions): Promise<string> {
    const raw = await this.rawManifest(source, reference, src);
    return `sha256:${createHash('sha256').update(raw).digest('hex')}`;
  }
}
