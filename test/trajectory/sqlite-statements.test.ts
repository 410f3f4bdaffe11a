import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StatementCache } from '../../trajectory/store/sqlite-statements.js';

describe('StatementCache', () => {
  it('prepares each SQL text once and runs it again with new parameters', () => {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE t (v INTEGER)');
      const cache = new StatementCache(db);
      const insert = cache.get('INSERT INTO t (v) VALUES (?)');
      expect(cache.get('INSERT INTO t (v) VALUES (?)')).toBe(insert);
      insert.run(1);
      cache.get('INSERT INTO t (v) VALUES (?)').run(2);
      const select = cache.get('SELECT v FROM t ORDER BY v');
      expect(select).not.toBe(insert);
      expect(select.all()).toEqual([{ v: 1 }, { v: 2 }]);
      expect(cache.get('SELECT v FROM t ORDER BY v').all()).toEqual([{ v: 1 }, { v: 2 }]);
    } finally {
      db.close();
    }
  });
});
