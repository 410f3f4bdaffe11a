import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compare, isValid, maxVersion, parse, sort } from '../lib/semver.js';

describe('parse', () => {
  test('splits a full version', () => {
    assert.deepEqual(parse('v1.2.3-beta.1+exp.sha'), {
      major: 1,
      minor: 2,
      patch: 3,
      prerelease: ['beta', '1'],
      build: ['exp', 'sha'],
    });
  });

  test('rejects leading zeros', () => {
    assert.equal(isValid('01.2.3'), false);
    assert.throws(() => parse('1.02.3'), TypeError);
  });
});

describe('compare', () => {
  test('compares numeric parts numerically', () => {
    assert.equal(compare('1.2.3', '1.10.0'), -1);
    assert.equal(compare('2.0.0', '1.99.99'), 1);
  });

  test('ranks a prerelease below its release', () => {
    assert.equal(compare('1.0.0-alpha', '1.0.0'), -1);
    assert.equal(compare('1.0.0', '1.0.0-alpha'), 1);
  });

  test('ignores build metadata', () => {
    assert.equal(compare('1.0.0+build.1', '1.0.0+build.2'), 0);
  });
});

describe('sort', () => {
  test('sorts lowest first without mutating the input', () => {
    const input = ['1.0.0', '0.9.9', '1.0.0-beta'];
    assert.deepEqual(sort(input), ['0.9.9', '1.0.0-beta', '1.0.0']);
    assert.deepEqual(input, ['1.0.0', '0.9.9', '1.0.0-beta']);
  });

  test('maxVersion picks the highest', () => {
    assert.equal(maxVersion(['1.4.0', '1.10.0', '1.9.2']), '1.10.0');
  });
});
