import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse, splitLine, stringify } from '../src/csv.js';

describe('splitLine', () => {
  test('splits plain fields', () => {
    assert.deepEqual(splitLine('a,b,c'), ['a', 'b', 'c']);
  });

  test('keeps delimiters inside quoted fields', () => {
    assert.deepEqual(splitLine('1,"Smith, John",NY'), ['1', 'Smith, John', 'NY']);
  });

  test('keeps empty fields', () => {
    assert.deepEqual(splitLine('a,,c,'), ['a', '', 'c', '']);
  });

  test('supports another delimiter', () => {
    assert.deepEqual(splitLine('a;"b;c";d', ';'), ['a', 'b;c', 'd']);
  });

  test('rejects an unterminated quote', () => {
    assert.throws(() => splitLine('a,"b'), SyntaxError);
  });
});

describe('parse', () => {
  test('reads records with CRLF line endings', () => {
    assert.deepEqual(parse('name,age\r\nAda,36\r\n'), [
      ['name', 'age'],
      ['Ada', '36'],
    ]);
  });

  test('keeps line breaks inside quoted fields', () => {
    assert.deepEqual(parse('id,note\n1,"line one\nline two"\n'), [
      ['id', 'note'],
      ['1', 'line one\nline two'],
    ]);
  });
});

describe('stringify', () => {
  test('quotes fields that need it', () => {
    assert.equal(stringify([['a', 'b,c', 'say "hi"']]), 'a,"b,c","say ""hi"""\n');
  });
});
