/**
 * The result stream of the JS reporters: one JSON line per test result, written to fd 3, which the
 * reward's shell opened on the channel the host reads (tasks/reward/test-run.ts). The write
 * primitive is captured when this module loads (preloaded with `node --require` where the code
 * under test shares the process), so later monkeypatching of `fs` does not silence the stream.
 * Outside the reward (fd 3 not a pipe or socket) nothing is written.
 */
'use strict';
// The runners load reporters and preloads as CommonJS.
/* eslint-disable @typescript-eslint/no-require-imports */
const fs = require('node:fs');

const FD = 3;
const writeSync = fs.writeSync.bind(fs);
const stringify = JSON.stringify.bind(JSON);
let open;
try {
  const stat = fs.fstatSync(FD);
  open = stat.isFIFO() || stat.isSocket();
} catch {
  open = false;
}

/** Writes one line; a failed write (fd closed by the code under test) ends the stream. */
function send(record) {
  if (!open) return;
  try {
    let line = Buffer.from(`${stringify(record)}\n`);
    // A pipe or socket may take a long line in pieces.
    while (line.length > 0) line = line.subarray(writeSync(FD, line));
  } catch {
    open = false;
  }
}

module.exports = {
  result: (id, status) => send({ id, status }),
  end: () => send({ end: true }),
};
