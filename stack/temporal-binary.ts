import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Project root (this file lives in `stack/`). */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export class TemporalBinaryError extends Error {
  override name = 'TemporalBinaryError';
}

/**
 * The Temporal CLI: `$TEMPORAL_CLI`, else the one `scripts/setup.sh` built into `.tools/bin`, else
 * `temporal` on PATH.
 */
export function findTemporalBinary(): string {
  const candidates = [
    process.env.TEMPORAL_CLI,
    path.join(PROJECT_ROOT, '.tools', 'bin', 'temporal'),
    ...(process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'temporal')),
  ];
  const found = candidates.find((c): c is string => !!c && existsSync(c));
  if (!found) {
    throw new TemporalBinaryError('no Temporal CLI found: run `bash scripts/setup.sh` (builds it into .tools/bin) or put `temporal` on PATH');
  }
  return found;
}

/** What `scripts/install-temporal-server.sh` puts under `.tools`. */
export interface TemporalServerTools {
  /** The Temporal server (`go.temporal.io/server/cmd/server`). */
  server: string;
  /** Its SQL schema tool (`go.temporal.io/server/cmd/tools/sql`). */
  sqlTool: string;
  /** The PostgreSQL schemas of that server version (`v12/temporal/versioned`, `v12/visibility/versioned`). */
  postgresSchemaDir: string;
}

/** The Temporal server, its SQL tool and schemas in `.tools`, or null when they are not built. */
export function findTemporalServerTools(): TemporalServerTools | null {
  const tools = {
    server: path.join(PROJECT_ROOT, '.tools', 'bin', 'temporal-server'),
    sqlTool: path.join(PROJECT_ROOT, '.tools', 'bin', 'temporal-sql-tool'),
    postgresSchemaDir: path.join(PROJECT_ROOT, '.tools', 'temporal-schema', 'postgresql'),
  };
  return Object.values(tools).every((p) => existsSync(p)) ? tools : null;
}
