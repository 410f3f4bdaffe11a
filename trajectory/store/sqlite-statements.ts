import type Database from 'better-sqlite3';

/**
 * Each SQL text of one connection prepared once, on first use: preparing costs more than running
 * the one-row statements the store issues per turn. First use comes after the migrations, so every
 * statement is compiled against the migrated schema. The store's SQL texts are constants, so the
 * cache stays as small as the store's set of statements.
 */
export class StatementCache {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  get(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}
