/**
 * Opens the SQLite store in a process of its own and prints the migrations it sees: for tests
 * of several processes opening one new store file at once.
 *
 *   node --import tsx test/helpers/sqlite-open-child.ts <file>
 */
import { SqliteStore } from '../../trajectory/store/sqlite.js';

const [file] = process.argv.slice(2);
if (file === undefined) {
  process.stderr.write('usage: sqlite-open-child.ts <file>\n');
  process.exit(2);
}
process.stdout.write('opening\n');
const store = SqliteStore.open(file);
process.stdout.write(`${JSON.stringify(await store.migrations())}\n`);
await store.close();
