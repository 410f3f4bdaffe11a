import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse, stringify } from '../src/ini.js';

describe('parse', () => {
  test('reads top-level keys into the empty section', () => {
    assert.deepEqual(parse('name = demo\nversion=2\n'), { '': { name: 'demo', version: '2' } });
  });

  test('reads sections', () => {
    const ini = '[server]\nhost = localhost\nport = 8080\n\n[client]\nretries = 3\n';
    assert.deepEqual(parse(ini), {
      '': {},
      server: { host: 'localhost', port: '8080' },
      client: { retries: '3' },
    });
  });

  test('skips comments and strips inline comments', () => {
    const ini = '; generated\n# by hand\n[db]\nuser = admin ; the default user\n';
    assert.deepEqual(parse(ini).db, { user: 'admin' });
  });

  test('rejects a line without a key', () => {
    assert.throws(() => parse('[a]\njust some text\n'), /line 2/);
  });
});

describe('stringify', () => {
  test('writes sections after top-level keys', () => {
    const text = stringify({ '': { name: 'demo' }, server: { port: 8080 } });
    assert.equal(text, 'name = demo\n\n[server]\nport = 8080\n');
  });
});
