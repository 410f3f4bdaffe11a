/**
 * Resolves one image in a process of its own and prints the ImageRoot as JSON: for tests of
 * several processes sharing one layer cache.
 *
 *   node --import tsx test/helpers/resolve-image-child.ts <cacheDir> <reference>
 */
import { LocalImageStore } from '../../sandbox/images/store.js';

const [cacheDir, reference] = process.argv.slice(2);
if (cacheDir === undefined || reference === undefined) {
  process.stderr.write('usage: resolve-image-child.ts <cacheDir> <reference>\n');
  process.exit(2);
}
const root = await new LocalImageStore({ cacheDir }).resolve(reference);
process.stdout.write(`${JSON.stringify(root)}\n`);
