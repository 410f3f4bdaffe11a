/**
 * Image references, parsed and validated before anything runs: `docker://…` or a bare
 * `[host[:port]/]name[:tag][@sha256:…]` (docker.io by default, `library/` for a one-component
 * name, `latest` when neither tag nor digest is given), `oci:<layout dir>[:tag]` and
 * `oci-archive:<file>[:tag]`.
 */
import { resolve as resolvePath } from 'node:path';
import { z } from 'zod';
import { ImageError } from './types.js';

/** An image in a registry (`skopeoName` gives its fully qualified `docker://` form). */
export interface RegistryReference {
  transport: 'docker';
  /** Registry host (and port), e.g. `docker.io` or `127.0.0.1:5000`. */
  registry: string;
  repository: string;
  /** Set when the reference names no digest. */
  tag?: string;
  digest?: string;
}

/** An image in an OCI layout directory or an OCI archive file on this host. */
export interface LocalReference {
  transport: 'oci' | 'oci-archive';
  /** Absolute path of the layout directory or archive file. */
  path: string;
  /** The `org.opencontainers.image.ref.name` to pick; none when the source holds one image. */
  tag?: string;
}

export type ImageReference = RegistryReference | LocalReference;

const DEFAULT_REGISTRY = 'docker.io';

/** skopeo's other transports: named so that `dir:x` is an error, not the image `dir` tagged `x`. */
const OTHER_TRANSPORTS = new Set([
  'containers-storage',
  'dir',
  'docker',
  'docker-archive',
  'docker-daemon',
  'ostree',
  'sif',
  'tarball',
  'http',
  'https',
  'file',
]);

// The grammar of github.com/distribution/reference, restricted to what skopeo accepts.
const component = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const hostPattern = /^(?:localhost|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*)(?::[0-9]{1,5})?$/;
const tagSchema = z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/, 'malformed tag');
export const digestSchema = z
  .string()
  .regex(/^(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$/, 'malformed digest');
const repositorySchema = z
  .string()
  .max(255)
  .regex(new RegExp(`^${component}(?:/${component})*$`), 'malformed repository name');
const hostSchema = z.string().regex(hostPattern, 'malformed registry host');
const localPathSchema = z
  .string()
  .min(1, 'empty path')
  .regex(/^[^:]+$/, 'a path with ":" is ambiguous');

function malformed(reference: string, why: string): ImageError {
  return new ImageError(`image ${reference}: malformed reference (${why})`, false);
}

function check<T>(schema: z.ZodType<T>, value: unknown, reference: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw malformed(reference, parsed.error.issues[0]?.message ?? 'invalid');
  return parsed.data;
}

function parseRegistry(rest: string, reference: string): RegistryReference {
  let name = rest;
  let digest: string | undefined;
  const at = name.indexOf('@');
  if (at >= 0) {
    digest = check(digestSchema, name.slice(at + 1), reference);
    name = name.slice(0, at);
  }
  let tag: string | undefined;
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) {
    tag = check(tagSchema, name.slice(colon + 1), reference);
    name = name.slice(0, colon);
  }
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  // As docker does: a first component with a dot or a port, or `localhost`, is a registry host.
  const hasHost =
    first !== '' && (first.includes('.') || first.includes(':') || first === 'localhost');
  const registry = hasHost ? check(hostSchema, first, reference) : DEFAULT_REGISTRY;
  let repository = check(repositorySchema, hasHost ? name.slice(slash + 1) : name, reference);
  if (registry === DEFAULT_REGISTRY && !repository.includes('/'))
    repository = `library/${repository}`;
  if (digest !== undefined) return { transport: 'docker', registry, repository, digest };
  return { transport: 'docker', registry, repository, tag: tag ?? 'latest' };
}

function parseLocal(
  transport: LocalReference['transport'],
  rest: string,
  reference: string,
): LocalReference {
  const colon = rest.lastIndexOf(':');
  const path = colon < 0 ? rest : rest.slice(0, colon);
  const tag = colon < 0 ? undefined : check(tagSchema, rest.slice(colon + 1), reference);
  return { transport, path: resolvePath(check(localPathSchema, path, reference)), tag };
}

/** Parses `reference`; throws a non-retryable `ImageError` naming it when it is malformed. */
export function parseReference(reference: string): ImageReference {
  const text = check(z.string().min(1, 'empty reference').max(4096), reference, reference);
  if (text.startsWith('oci:')) return parseLocal('oci', text.slice(4), reference);
  if (text.startsWith('oci-archive:')) return parseLocal('oci-archive', text.slice(12), reference);
  if (text.startsWith('docker://')) return parseRegistry(text.slice(9), reference);
  const unsupported = /^([a-z-]+):/.exec(text);
  if (unsupported && OTHER_TRANSPORTS.has(unsupported[1]!)) {
    throw malformed(reference, `unsupported transport "${unsupported[1]}"`);
  }
  return parseRegistry(text, reference);
}

/** The reference in skopeo's syntax (a registry image pinned to `digest` when given). */
export function skopeoName(ref: ImageReference, digest?: string): string {
  if (ref.transport !== 'docker') {
    return `${ref.transport}:${ref.path}${ref.tag === undefined ? '' : `:${ref.tag}`}`;
  }
  const pin = digest ?? ref.digest;
  const suffix = pin !== undefined ? `@${pin}` : `:${ref.tag ?? 'latest'}`;
  return `docker://${ref.registry}/${ref.repository}${suffix}`;
}
