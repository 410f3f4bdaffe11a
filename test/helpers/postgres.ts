import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';

/** Creates an empty, uniquely named database on the run's PostgreSQL cluster; returns its URL. */
export async function freshDatabase(): Promise<string> {
  const server = inject('postgresUrl');
  const name = `test_${randomUUID().replaceAll('-', '')}`;
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.href;
}
