/**
 * Python canaries (pytest and unittest), written into a hidden test file among its own tests: as
 * methods of the classes that hold the FAIL_TO_PASS tests (or as module-level functions beside
 * them for pytest), at random test boundaries, in the file's indentation and quote style, named
 * from the words of its test names and failing through each assertion entry point the file's
 * tests use (`self.assertX`, `with self.assertRaises`, bare `assert`, `pytest.raises`,
 * `np.testing.assert_*`...). Neutering any of those makes its canary pass.
 *
 * The file is read by indentation (top-level `class`/`def`, methods one level in), with
 * triple-quoted strings skipped: enough for test modules, which keep tests at those two levels.
 */
import type { Canary, Random } from './canary.js';
import {
  below,
  freshName,
  literalsOf,
  numberPair,
  pick,
  stringPair,
  wordsOf,
  type Literals,
} from './canary-style.js';

interface PyTest {
  name: string;
  /** First line (its first decorator), and one past its last non-blank line. */
  start: number;
  end: number;
}

interface PyScope {
  /** Undefined for module-level functions. */
  className?: string;
  /** A `unittest.TestCase` (its tests use `self.assert…`), which unittest alone runs. */
  testCase: boolean;
  indent: string;
  tests: PyTest[];
  /** One past the scope's last non-blank line. */
  end: number;
  entryPoints: Set<string>;
}

const CODE = /^\s*[^\s#]/;
/** Decorators and marks that skip a class's tests or expect them to fail. */
const SKIP_MARK = /\b(?:skip\w*|xfail|expectedFailure)\b/;
const indentOf = (line: string): string => /^[ \t]*/.exec(line)![0];

/** Lines inside triple-quoted strings (not their first line), which are not code. */
function stringLines(lines: string[]): boolean[] {
  const masked: boolean[] = [];
  let open: string | undefined;
  for (const line of lines) {
    masked.push(open !== undefined);
    for (const m of line.matchAll(/"""|'''/g)) {
      if (open === undefined) open = m[0];
      else if (open === m[0]) open = undefined;
    }
  }
  return masked;
}

const SELF_CALL = /\bself\.(assert[A-Z]\w*|fail)\s*\(/g;
const WITH_SELF = /\bwith\s+self\.(assert[A-Z]\w*)\s*\(/g;
const PYTEST_CALL = /\b(\w+)\.(raises|warns|approx|fail)\s*\(/g;
const NP_TESTING = /\b((?:\w+\.)*testing)\.(assert_\w+)\s*\(/g;

/** The entry points `text` calls: `self.assertEqual`, `with self.assertRaises`, `assert`… */
function entryPointsOf(text: string, pytestNames: Set<string>): Set<string> {
  const found = new Set<string>();
  const withs = new Set<number>();
  for (const m of text.matchAll(WITH_SELF)) {
    found.add(`with self.${m[1]}`);
    withs.add(m.index + m[0].indexOf('self.'));
  }
  for (const m of text.matchAll(SELF_CALL)) if (!withs.has(m.index)) found.add(`self.${m[1]}`);
  if (/^\s*assert\b(?!\s*=)/m.test(text)) found.add('assert');
  for (const m of text.matchAll(PYTEST_CALL))
    if (pytestNames.has(m[1]!)) found.add(`${m[1]}.${m[2]}`);
  for (const m of text.matchAll(NP_TESTING)) found.add(`${m[1]}.${m[2]}`);
  return found;
}

interface Values {
  num: [number, number];
  str: [string, string];
  q: (s: string) => string;
  rnd: Random;
}

/** Exceptions and warnings that need no import. */
const BUILTIN_ERRORS = /^(?:[A-Z]\w*(?:Error|Exception|Warning)|StopIteration|KeyboardInterrupt)$/;

/**
 * Statements that fail through `entryPoint`; a line starting with `\t` is one level deeper.
 * Undefined for an entry point with no failing form known here.
 */
function failingBody(entryPoint: string, v: Values, error: string): string[] | undefined {
  const [a, b] = v.num;
  const [s, t] = v.str.map(v.q) as [string, string];
  const m = /^(with )?(.*)$/.exec(entryPoint)!;
  const full = m[2]!;
  const name = full.slice(full.lastIndexOf('.') + 1);
  const prefix = full.slice(0, full.length - name.length);
  if (m[1] && prefix === 'self.') {
    const args: Record<string, string> = {
      assertRaises: error,
      assertRaisesRegex: `${error}, ${s}`,
      assertWarns: 'UserWarning',
      assertWarnsRegex: `UserWarning, ${s}`,
      assertLogs: '',
    };
    return name in args
      ? [`with self.${name}(${args[name]}):`, `\t${pick(v.rnd, [`len([${a}, ${b}])`, 'pass'])}`]
      : undefined;
  }
  if (prefix === 'self.') {
    const calls: Record<string, string> = {
      assertEqual: `${a}, ${b}`,
      assertEquals: `${a}, ${b}`,
      assertNotEqual: `${a}, ${a}`,
      assertTrue: `${a} == ${b}`,
      assertFalse: `${a} == ${a}`,
      assertIs: `${s} == ${t}, True`,
      assertIsNot: 'None, None',
      assertIsNone: `${a}`,
      assertIsNotNone: 'None',
      assertIn: `${s}, [${t}]`,
      assertNotIn: `${s}, [${s}]`,
      assertIsInstance: `${a}, str`,
      assertNotIsInstance: `${s}, str`,
      assertAlmostEqual: `${a}, ${b}`,
      assertNotAlmostEqual: `${a}, ${a}`,
      assertGreater: `${a}, ${b}`,
      assertGreaterEqual: `${a}, ${b}`,
      assertLess: `${b}, ${a}`,
      assertLessEqual: `${b}, ${a}`,
      assertRegex: `${s}, '(?!)'`,
      assertNotRegex: `${s}, ''`,
      assertCountEqual: `[${a}], [${b}]`,
      assertListEqual: `[${a}], [${b}]`,
      assertTupleEqual: `(${a},), (${b},)`,
      assertSetEqual: `{${a}}, {${b}}`,
      assertDictEqual: `{${s}: ${a}}, {${s}: ${b}}`,
      assertSequenceEqual: `[${a}], [${b}]`,
      assertMultiLineEqual: `${s}, ${t}`,
      assertRaises: `${error}, len, [${a}]`,
      assertRaisesRegex: `${error}, ${s}, len, [${a}]`,
      fail: s,
    };
    return name in calls ? [`self.${name}(${calls[name]})`] : undefined;
  }
  if (entryPoint === 'assert')
    return [pick(v.rnd, [`assert ${a} == ${b}`, `assert [${s}] == [${t}]`])];
  if (name === 'raises')
    return [`with ${prefix}raises(${error}):`, `\t${pick(v.rnd, [`len([${a}, ${b}])`, 'pass'])}`];
  if (name === 'warns') return [`with ${prefix}warns(UserWarning):`, '\tpass'];
  if (name === 'approx') return [`assert ${a} == ${prefix}approx(${b})`];
  if (name === 'fail' && prefix !== '') return [`${prefix}fail(${s})`];
  const np: Record<string, string> = {
    assert_equal: `${a}, ${b}`,
    assert_array_equal: `[${a}], [${b}]`,
    assert_allclose: `[${a}], [${b}]`,
    assert_almost_equal: `${a}, ${b}`,
    assert_array_almost_equal: `[${a}], [${b}]`,
    assert_string_equal: `${s}, ${t}`,
  };
  return name in np && prefix.endsWith('testing.') ? [`${entryPoint}(${np[name]})`] : undefined;
}

interface Parsed {
  lines: string[];
  scopes: PyScope[];
  unit: string;
  names: Set<string>;
}

function parse(content: string, pytestNames: Set<string>): Parsed {
  const lines = content.split('\n');
  const masked = stringLines(lines);
  const isCode = (i: number): boolean => !masked[i] && CODE.test(lines[i]!);
  const lastCodeBefore = (end: number, from: number): number => {
    let e = end;
    while (e > from && !CODE.test(lines[e - 1]!)) e--;
    return e;
  };
  /** The first line of the decorators right above line `i`. */
  const decorated = (i: number, indent: string): number => {
    let s = i;
    while (s > 0 && lines[s - 1]!.startsWith(`${indent}@`)) s--;
    return s;
  };
  const names = new Set<string>();
  const module: PyScope = {
    testCase: false,
    indent: '',
    tests: [],
    end: 0,
    entryPoints: new Set(),
  };
  const scopes: PyScope[] = [module];
  let unit = '';
  let i = 0;
  while (i < lines.length) {
    if (!isCode(i) || indentOf(lines[i]!) !== '') {
      i++;
      continue;
    }
    let next = i + 1;
    while (next < lines.length && !(isCode(next) && indentOf(lines[next]!) === '')) next++;
    const end = lastCodeBefore(next, i);
    const line = lines[i]!;
    const cls = /^class\s+(\w+)\s*(\(([^)]*)\))?\s*:/.exec(line);
    const fn = /^(?:async\s+)?def\s+(\w+)\s*\(/.exec(line);
    if (fn) names.add(fn[1]!);
    if (fn && fn[1]!.startsWith('test')) {
      module.tests.push({ name: fn[1]!, start: decorated(i, ''), end });
      for (const e of entryPointsOf(lines.slice(i, end).join('\n'), pytestNames))
        module.entryPoints.add(e);
      module.end = end;
    }
    if (cls) {
      const bodyLine = lines.slice(i + 1, end).find((l) => CODE.test(l));
      const indent = bodyLine ? indentOf(bodyLine) : '    ';
      if (!unit) unit = indent;
      const scope: PyScope = {
        className: cls[1]!,
        testCase: /TestCase\b/.test(cls[3] ?? ''),
        indent,
        tests: [],
        end,
        entryPoints: new Set(),
      };
      for (let j = i + 1; j < end; j++) {
        const method = new RegExp(`^${indent}(?:async\\s+)?def\\s+(\\w+)\\s*\\(`).exec(lines[j]!);
        if (!method || masked[j]) continue;
        names.add(method[1]!);
        let k = j + 1;
        while (k < end && !(isCode(k) && indentOf(lines[k]!).length <= indent.length)) k++;
        const methodEnd = lastCodeBefore(k, j);
        if (!method[1]!.startsWith('test')) continue;
        scope.tests.push({ name: method[1]!, start: decorated(j, indent), end: methodEnd });
        const text = lines.slice(j, methodEnd).join('\n');
        for (const e of entryPointsOf(text, pytestNames)) scope.entryPoints.add(e);
        if (/\bself\.assert/.test(text)) scope.testCase = true;
      }
      names.add(scope.className!);
      // A skipped or expected-to-fail class would turn its canaries' failures into skips.
      const marked =
        lines.slice(decorated(i, ''), i).some((l) => SKIP_MARK.test(l)) ||
        lines.slice(i + 1, end).some((l) => /^\s*pytestmark\s*=/.test(l) && SKIP_MARK.test(l));
      if (!marked && (scope.tests.length > 0 || scope.testCase)) scopes.push(scope);
    }
    i = next;
  }
  return { lines, scopes, unit: unit || '    ', names };
}

/** `Class` and `test` of a pytest node id, a unittest id or a unittest log id. */
function classAndTest(id: string): [string | undefined, string] {
  const bare = id.replace(/\[.*\]$/, '');
  if (bare.includes('::')) {
    const parts = bare.split('::').slice(1);
    return parts.length >= 2
      ? [parts[parts.length - 2], parts[parts.length - 1]!]
      : [undefined, parts[0]!];
  }
  const log = /^(\w+) \(([\w.]+)\)$/.exec(bare);
  if (log) {
    const where = log[2]!.split('.');
    if (where[where.length - 1] === log[1]) where.pop();
    return [where[where.length - 1], log[1]!];
  }
  const parts = bare.split('.');
  return [parts[parts.length - 2], parts[parts.length - 1]!];
}

export interface PythonCanaryInput {
  framework: 'pytest' | 'unittest';
  path: string;
  content: string;
  failToPass: string[];
  random: Random;
}

/** The hidden test file with canaries written into it, and their ids as the report names them. */
export function pythonCanary({
  framework,
  path,
  content,
  failToPass,
  random,
}: PythonCanaryInput): Canary {
  const pytestNames = new Set(
    [...content.matchAll(/^import\s+pytest(?:\s+as\s+(\w+))?\s*$/gm)].map((m) => m[1] ?? 'pytest'),
  );
  let source = content;
  let parsed = parse(source, pytestNames);
  // A TestCase without tests is a home only when the file has no tests at all (made below).
  const usable = (s: PyScope): boolean =>
    (s.tests.length > 0 || s.testCase) && (framework === 'pytest' || s.testCase);
  const hasTests = (s: PyScope): boolean => s.tests.length > 0 && usable(s);
  if (!parsed.scopes.some(hasTests)) {
    // No test to stand among: a TestCase of the file's own words at its end.
    const binding = /^import unittest\s*$/m.test(source)
      ? 'unittest.TestCase'
      : /^from unittest import .*\bTestCase\b/m.test(source)
        ? 'TestCase'
        : undefined;
    const head = binding ? '' : 'import unittest\n';
    const words = wordsOf(source).filter((w) => w.length > 2);
    const name = freshName(
      random,
      words,
      [1, 2],
      (ws) => `Test${ws.map(cap).join('')}`,
      parsed.names,
    );
    source = `${head}${source.trimEnd()}\n\n\nclass ${name}(${binding ?? 'unittest.TestCase'}):\n    pass\n`;
    parsed = parse(source, pytestNames);
  }
  const { lines, scopes, unit, names } = parsed;
  const wanted = failToPass.map(classAndTest);
  const holdsF2P = (s: PyScope): boolean =>
    s.tests.some((t) => wanted.some(([c, n]) => n === t.name && c === s.className));
  const f2p = scopes.filter((s) => usable(s) && holdsF2P(s));
  const withTests = scopes.filter(hasTests);
  const homes = f2p.length > 0 ? f2p : withTests.length > 0 ? withTests : scopes.filter(usable);

  const allTests = scopes.flatMap((s) => s.tests.map((t) => t.name));
  const snake = allTests.some((n) => n.startsWith('test_'));
  const vocabulary = [
    ...new Set(allTests.flatMap((n) => wordsOf(n).slice(n.startsWith('test') ? 1 : 0))),
  ].map((w) => (snake ? w.toLowerCase() : w));
  const lengths = allTests.map((n) => Math.max(1, wordsOf(n).length - 1));
  const join = (ws: string[]): string =>
    snake ? `test_${ws.join('_')}` : `test${ws.map(cap).join('')}`;
  const literals: Literals = literalsOf(content);
  const double = (content.match(/"/g)?.length ?? 0) > (content.match(/'/g)?.length ?? 0);
  const q = (s: string): string => (double ? `"${s}"` : `'${s}'`);
  const errors = [...content.matchAll(/\b(?:assertRaises(?:Regex)?|raises)\(\s*(\w+)/g)]
    .map((m) => m[1]!)
    .filter((e) => BUILTIN_ERRORS.test(e));
  const error = errors.length > 0 ? pick(random, errors) : 'ValueError';

  // Every entry point a test uses, each in a home of the FAIL_TO_PASS tests that can call it.
  const allowed = (e: string, s: PyScope): boolean => !e.includes('self.') || s.testCase;
  const plan: { entryPoint: string; scope: PyScope }[] = [];
  const used = new Set(scopes.flatMap((s) => [...s.entryPoints]));
  if (used.size === 0) used.add(homes.some((s) => s.testCase) ? 'self.assertEqual' : 'assert');
  for (const e of used) {
    const at = homes.filter((s) => allowed(e, s));
    const scope =
      at.length > 0 ? pick(random, at) : scopes.find((s) => usable(s) && s.entryPoints.has(e));
    if (scope) plan.push({ entryPoint: e, scope });
  }

  const inserts: { at: number; text: string[] }[] = [];
  const ids: string[] = [];
  const uncovered: string[] = [];
  const module = path.replace(/\.py$/, '').replaceAll('/', '.');
  // Each entry point twice: anywhere among the tests, and after the last FAIL_TO_PASS test of its
  // scope (pytest runs tests in file order), so that what those tests import lazily is loaded.
  for (const { entryPoint, scope, late } of plan.flatMap((p) =>
    [false, true].map((late) => ({ ...p, late })),
  )) {
    const values: Values = {
      num: numberPair(random, literals),
      str: stringPair(random, literals, vocabulary),
      q,
      rnd: random,
    };
    const body = failingBody(entryPoint, values, error);
    if (!body) {
      if (!uncovered.includes(entryPoint)) uncovered.push(entryPoint);
      continue;
    }
    const name = freshName(random, vocabulary, lengths, join, names);
    const inClass = scope.className !== undefined;
    const defIndent = inClass ? scope.indent : '';
    const stmtIndent = defIndent + unit;
    const fn = [
      `${defIndent}def ${name}(${inClass ? 'self' : ''}):`,
      ...body.map((l) =>
        l.startsWith('\t') ? `${stmtIndent}${unit}${l.slice(1)}` : `${stmtIndent}${l}`,
      ),
    ];
    const gap = Array.from({ length: inClass ? 1 : 2 }, () => '');
    const lastF2P = late
      ? Math.max(
          -1,
          ...scope.tests.flatMap((t, i) =>
            wanted.some(([c, n]) => n === t.name && c === scope.className) ? [i] : [],
          ),
        )
      : -1;
    const slot = lastF2P + 1 + below(random, scope.tests.length - lastF2P);
    if (slot < scope.tests.length)
      inserts.push({ at: scope.tests[slot]!.start, text: [...fn, ...gap] });
    else inserts.push({ at: scope.end, text: [...gap, ...fn] });
    ids.push(
      framework === 'unittest'
        ? `${module}.${scope.className}.${name}`
        : [path, ...(inClass ? [scope.className] : []), name].join('::'),
    );
  }
  const out = [...lines];
  for (const { at, text } of inserts.sort((x, y) => y.at - x.at)) out.splice(at, 0, ...text);
  return { path, text: out.join('\n'), ids, uncovered };
}

const cap = (w: string): string => w.charAt(0).toUpperCase() + w.slice(1);
