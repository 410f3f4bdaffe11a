/**
 * Hidden test files as real repositories write them, one per runner, for the canary tests: each
 * has several classes or nested `describe` blocks, FAIL_TO_PASS tests in one of them, and the
 * assertion entry points the canaries must cover.
 */

export const UNITTEST_FILE = `import unittest

from calc import add, mul


class TestParsing(unittest.TestCase):
    def setUp(self):
        self.values = [4, 9]

    def test_parse_number(self):
        self.assertEqual(int("42"), 42)

    def test_parse_rejects_text(self):
        with self.assertRaises(ValueError):
            int("forty")


class TestAddition(unittest.TestCase):
    def test_add_small_numbers(self):
        self.assertEqual(add(2, 3), 5)

    def test_add_rejects_none(self):
        with self.assertRaises(TypeError):
            add(None, 1)

    def test_add_is_positive(self):
        self.assertTrue(add(7, 8) > 0)


class TestMultiply(unittest.TestCase):
    def test_mul_keeps_sign(self):
        self.assertIn(mul(-2, 3), [-6])


if __name__ == "__main__":
    unittest.main()
`;

export const UNITTEST_F2P = [
  'tests.test_calc_hidden.TestAddition.test_add_small_numbers',
  'tests.test_calc_hidden.TestAddition.test_add_rejects_none',
];

export const PYTEST_FILE = `import pytest

from calc import add


@pytest.mark.parametrize("a,b,total", [(2, 3, 5), (-1, 1, 0)])
def test_add_pairs(a, b, total):
    assert add(a, b) == total


def test_add_floats():
    assert add(0.5, 0.25) == pytest.approx(0.75)


def test_add_rejects_strings():
    with pytest.raises(TypeError):
        add("one", 1)


class TestAddMany:
    def test_add_chain(self):
        assert add(add(1, 2), 3) == 6
`;

export const PYTEST_F2P = [
  'tests/test_calc_hidden.py::test_add_pairs[2-3-5]',
  'tests/test_calc_hidden.py::test_add_pairs[-1-1-0]',
];

export const MOCHA_FILE = `'use strict';
const assert = require('assert');
const { expect } = require('chai');
const { add } = require('../src/math.cjs');

describe('math', function () {
  describe('add', function () {
    it('adds two numbers', function () {
      assert.strictEqual(add(2, 3), 5);
    });

    it('rejects a missing operand', function () {
      assert.throws(() => add(2));
    });

    it('keeps arrays apart', function () {
      expect([add(1, 1)]).to.deep.equal([2]);
    });
  });

  describe('format', function () {
    it('prints numbers', function () {
      assert.equal(String(12), '12');
    });
  });
});
`;

export const MOCHA_F2P = ['math add adds two numbers', 'math add rejects a missing operand'];

export const TAPE_FILE = `var test = require('tape');
var add = require('../src/math.cjs').add;

test('add sums two numbers', function (t) {
  t.equal(add(2, 3), 5, 'two and three');
  t.end();
});

test('add keeps lists apart', function (t) {
  t.deepEqual([add(1, 1)], [2]);
  t.end();
});

test('add throws without operands', function (t) {
  t.throws(function () { add(); });
  t.end();
});
`;

export const TAPE_F2P = ['add sums two numbers', 'add keeps lists apart'];

export const VITEST_FILE = `import { describe, expect, it } from 'vitest';
import { add } from '../src/math.js';

describe('add', () => {
  it('adds small numbers', () => {
    expect(add(2, 3)).toBe(5);
  });

  it('throws on bad input', () => {
    expect(() => add()).toThrow();
  });

  describe('lists', () => {
    it('keeps arrays apart', () => {
      expect([add(1, 1)]).toEqual([2]);
      expect([add(1, 1)]).not.toEqual([3]);
    });
  });
});
`;

export const VITEST_F2P = ['add > adds small numbers', 'add > throws on bad input'];

export const JEST_FILE = `const { add } = require('../src/math.js');

describe('add', () => {
  test('adds small numbers', () => expect(add(2, 3)).toBe(5));

  test('resolves later', async () => {
    await expect(Promise.resolve(add(1, 2))).resolves.toEqual(3);
  });

  describe('errors', () => {
    test('throws on bad input', () => {
      expect(() => add()).toThrow();
    });
  });
});
`;

export const JEST_F2P = ['add > adds small numbers', 'add > errors > throws on bad input'];
