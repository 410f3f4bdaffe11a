/**
 * The tape package for tests of tape-style canaries: tape (a dev dependency) and what it depends
 * on, copied into the test repositories that `require('tape')`, as a repository's own pinned
 * runner would be there.
 */
import { vendorPackage } from '../attacks/repos/build.js';

/** Copies tape and its dependencies into `repo`'s node_modules. */
export async function installTape(repo: string): Promise<void> {
  await vendorPackage('tape', repo);
}
