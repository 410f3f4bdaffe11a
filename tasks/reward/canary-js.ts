/**
 * JavaScript and TypeScript canaries (vitest, jest, mocha, node:test, tape), written into a hidden
 * test file among its own tests: `it(…)`/`test(…)` calls inside the `describe` callbacks that
 * hold the FAIL_TO_PASS tests (or among a tape file's top-level `test(…)` calls), at random
 * boundaries between sibling calls, copying a sibling's callee, function style, quotes and
 * indentation, titled with the words of the file's test titles, and failing through each
 * assertion entry point the file's tests use, with the file's own bindings: `assert.X(…)`,
 * `expect(…).[not.|resolves.…]toX(…)`, chai's `expect(…).to.deep.equal(…)`, tape's `t.X(…)`.
 * The file is parsed with TypeScript's parser, which reads JS, JSX and TS alike.
 */
import ts from 'typescript';
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

export type JsStyle = 'vitest' | 'jest' | 'mocha' | 'node-test' | 'tape';

const SUITES = new Set(['describe', 'suite', 'context']);
const TESTS = new Set(['it', 'test', 'specify']);
const NODE_ASSERT = new Set(['assert', 'node:assert', 'assert/strict', 'node:assert/strict']);
const TAPE = new Set(['tape', 'tap']);

interface JsTest {
  statement: ts.Statement;
  call: ts.CallExpression;
  title: string;
  fn: ts.ArrowFunction | ts.FunctionExpression;
}

interface Container {
  path: string[];
  /** The test and suite calls among the container's statements, in order. */
  siblings: ts.Statement[];
  tests: JsTest[];
}

type FunctionNode = ts.ArrowFunction | ts.FunctionExpression;

const isFunction = (n: ts.Node | undefined): n is FunctionNode =>
  n !== undefined && (ts.isArrowFunction(n) || ts.isFunctionExpression(n));

const titleOf = (n: ts.Node | undefined): string | undefined =>
  n && (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) ? n.text : undefined;

/** `describe(title, fn)`-like call of a statement: its callee name, title and callback. */
function callOf(
  statement: ts.Statement,
): { name: string; call: ts.CallExpression; title: string; fn: FunctionNode } | undefined {
  if (!ts.isExpressionStatement(statement)) return undefined;
  let e = statement.expression;
  if (ts.isAwaitExpression(e)) e = e.expression;
  if (!ts.isCallExpression(e) || !ts.isIdentifier(e.expression)) return undefined;
  const title = titleOf(e.arguments[0]);
  const fn = e.arguments[e.arguments.length - 1];
  if (title === undefined || !isFunction(fn)) return undefined;
  return { name: e.expression.text, call: e, title, fn };
}

function containersOf(file: ts.SourceFile, testNames: Set<string>): Container[] {
  const out: Container[] = [];
  const visit = (statements: readonly ts.Statement[], path: string[]): void => {
    const container: Container = { path, siblings: [], tests: [] };
    for (const s of statements) {
      const c = callOf(s);
      if (!c) continue;
      if (SUITES.has(c.name) && ts.isBlock(c.fn.body)) {
        container.siblings.push(s);
        visit(c.fn.body.statements, [...path, c.title]);
      } else if (testNames.has(c.name)) {
        container.siblings.push(s);
        container.tests.push({ statement: s, call: c.call, title: c.title, fn: c.fn });
      }
    }
    if (container.siblings.length > 0) out.push(container);
  };
  visit(file.statements, []);
  return out;
}

interface Bindings {
  /** Names bound to an assert module: node's or chai's. */
  asserts: Map<string, 'node' | 'chai'>;
  expects: Set<string>;
  tape?: string;
}

/** The module a `require('x')` or `require('x').y` initialiser loads, and the property taken. */
function requireOf(init: ts.Expression | undefined): { module: string; prop?: string } | undefined {
  if (!init) return undefined;
  let prop: string | undefined;
  let e = init;
  if (ts.isPropertyAccessExpression(e)) {
    prop = e.name.text;
    e = e.expression;
  }
  if (
    ts.isCallExpression(e) &&
    ts.isIdentifier(e.expression) &&
    e.expression.text === 'require' &&
    e.arguments[0] &&
    ts.isStringLiteral(e.arguments[0])
  )
    return { module: e.arguments[0].text, prop };
  return undefined;
}

function bindingsOf(file: ts.SourceFile, style: JsStyle): Bindings {
  const b: Bindings = { asserts: new Map(), expects: new Set() };
  const bind = (module: string, imported: string | undefined, local: string): void => {
    if (NODE_ASSERT.has(module) && (imported === undefined || imported === 'strict'))
      b.asserts.set(local, 'node');
    else if ((module === 'chai' || module === 'vitest') && imported === 'assert')
      b.asserts.set(local, 'chai');
    else if (imported === 'expect' && ['chai', 'vitest', '@jest/globals'].includes(module))
      b.expects.add(local);
    else if (TAPE.has(module) && (imported === undefined || imported === 'test')) b.tape = local;
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const module = node.moduleSpecifier.text;
      const clause = node.importClause;
      if (clause?.name) bind(module, undefined, clause.name.text);
      const named = clause?.namedBindings;
      if (named && ts.isNamespaceImport(named)) bind(module, undefined, named.name.text);
      if (named && ts.isNamedImports(named))
        for (const el of named.elements)
          bind(module, (el.propertyName ?? el.name).getText(file), el.name.text);
    }
    if (ts.isVariableDeclaration(node)) {
      const req = requireOf(node.initializer);
      if (req && ts.isIdentifier(node.name)) bind(req.module, req.prop, node.name.text);
      if (req && !req.prop && ts.isObjectBindingPattern(node.name))
        for (const el of node.name.elements)
          if (ts.isIdentifier(el.name))
            bind(req.module, el.propertyName?.getText(file) ?? el.name.text, el.name.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  // jest, and vitest with globals (a file that imports nothing from vitest), provide `expect`.
  const importsVitest = /['"]vitest['"]/.test(file.text);
  if ((style === 'jest' || (style === 'vitest' && !importsVitest)) && b.expects.size === 0)
    b.expects.add('expect');
  return b;
}

/** `a.b.c` of a callee or property chain: its root expression and the names after it. */
function chainOf(e: ts.Expression): { root: ts.Expression; names: string[] } {
  const names: string[] = [];
  let root = e;
  while (ts.isPropertyAccessExpression(root)) {
    names.unshift(root.name.text);
    root = root.expression;
  }
  return { root, names };
}

/** Entry points used in a test's callback, as `assert.equal`, `expect.not.toBe`, `t.deepEqual`. */
function entryPointsOf(test: JsTest, b: Bindings, found: Map<string, string>): void {
  const param = test.fn.parameters[0]?.name;
  const tapeParam = b.tape && param && ts.isIdentifier(param) ? param.text : undefined;
  const visit = (node: ts.Node): void => {
    const target = ts.isCallExpression(node)
      ? node.expression
      : ts.isExpressionStatement(node) && ts.isPropertyAccessExpression(node.expression)
        ? node.expression
        : undefined;
    if (target) {
      const { root, names } = chainOf(target);
      if (ts.isIdentifier(root) && b.asserts.has(root.text) && names.length <= 1)
        found.set(`assert${names.map((n) => `.${n}`).join('')}`, root.text);
      else if (ts.isIdentifier(root) && root.text === tapeParam && names.length === 1)
        found.set(`t.${names[0]}`, root.text);
      else if (
        ts.isCallExpression(root) &&
        ts.isIdentifier(root.expression) &&
        b.expects.has(root.expression.text) &&
        names.length > 0
      )
        found.set(`expect.${names.join('.')}`, root.expression.text);
      else if (names[0] === 'should' && names.length > 1)
        found.set(`should.${names.slice(1).join('.')}`, 'should');
    }
    ts.forEachChild(node, visit);
  };
  visit(test.fn.body);
}

interface Values {
  a: string;
  b: string;
  lo: number;
  hi: number;
  s: string;
  t: string;
}

/** A function that does not throw, and one that does. */
const NO_THROW = '() => {}';
const throwing = (v: Values): string => `() => {\n\tthrow new Error(${v.s});\n}`;

/** node's assert and chai's assert: failing argument lists per method. */
function assertArgs(lib: 'node' | 'chai', method: string, v: Values): string | undefined {
  const { a, b, lo, hi, s, t } = v;
  const common: Record<string, string> = {
    equal: `${a}, ${b}`,
    strictEqual: `${a}, ${b}`,
    deepEqual: `[${a}], [${b}]`,
    deepStrictEqual: `[${a}], [${b}]`,
    notEqual: `${a}, ${a}`,
    notStrictEqual: `${a}, ${a}`,
    notDeepEqual: `[${a}], [${a}]`,
    notDeepStrictEqual: `[${a}], [${a}]`,
    ok: `${a} === ${b}`,
    '': `${a} === ${b}`,
    throws: NO_THROW,
    doesNotThrow: throwing(v),
    match: `${s}, /(?!)/`,
    fail: s,
  };
  const node: Record<string, string> = {
    doesNotMatch: `${s}, /(?:)/`,
    ifError: `new Error(${s})`,
    rejects: `Promise.resolve(${a})`,
    doesNotReject: `Promise.reject(new Error(${s}))`,
  };
  const chai: Record<string, string> = {
    isTrue: `${a} === ${b}`,
    isFalse: `${a} === ${a}`,
    isOk: `${a} === ${b}`,
    isNotOk: `${a} === ${a}`,
    include: `[${a}], ${b}`,
    notInclude: `[${a}], ${a}`,
    lengthOf: `[${a}], 2`,
    isNull: a,
    isNotNull: 'null',
    isUndefined: a,
    isDefined: 'undefined',
    exists: 'null',
    notExists: a,
    sameMembers: `[${a}], [${b}]`,
    isAbove: `${lo}, ${hi}`,
    isBelow: `${hi}, ${lo}`,
    closeTo: `${lo}, ${hi}, 0`,
    notMatch: `${s}, /(?:)/`,
    isString: `${lo}`,
    isNumber: s,
    isArray: a,
    notDeepEqual: `[${a}], [${a}]`,
    propertyVal: `{ v: ${a} }, 'v', ${b}`,
    strictEqual: `${s}, ${t}`,
  };
  return { ...common, ...(lib === 'node' ? node : chai) }[method];
}

/** jest's and vitest's matchers: failing `[subject, args]`, plain and under `.not`. */
function matcher(name: string, v: Values): [[string, string], [string, string]] | undefined {
  const { a, b, lo, hi, s } = v;
  const table: Record<string, [[string, string], [string, string]]> = {
    toBe: [
      [a, b],
      [a, a],
    ],
    toEqual: [
      [`[${a}]`, `[${b}]`],
      [`[${a}]`, `[${a}]`],
    ],
    toStrictEqual: [
      [`{ v: ${a} }`, `{ v: ${b} }`],
      [`{ v: ${a} }`, `{ v: ${a} }`],
    ],
    toMatchObject: [
      [`{ v: ${a} }`, `{ v: ${b} }`],
      [`{ v: ${a} }`, `{ v: ${a} }`],
    ],
    toBeTruthy: [
      [`${a} === ${b}`, ''],
      [`${a} === ${a}`, ''],
    ],
    toBeFalsy: [
      [`${a} === ${a}`, ''],
      [`${a} === ${b}`, ''],
    ],
    toThrow: [
      [NO_THROW, ''],
      ['THROWING', ''],
    ],
    toThrowError: [
      [NO_THROW, ''],
      ['THROWING', ''],
    ],
    toContain: [
      [`[${a}]`, b],
      [`[${a}]`, a],
    ],
    toContainEqual: [
      [`[[${a}]]`, `[${b}]`],
      [`[[${a}]]`, `[${a}]`],
    ],
    toMatch: [
      [s, '/(?!)/'],
      [s, '/(?:)/'],
    ],
    toHaveLength: [
      [`[${a}]`, '2'],
      [`[${a}]`, '1'],
    ],
    toBeNull: [
      [a, ''],
      ['null', ''],
    ],
    toBeUndefined: [
      [a, ''],
      ['undefined', ''],
    ],
    toBeDefined: [
      ['undefined', ''],
      [a, ''],
    ],
    toBeGreaterThan: [
      [`${lo}`, `${hi}`],
      [`${hi}`, `${lo}`],
    ],
    toBeGreaterThanOrEqual: [
      [`${lo}`, `${hi}`],
      [`${hi}`, `${lo}`],
    ],
    toBeLessThan: [
      [`${hi}`, `${lo}`],
      [`${lo}`, `${hi}`],
    ],
    toBeLessThanOrEqual: [
      [`${hi}`, `${lo}`],
      [`${lo}`, `${hi}`],
    ],
    toBeCloseTo: [
      [`${lo}`, `${hi}`],
      [`${lo}`, `${lo}`],
    ],
    toBeInstanceOf: [
      [a, 'Array'],
      [`[${a}]`, 'Array'],
    ],
    toBeNaN: [
      [`${lo}`, ''],
      ['NaN', ''],
    ],
  };
  return table[name];
}

/** chai's expect chains: the failing subject and argument of the method or property ending one. */
function chaiExpect(chain: string[], v: Values): [string, string | undefined] | undefined {
  const { a, b, lo, hi, s } = v;
  const not = chain.includes('not');
  const deep = chain.includes('deep');
  const last = chain[chain.length - 1]!;
  const pair = (x: string, y: string): [string, string] => [x, not ? x : y];
  const calls: Record<string, () => [string, string]> = {
    equal: () => (deep ? pair(`[${a}]`, `[${b}]`) : pair(a, b)),
    equals: () => (deep ? pair(`[${a}]`, `[${b}]`) : pair(a, b)),
    eq: () => pair(a, b),
    eql: () => pair(`[${a}]`, `[${b}]`),
    eqls: () => pair(`[${a}]`, `[${b}]`),
    include: () => [`[${a}]`, not ? a : b],
    contain: () => [`[${a}]`, not ? a : b],
    includes: () => [`[${a}]`, not ? a : b],
    contains: () => [`[${a}]`, not ? a : b],
    match: () => [s, not ? '/(?:)/' : '/(?!)/'],
    lengthOf: () => [`[${a}]`, not ? '1' : '2'],
    above: () => (not ? [`${hi}`, `${lo}`] : [`${lo}`, `${hi}`]),
    below: () => (not ? [`${lo}`, `${hi}`] : [`${hi}`, `${lo}`]),
    throw: () => [not ? 'THROWING' : NO_THROW, ''],
    throws: () => [not ? 'THROWING' : NO_THROW, ''],
    Throw: () => [not ? 'THROWING' : NO_THROW, ''],
  };
  const props: Record<string, string> = {
    true: not ? `${a} === ${b}` : `${a} === ${a}`,
    false: not ? `${a} === ${b}` : `${a} === ${a}`,
    ok: not ? `${a} === ${a}` : `${a} === ${b}`,
    null: not ? 'null' : a,
    undefined: not ? 'undefined' : a,
    exist: not ? a : 'null',
    empty: not ? '[]' : `[${a}]`,
  };
  // `true` fails on `a === a` only under `not`; plain `true` needs the false subject.
  if (last === 'true') return [not ? `${a} === ${a}` : `${a} === ${b}`, undefined];
  if (last === 'false') return [not ? `${a} === ${b}` : `${a} === ${a}`, undefined];
  if (last in props) return [props[last]!, undefined];
  return calls[last]?.();
}

interface Rendered {
  code: string;
  async: boolean;
}

/** A statement failing through `entryPoint`, called through `binding`; undefined when unknown. */
function failingStatement(
  entryPoint: string,
  binding: string,
  lib: 'node' | 'chai' | undefined,
  v: Values,
): Rendered | undefined {
  const [kind, ...chain] = entryPoint.split('.');
  const fill = (code: string): string => code.replace('THROWING', throwing(v));
  if (kind === 'assert' && lib) {
    const method = chain[0] ?? '';
    const args = assertArgs(lib, method, v);
    if (args === undefined) return undefined;
    const callee = method ? `${binding}.${method}` : binding;
    const async = lib === 'node' && (method === 'rejects' || method === 'doesNotReject');
    return { code: `${async ? 'await ' : ''}${callee}(${args})`, async };
  }
  if (kind === 't') {
    const method = chain[0]!;
    const tape: Record<string, string> = {};
    for (const m of ['equal', 'equals', 'isEqual', 'is', 'strictEqual', 'strictEquals'])
      tape[m] = `${v.a}, ${v.b}`;
    for (const m of [
      'deepEqual',
      'deepEquals',
      'same',
      'isEquivalent',
      'deepLooseEqual',
      'looseEqual',
      'looseEquals',
    ])
      tape[m] = `[${v.a}], [${v.b}]`;
    for (const m of [
      'notEqual',
      'notEquals',
      'isNot',
      'not',
      'notStrictEqual',
      'doesNotEqual',
      'isInequal',
    ])
      tape[m] = `${v.a}, ${v.a}`;
    for (const m of [
      'notDeepEqual',
      'notSame',
      'notDeepLooseEqual',
      'notLooseEqual',
      'notEquivalent',
    ])
      tape[m] = `[${v.a}], [${v.a}]`;
    for (const m of ['ok', 'true', 'assert']) tape[m] = `${v.a} === ${v.b}`;
    for (const m of ['notOk', 'false', 'notok']) tape[m] = `${v.a} === ${v.a}`;
    for (const m of ['error', 'ifError', 'ifErr', 'iferror']) tape[m] = `new Error(${v.s})`;
    Object.assign(tape, {
      throws: NO_THROW,
      doesNotThrow: throwing(v),
      fail: v.s,
      match: `${v.s}, /(?!)/`,
      doesNotMatch: `${v.s}, /(?:)/`,
    });
    const args = tape[method];
    return args === undefined ? undefined : { code: `${binding}.${method}(${args})`, async: false };
  }
  if (kind === 'should') {
    // chai's should: the same chains as its expect, on the subject's own `should` property.
    const should = chaiExpect(chain, v);
    if (!should) return undefined;
    const call = should[1] === undefined ? '' : `(${should[1]})`;
    return { code: fill(`(${should[0]}).should.${chain.join('.')}${call}`), async: false };
  }
  if (kind !== 'expect') return undefined;
  const last = chain[chain.length - 1]!;
  const jest = matcher(last, v);
  if (jest) {
    const not = chain.includes('not');
    const [subject, args] = jest[not ? 1 : 0];
    const promised = chain[0] === 'resolves' || chain[0] === 'rejects';
    // A resolved promise fails `.rejects` whatever the matcher; `.resolves` compares its value.
    const value = promised ? `Promise.resolve(${subject})` : subject;
    if (promised && (last === 'toThrow' || last === 'toThrowError') && chain[0] === 'resolves')
      return undefined;
    return {
      code: fill(`${promised ? 'await ' : ''}${binding}(${value}).${chain.join('.')}(${args})`),
      async: promised,
    };
  }
  const chai = chaiExpect(chain, v);
  if (!chai) return undefined;
  const [subject, arg] = chai;
  const call = arg === undefined ? '' : `(${arg})`;
  return { code: fill(`${binding}(${subject}).${chain.join('.')}${call}`), async: false };
}

export interface JsCanaryInput {
  style: JsStyle;
  path: string;
  content: string;
  failToPass: string[];
  random: Random;
}

const lineStart = (text: string, pos: number): number => text.lastIndexOf('\n', pos - 1) + 1;
const lineEnd = (text: string, pos: number): number => {
  const n = text.indexOf('\n', pos);
  return n < 0 ? text.length : n;
};

function scriptKind(path: string): ts.ScriptKind {
  if (/\.[mc]?ts$/.test(path)) return ts.ScriptKind.TS;
  if (path.endsWith('.tsx')) return ts.ScriptKind.TSX;
  return path.endsWith('.jsx') ? ts.ScriptKind.JSX : ts.ScriptKind.JS;
}

/** The file with canaries written into it; undefined when it holds no tests to stand among. */
export function jsCanary({
  style,
  path,
  content,
  failToPass,
  random,
}: JsCanaryInput): Canary | undefined {
  const file = ts.createSourceFile(path, content, ts.ScriptTarget.Latest, true, scriptKind(path));
  const bindings = bindingsOf(file, style);
  const testNames = style === 'tape' ? new Set(bindings.tape ? [bindings.tape] : []) : TESTS;
  if (style === 'tape' && !bindings.tape) return undefined;
  const containers = containersOf(file, testNames).filter((c) => c.tests.length > 0);
  if (containers.length === 0) return undefined;
  const sep = style === 'mocha' ? ' ' : ' > ';
  const idOf = (c: Container, title: string): string => [...c.path, title].join(sep);
  const wanted = new Set(failToPass);
  const f2p = containers.filter((c) => c.tests.some((t) => wanted.has(idOf(c, t.title))));
  const homes = f2p.length > 0 ? f2p : containers;

  const entryPoints = new Map<string, string>();
  for (const c of containers) for (const t of c.tests) entryPointsOf(t, bindings, entryPoints);
  let header = '';
  if (entryPoints.size === 0) {
    const [expect] = [...bindings.expects];
    if (expect) entryPoints.set('expect.toBe', expect);
    else if (style === 'tape') entryPoints.set('t.equal', 't');
    else {
      // Nothing the file asserts with is known: node's assert, imported as the file imports.
      const esm = file.statements.some((s) => ts.isImportDeclaration(s));
      header = esm
        ? "import assert from 'node:assert';\n"
        : "const assert = require('node:assert');\n";
      bindings.asserts.set('assert', 'node');
      entryPoints.set('assert.strictEqual', 'assert');
    }
  }

  const titles = containers.flatMap((c) => c.tests.map((t) => t.title));
  const vocabulary = [...new Set(titles.flatMap(wordsOf))];
  const lengths = titles.map((t) => wordsOf(t).length);
  const taken = new Set(titles);
  // Titles and module names are strings no assertion would compare.
  const notValues = new Set([
    ...titles,
    ...containers.flatMap((c) => c.path),
    ...[...content.matchAll(/(?:from\s*|require\(\s*|import\(\s*)['"]([^'"]+)['"]/g)].map(
      (m) => m[1]!,
    ),
  ]);
  const found = literalsOf(content);
  const literals: Literals = { ...found, strings: found.strings.filter((s) => !notValues.has(s)) };
  const quoteOf = (t: JsTest): string => t.call.arguments[0]!.getText(file)[0]!;
  const inserts: { at: number; text: string }[] = [];
  const ids: string[] = [];
  const uncovered: string[] = [];
  const unit = /\n([ \t]+)\S/.exec(content)?.[1] ?? '  ';
  const usesEnd = /\.end\(\)/.test(content);
  const usesPlan = !usesEnd && /\.plan\(\d+\)/.test(content);

  // Each entry point twice: anywhere among the tests, and after the last FAIL_TO_PASS test of its
  // block, so that code under test imported lazily by those tests is loaded when one runs.
  const plan = [...entryPoints].flatMap(([entryPoint, binding]) =>
    [false, true].map((late) => ({ entryPoint, binding, late })),
  );
  for (const { entryPoint, binding, late } of plan) {
    const [num, str] = [numberPair(random, literals), stringPair(random, literals, vocabulary)];
    const home = pick(random, homes);
    const sibling = pick(random, home.tests);
    const q = quoteOf(sibling);
    // The file's literals and words hold no quotes or backslashes (canary-style.ts).
    const mark = q === '`' ? "'" : q;
    const quote = (s: string): string => `${mark}${s}${mark}`;
    const values: Values = {
      a: `${num[0]}`,
      b: `${num[1]}`,
      lo: num[0],
      hi: num[1],
      s: quote(str[0]),
      t: quote(str[1]),
    };
    if (pick(random, [true, false])) [values.a, values.b] = [values.s, values.t];
    const lib = entryPoint.startsWith('assert') ? bindings.asserts.get(binding) : undefined;
    const param = sibling.fn.parameters[0]?.getText(file);
    const tapeParam = style === 'tape' ? (param ?? 't') : undefined;
    const statement = failingStatement(entryPoint, tapeParam ?? binding, lib, values);
    if (!statement) {
      if (!uncovered.includes(entryPoint)) uncovered.push(entryPoint);
      continue;
    }
    const title = freshName(random, vocabulary, lengths, (ws) => ws.join(' '), taken);
    const start = sibling.statement.getStart(file);
    // A sibling that shares its line with other code (`describe('x', () => { it(…) })`) is
    // copied without an indent, and canaries go right beside the calls, not at line starts.
    const lead = content.slice(lineStart(content, start), start);
    const ownLines = home.siblings.every((x) => {
      const at = x.getStart(file);
      return (
        /^[ \t]*$/.test(content.slice(lineStart(content, at), at)) &&
        /^[ \t]*;?[ \t]*(?:\n|$)/.test(content.slice(x.getEnd()))
      );
    });
    const indent = ownLines ? lead : '';
    const inner = indent + unit;
    const semi = sibling.statement.getText(file).endsWith(';') ? ';' : '';
    const code = [
      // tape ends a test at `t.end()` or when its plan is met: whichever the file's tests use.
      ...(tapeParam && usesPlan ? [`${tapeParam}.plan(1)`] : []),
      statement.code.replaceAll('\n\t', `\n${inner}${unit}`).replaceAll('\n}', `\n${inner}}`),
      ...(tapeParam && usesEnd ? [`${tapeParam}.end()`] : []),
    ]
      .map((l) => `${inner}${l}${semi}`)
      .join('\n');
    const async =
      statement.async || sibling.fn.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword);
    const fn = ts.isArrowFunction(sibling.fn)
      ? `${async ? 'async ' : ''}(${tapeParam ?? ''}) => {`
      : `${async ? 'async ' : ''}function (${tapeParam ?? ''}) {`;
    const callee = (sibling.call.expression as ts.Identifier).text;
    // An expression-bodied arrow where the sibling is one and the statement fits on a line.
    const short =
      ts.isArrowFunction(sibling.fn) &&
      !ts.isBlock(sibling.fn.body) &&
      !tapeParam &&
      !statement.code.includes('\n');
    const test = short
      ? `${indent}${callee}(${quote(title)}, ${fn.slice(0, -2)} ${statement.code})${semi}`
      : `${indent}${callee}(${quote(title)}, ${fn}\n${code}\n${indent}})${semi}`;
    // A blank line between tests where the file has one.
    const gap = home.siblings.some(
      (x, i) =>
        i > 0 && /\n[ \t]*\n/.test(content.slice(home.siblings[i - 1]!.getEnd(), x.getStart(file))),
    )
      ? '\n'
      : '';
    const lastF2P = late
      ? Math.max(
          -1,
          ...home.tests
            .filter((t) => wanted.has(idOf(home, t.title)))
            .map((t) => home.siblings.indexOf(t.statement)),
        )
      : -1;
    const slot = lastF2P + 1 + below(random, home.siblings.length - lastF2P);
    if (slot < home.siblings.length) {
      const at = home.siblings[slot]!.getStart(file);
      inserts.push(
        ownLines
          ? { at: lineStart(content, at), text: `${test}\n${gap}` }
          : { at, text: `${test} ` },
      );
    } else {
      const end = home.siblings[home.siblings.length - 1]!.getEnd();
      inserts.push(
        ownLines
          ? { at: lineEnd(content, end), text: `\n${gap}${test}` }
          : { at: end, text: ` ${test}` },
      );
    }
    ids.push(idOf(home, title));
  }
  let text = content;
  for (const { at, text: t } of inserts.sort((x, y) => y.at - x.at))
    text = text.slice(0, at) + t + text.slice(at);
  return { path, text: header + text, ids, uncovered };
}
