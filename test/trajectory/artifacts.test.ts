import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { startS3Server, type S3Server } from '../../stack/s3-server.js';
import {
  ArtifactNotFoundError,
  ArtifactStoreError,
  DirectoryArtifacts,
  openArtifactStore,
  S3Artifacts,
  type ArtifactStore,
} from '../../trajectory/artifacts/index.js';

const BUCKET = 'artifacts';
const root = mkdtempSync(path.join(os.tmpdir(), 'rollout-artifacts-'));
let server: S3Server;
let stores = 0;

beforeAll(async () => {
  server = await startS3Server({ dataDir: path.join(root, 's3'), port: await freePort() });
  await server.createBucket(BUCKET);
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

const s3Options = () => ({
  endpoint: server.endpoint,
  region: server.region,
  accessKeyId: server.accessKeyId,
  secretAccessKey: server.secretAccessKey,
});

/** Each test gets a store of its own: a fresh directory, or a fresh prefix in the one bucket. */
const kinds: { name: string; open: () => ArtifactStore }[] = [
  { name: 'DirectoryArtifacts', open: () => openArtifactStore(path.join(root, 'dirs', `store-${stores++}`)) },
  { name: 'S3Artifacts', open: () => openArtifactStore(`s3://${BUCKET}/runs/store-${stores++}`, { s3: s3Options() }) },
];

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

describe.each(kinds)('$name', ({ open }) => {
  const withStore = (test: (store: ArtifactStore) => Promise<void>) => async () => {
    const store = open();
    try {
      await test(store);
    } finally {
      await store.close();
    }
  };

  it('puts an object and gets it back by key and by URI', withStore(async (store) => {
    const bytes = text('one group file');
    const stored = await store.put('batch-1/groups/g-0.arrow', bytes);
    expect(stored).toEqual({ uri: `${store.uri}batch-1/groups/g-0.arrow`, bytes: bytes.byteLength, sha256: sha256(bytes) });
    expect(await store.get('batch-1/groups/g-0.arrow')).toEqual(bytes);
    expect(await store.get(stored.uri)).toEqual(bytes);
    expect(await store.exists(stored.uri)).toBe(true);
  }));

  it('replaces an object put again under the same key', withStore(async (store) => {
    await store.put('k', text('first'));
    const second = await store.put('k', text('second, longer'));
    expect(second.sha256).toBe(sha256(text('second, longer')));
    expect(await store.get('k')).toEqual(text('second, longer'));
    expect(await store.list()).toEqual(['k']);
  }));

  it('stores an empty object', withStore(async (store) => {
    const stored = await store.put('empty', new Uint8Array());
    expect(stored.bytes).toBe(0);
    expect(stored.sha256).toBe(sha256(new Uint8Array()));
    expect(await store.get('empty')).toEqual(new Uint8Array());
  }));

  it('lists keys by prefix, sorted, and only its own', withStore(async (store) => {
    const other = open();
    await other.put('b1/x', text('other store'));
    await other.close();
    for (const key of ['b2/groups/g-1.arrow', 'b1/groups/g-10.arrow', 'b1/groups/g-1.arrow', 'b1/manifest.json', 'b10/x']) {
      await store.put(key, text(key));
    }
    expect(await store.list()).toEqual(['b1/groups/g-1.arrow', 'b1/groups/g-10.arrow', 'b1/manifest.json', 'b10/x', 'b2/groups/g-1.arrow']);
    expect(await store.list('b1/')).toEqual(['b1/groups/g-1.arrow', 'b1/groups/g-10.arrow', 'b1/manifest.json']);
    expect(await store.list('b1')).toEqual(['b1/groups/g-1.arrow', 'b1/groups/g-10.arrow', 'b1/manifest.json', 'b10/x']);
    expect(await store.list('b1/groups/g-1')).toEqual(['b1/groups/g-1.arrow', 'b1/groups/g-10.arrow']);
    expect(await store.list('b3/')).toEqual([]);
  }));

  it('deletes objects, and deleting a missing one is not an error', withStore(async (store) => {
    const stored = await store.put('b/one', text('1'));
    await store.put('b/two', text('2'));
    await store.delete('b/one');
    await store.delete(stored.uri);
    await store.delete('never/written');
    expect(await store.exists('b/one')).toBe(false);
    expect(await store.list()).toEqual(['b/two']);
  }));

  it('throws ArtifactNotFoundError, naming the URI, for a missing object', withStore(async (store) => {
    await store.put('dir/file', text('x'));
    for (const missing of ['nothing-here', 'dir', 'dir/file/below', `${store.uri}dir/other`]) {
      const error = await store.get(missing).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ArtifactNotFoundError);
      expect((error as ArtifactNotFoundError).uri).toBe(missing.includes('://') ? missing : `${store.uri}${missing}`);
      expect(await store.exists(missing)).toBe(false);
    }
  }));

  it('rejects bad keys and URIs outside the store', withStore(async (store) => {
    for (const key of ['', '/abs', 'a//b', 'a/', '../up', 'a/../b', '.hidden', 'a/.tmp', 'back\\slash', 'nul\u0000']) {
      await expect(store.put(key, text('x')), key).rejects.toThrow(ArtifactStoreError);
    }
    const elsewhere = store.uri.startsWith('s3:') ? 's3://other-bucket/x' : pathToFileURL(path.join(root, 'elsewhere')).href;
    await expect(store.get(elsewhere)).rejects.toThrow(/is outside/);
    await expect(store.list('../')).rejects.toThrow(ArtifactStoreError);
  }));

  it('round-trips a 20 MB object with its sha256', withStore(async (store) => {
    const bytes = new Uint8Array(randomBytes(20 * 1024 * 1024));
    const stored = await store.put('large/trajectories.arrow', bytes);
    expect(stored.bytes).toBe(bytes.byteLength);
    expect(stored.sha256).toBe(sha256(bytes));
    const back = await store.get(stored.uri);
    expect(back.byteLength).toBe(bytes.byteLength);
    expect(sha256(back)).toBe(stored.sha256);
  }));

  it('takes concurrent puts, to different keys and to the same key', withStore(async (store) => {
    const many = Array.from({ length: 24 }, (_, i) => randomBytes(64 * 1024 + i));
    await Promise.all(many.map((bytes, i) => store.put(`many/g-${String(i).padStart(2, '0')}`, bytes)));
    expect(await store.list('many/')).toHaveLength(many.length);
    for (const [i, bytes] of many.entries()) {
      expect(sha256(await store.get(`many/g-${String(i).padStart(2, '0')}`))).toBe(sha256(bytes));
    }
    // Racing writers of one key: the object that remains is one of them, whole.
    const racers = Array.from({ length: 8 }, () => randomBytes(256 * 1024));
    await Promise.all(racers.map((bytes) => store.put('same', bytes)));
    expect(racers.map((b) => sha256(b))).toContain(sha256(await store.get('same')));
    expect(await store.list('same')).toEqual(['same']);
  }));
});

describe('DirectoryArtifacts', () => {
  it('is the store of a path and of its file:// URI alike, and leaves no temporary files', async () => {
    const dir = path.join(root, 'dirs', 'by-uri');
    const byPath = openArtifactStore(dir);
    expect(byPath).toBeInstanceOf(DirectoryArtifacts);
    const stored = await byPath.put('b/g.arrow', text('g'));
    expect(stored.uri).toBe(pathToFileURL(path.join(dir, 'b', 'g.arrow')).href);
    const byUri = openArtifactStore(pathToFileURL(dir).href);
    expect(byUri.uri).toBe(byPath.uri);
    expect(await byUri.get(stored.uri)).toEqual(text('g'));
    expect(readdirSync(path.join(dir, 'b'))).toEqual(['g.arrow']);
  });

  it('rejects an empty root and a file:// URI of another host, naming it', () => {
    expect(() => openArtifactStore('')).toThrow(ArtifactStoreError);
    expect(() => openArtifactStore('file://elsewhere/data')).toThrow(/invalid artifact store URI file:\/\/elsewhere\/data/);
  });
});

describe('S3Artifacts', () => {
  it('takes its endpoint, region and credentials from the AWS_* environment', async () => {
    const env = {
      AWS_ENDPOINT_URL: server.endpoint,
      AWS_REGION: server.region,
      AWS_ACCESS_KEY_ID: server.accessKeyId,
      AWS_SECRET_ACCESS_KEY: server.secretAccessKey,
    };
    const store = openArtifactStore(`s3://${BUCKET}/env`, { s3: { env } });
    expect(store).toBeInstanceOf(S3Artifacts);
    const stored = await store.put('k', text('from env'));
    expect(stored.uri).toBe(`s3://${BUCKET}/env/k`);
    expect(await store.get(stored.uri)).toEqual(text('from env'));
    await store.close();
  });

  it('lists no folder markers that other tools leave', async () => {
    const store = openArtifactStore(`s3://${BUCKET}/markers`, { s3: s3Options() });
    await store.put('b/g.arrow', text('g'));
    const client = new S3Client({
      endpoint: server.endpoint,
      region: server.region,
      credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
      forcePathStyle: true,
    });
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'markers/b/', Body: new Uint8Array() }));
    client.destroy();
    expect(await store.list()).toEqual(['b/g.arrow']);
    await store.close();
  });

  it('names the URI when the server refuses', async () => {
    const store = openArtifactStore(`s3://${BUCKET}/denied`, { s3: { ...s3Options(), secretAccessKey: 'wrong' } });
    await expect(store.put('k', text('x'))).rejects.toThrow(/S3 request for s3:\/\/artifacts\/denied\/k failed/);
    await store.close();
  });

  it('rejects bad URIs and options, naming the URI', () => {
    expect(() => openArtifactStore('s3://Not_A_Bucket/x')).toThrow(/invalid S3 store URI s3:\/\/Not_A_Bucket\/x/);
    expect(() => openArtifactStore('s3://bucket/../x')).toThrow(ArtifactStoreError);
    expect(() => openArtifactStore('gs://bucket/x')).toThrow(/unsupported artifact store URI gs:\/\/bucket\/x/);
    expect(() => openArtifactStore('s3://bucket/x', { s3: { endpoint: 'ftp://host' } })).toThrow(/invalid S3 options for s3:\/\/bucket\/x/);
    expect(() => openArtifactStore('s3://bucket/x', { s3: { endpiont: 'http://h' } as object })).toThrow(/endpiont/);
    expect(() => openArtifactStore('s3://bucket/x', { s3: { accessKeyId: 'a', env: {} } })).toThrow(/go together/);
    expect(() => openArtifactStore('s3://bucket/x', { s3: { env: { AWS_ENDPOINT_URL: 'not a url' } } })).toThrow(/invalid S3 endpoint/);
  });
});
