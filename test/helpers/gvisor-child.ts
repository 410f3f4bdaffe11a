/**
 * A worker that dies mid-command (test/sandbox/gvisor.test.ts): creates a gVisor sandbox, prints
 * its id once a long command runs in it, and waits to be SIGKILLed.
 *   node --import tsx gvisor-child.ts <rootDir> <stateDir> <workspaceDir>
 */
import { GVisorProvider } from '../../sandbox/gvisor/provider.js';

const [rootDir, stateDir, workspaceDir] = process.argv.slice(2);
if (!rootDir || !stateDir || !workspaceDir) throw new Error('usage: gvisor-child.ts <rootDir> <stateDir> <workspaceDir>');
const provider = new GVisorProvider({ rootDir, stateDir });
const info = await provider.create({ idempotencyKey: `crash-${process.pid}`, workspaceDir });
void provider.exec(info.id, { shell: 'echo running > /tmp/running; sleep 300' }, { timeoutMs: 600_000 });
console.log(JSON.stringify({ id: info.id, tmp: provider.tmpHostDir(info.id) }));
