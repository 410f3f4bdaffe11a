'use strict';

/**
 * A least-recently-used cache. A Map keeps insertion order, so the first key is always the least
 * recently used one: reading or writing a key re-inserts it at the end.
 */
class LRUCache {
  constructor({ max, onEvict } = {}) {
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`max must be a positive integer, got ${max}`);
    }
    this.max = max;
    this.onEvict = onEvict;
    this.map = new Map();
    this.hits = 0;
    this.misses = 0;
    this.evictions = 0;
  }

  get size() {
    return this.map.size;
  }

  has(key) {
    return this.map.has(key);
  }

  /** Read without touching recency. */
  peek(key) {
    return this.map.get(key);
  }

  get(key) {
    if (!this.map.has(key)) {
      this.misses++;
      return undefined;
    }
    const value = this.map.get(key);
    this.map.delete(key);
    this.map.set(key, value);
    this.hits++;
    return value;
  }

  set(key, value) {
    if (this.map.size >= this.max) this.evictOldest();
    this.map.delete(key);
    this.map.set(key, value);
    return this;
  }

  delete(key) {
    return this.map.delete(key);
  }

  clear() {
    this.map.clear();
  }

  /** Keys from least to most recently used. */
  keys() {
    return [...this.map.keys()];
  }

  stats() {
    return { hits: this.hits, misses: this.misses, evictions: this.evictions };
  }

  evictOldest() {
    const [key, value] = this.map.entries().next().value;
    this.map.delete(key);
    this.evictions++;
    if (this.onEvict) this.onEvict(key, value);
  }
}

module.exports = { LRUCache };
