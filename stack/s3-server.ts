import { BucketAlreadyOwnedByYou, CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT } from './temporal-binary.js';
import { stopChild } from './child-process.js';

export interface S3ServerOptions {
  /** Directory for the objects (`<dataDir>/objects`, one folder per bucket) and the server log. */
  dataDir: string;
  /** Port on 127.0.0.1. */
  port: number;
  /** Root access key id. Default: a random one. */
  accessKeyId?: string;
  /** Root secret access key. Default: a random one. */
  secretAccessKey?: string;
  /** How long to wait for the server to answer. Default 30 s. */
  startTimeoutMs?: number;
}

export interface S3Server {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Region the server signs for. */
  region: string;
  /** Creates a bucket; one that exists already is fine. */
  createBucket(name: string): Promise<void>;
  stop(): Promise<void>;
}

export class S3ServerError extends Error {
  override name = 'S3ServerError';
}

const REGION = 'us-east-1';

/**
 * versitygw: `$VERSITYGW`, else the one `scripts/install-s3-server.sh` built into `.tools/bin`,
 * else `versitygw` on PATH.
 */
export function findS3ServerBinary(): string {
  const candidates = [
    process.env.VERSITYGW,
    path.join(PROJECT_ROOT, '.tools', 'bin', 'versitygw'),
    ...(process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'versitygw')),
  ];
  const found = candidates.find((c): c is string => !!c && existsSync(c));
  if (!found) {
    throw new S3ServerError('no versitygw found: run `bash scripts/install-s3-server.sh` (builds it into .tools/bin) or put `versitygw` on PATH');
  }
  return found;
}

/**
 * Starts versitygw, an S3-compatible server over a POSIX directory, on 127.0.0.1 with one root
 * account and no IAM; resolves once it answers HTTP.
 */
export async function startS3Server(options: S3ServerOptions): Promise<S3Server> {
  const objects = path.join(options.dataDir, 'objects');
  mkdirSync(objects, { recursive: true });
  const logFile = path.join(options.dataDir, 's3-server.log');
  const log = openSync(logFile, 'a');
  const accessKeyId = options.accessKeyId ?? `rollout-${randomBytes(6).toString('hex')}`;
  const secretAccessKey = options.secretAccessKey ?? randomBytes(24).toString('hex');
  const address = `127.0.0.1:${options.port}`;
  // Credentials through the environment, not argv, so they do not show in `ps`.
  const env = { ...process.env, ROOT_ACCESS_KEY_ID: accessKeyId, ROOT_SECRET_ACCESS_KEY: secretAccessKey };
  const args = ['--port', address, '--region', REGION, 'posix', objects];
  // Its own process group, like the Temporal dev server: a terminal's Ctrl-C reaches only us, and
  // we stop the server after whatever uses it.
  const child: ChildProcess = spawn(findS3ServerBinary(), args, { stdio: ['ignore', log, log], detached: true, env });
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
  const endpoint = `http://${address}`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  for (;;) {
    if (exited) throw new S3ServerError(`versitygw ${exited}; see ${logFile}`);
    try {
      // Any answer (an unsigned request gets 403) means it is serving.
      await fetch(endpoint, { signal: AbortSignal.timeout(1_000) });
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new S3ServerError(`versitygw did not answer on ${endpoint}: ${(error as Error).message}; see ${logFile}`);
      }
      await sleep(100);
    }
  }
  const client = new S3Client({ endpoint, region: REGION, credentials: { accessKeyId, secretAccessKey }, forcePathStyle: true });
  return {
    endpoint,
    accessKeyId,
    secretAccessKey,
    region: REGION,
    async createBucket(name) {
      try {
        await client.send(new CreateBucketCommand({ Bucket: name }));
      } catch (error) {
        if (!(error instanceof BucketAlreadyOwnedByYou)) throw error;
      }
    },
    async stop() {
      client.destroy();
      if (exited) return;
      await stopChild(child, 'SIGTERM', 10_000);
    },
  };
}
