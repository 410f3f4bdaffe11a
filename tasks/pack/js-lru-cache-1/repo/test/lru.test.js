'use strict';
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { LRUCache } = require('../lib/lru.js');

describe('LRUCache', () => {
  test('stores and reads values', () => {
    const cache = new LRUCache({ max: 3 });
    cache.set('a', 1).set('b', 2);
    assert.equal(cache.get('a'), 1);
    assert.equal(cache.get('missing'), undefined);
    assert.equal(cache.size, 2);
  });

  test('evicts the least recently used entry', () => {
    const cache = new LRUCache({ max: 2 });
    cache.set('a', 1).set('b', 2);
    cache.get('a');
    cache.set('c', 3);
    assert.deepEqual(cache.keys(), ['a', 'c']);
  });

  test('peek does not change recency', () => {
    const cache = new LRUCache({ max: 2 });
    cache.set('a', 1).set('b', 2);
    assert.equal(cache.peek('a'), 1);
    cache.set('c', 3);
    assert.equal(cache.has('a'), false);
  });

  test('counts hits and misses', () => {
    const cache = new LRUCache({ max: 2 });
    cache.set('a', 1);
    cache.get('a');
    cache.get('b');
    assert.deepEqual(cache.stats(), { hits: 1, misses: 1, evictions: 0 });
  });

  test('rejects a non-positive max', () => {
    assert.throws(() => new LRUCache({ max: 0 }), RangeError);
  });
});
