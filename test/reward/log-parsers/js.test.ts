import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canaryPlanOf, type Canary } from '../../../tasks/reward/index.js';
import { parseTestLog, stripAnsi } from '../../../tasks/reward/log-parsers/index.js';
import type { LogParser } from '../../../tasks/schema.js';
import { removeDirs, tempDir, writeTree } from '../../sandbox/helpers.js';
import { consoleOf, runnerBin } from './run.js';

/** The same suite for each runner; `t` and `d` are its test and describe functions. */
const suite = (t: string, d: string, check: string): string => `
${d}('math', () => {
  ${t}('adds', () => { ${check.replace('@A', '1 + 1').replace('@B', '2')}; });
  ${t}('fails', () => { ${check.replace('@A', '1').replace('@B', '2')}; });
  ${t}.skip('not yet', () => {});
  ${d}('nested', () => {
    for (const n of [1, 2]) ${t}(\`param \${n}\`, () => { ${check.replace('@A', 'n').replace('@B', '1')}; });
  });
});
${t}('top level', () => {});
`;

const ASSERT = 'assert.strictEqual(@A, @B)';
const EXPECT = 'expect(@A).toBe(@B)';

const dirs: string[] = [];
let root: string;
const canaries: Partial<Record<LogParser, Canary>> = {};

/** The reward's canary for a hidden test file `path` (of `content`), for `parser`'s runner. */
function canaryFor(parser: LogParser, path: string, content: string): Canary {
  const canary = canaryPlanOf({ log_parser: parser })?.make(path, content, [], randomBytes);
  if (!canary) throw new Error(`no canary for ${parser}`);
  canaries[parser] = canary;
  return canary;
}

beforeAll(async () => {
  root = await tempDir('log-js');
  dirs.push(root);
  await writeTree(root, {
    'package.json': '{ "name": "fixture" }\n',
    'jest/a.test.js': `${suite('test', 'describe', EXPECT)}test.todo('later');\n`,
    'jest/b.test.js': "describe('other', () => { test('adds', () => { expect(1).toBe(2); }); });\n",
    'vitest/a.test.mjs': `import { describe, expect, test } from 'vitest';\n${suite('test', 'describe', EXPECT)}test.todo('later');\n`,
    'mocha/a.test.js': `const assert = require('node:assert');\n${suite('it', 'describe', ASSERT)}it('slow', (done) => { setTimeout(done, 120); });\n`,
    'mocha/b.test.js': `describe('hooks', () => {
  beforeEach(() => { throw new Error('hook'); });
  it('never runs', () => {});
});
`,
    'tap/a.test.mjs': `import { describe, test } from 'node:test';
import assert from 'node:assert';
${suite('test', 'describe', ASSERT)}test('later', { todo: true }, () => {});
test('has a # in it', () => {});
`,
  });
  const mochaHidden = "describe('x', () => { it('passes', () => {}); });\n";
  const vitestHidden = "import { test } from 'vitest';\ntest('passes', () => {});\n";
  const jestHidden = "test('passes', () => {});\n";
  await writeTree(root, {
    'canary/mocha/c.test.js': canaryFor('mocha', 'canary/mocha/c.test.js', mochaHidden).text,
    'canary/vitest/c.test.mjs': canaryFor('vitest', 'canary/vitest/c.test.mjs', vitestHidden).text,
    'canary/jest/c.test.js': canaryFor('jest', 'canary/jest/c.test.js', jestHidden).text,
  });
});

afterAll(() => removeDirs(dirs));

/** What the shared suite yields, ids joined with `sep`. */
function suiteResults(sep: string): Record<string, string> {
  const id = (...names: string[]): string => names.join(sep);
  return {
    [id('math', 'adds')]: 'passed',
    [id('math', 'fails')]: 'failed',
    [id('math', 'not yet')]: 'skipped',
    [id('math', 'nested', 'param 1')]: 'passed',
    [id('math', 'nested', 'param 2')]: 'failed',
    'top level': 'passed',
  };
}

describe('log parsers on the real console output of JS runners', () => {
  it('jest (--verbose, two files): suites by indentation, skipped and todo', () => {
    const log = consoleOf(root, `node ${runnerBin('jest')} --ci --verbose --rootDir jest`);
    expect(log).toContain('✕ fails');
    expect(parseTestLog('jest', log)).toEqual({
      ...suiteResults(' > '),
      later: 'skipped',
      'other > adds': 'failed',
    });
  });

  it('jest, one file and colours: the default reporter lists its tests', () => {
    const log = consoleOf(root, `node ${runnerBin('jest')} --color --rootDir jest jest/a.test.js`);
    expect(log).toContain('\x1b[');
    expect(parseTestLog('jest', log)).toEqual({ ...suiteResults(' > '), later: 'skipped' });
  });

  it('vitest (--reporter=verbose)', () => {
    const log = consoleOf(root, `node ${runnerBin('vitest')} run --reporter=verbose --root vitest`);
    expect(stripAnsi(log)).toContain('a.test.mjs > math > adds');
    expect(parseTestLog('vitest', log)).toEqual({ ...suiteResults(' > '), later: 'skipped' });
  });

  it('mocha (spec reporter): full titles, failed hooks under their own title', () => {
    const log = consoleOf(
      root,
      `node ${runnerBin('mocha')} --no-config --no-package mocha/a.test.js mocha/b.test.js`,
    );
    expect(log).toContain('passing');
    expect(parseTestLog('mocha', log)).toEqual({
      ...suiteResults(' '),
      slow: 'passed',
      'hooks "before each" hook for "never runs"': 'failed',
    });
  });

  it.each([
    ['mocha', `node ${runnerBin('mocha')} --no-config --no-package canary/mocha/c.test.js`],
    ['vitest', `node ${runnerBin('vitest')} run --reporter=verbose --root canary/vitest`],
    ['jest', `node ${runnerBin('jest')} --ci --rootDir canary/jest`],
  ] as const)('%s: every canary fails under the id the log parser gives it', (parser, command) => {
    const results = parseTestLog(parser, consoleOf(root, command));
    const ids = canaries[parser]!.ids;
    expect(ids.length).toBeGreaterThanOrEqual(2);
    expect(results).toEqual({
      ...Object.fromEntries(ids.map((id) => [id, 'failed'])),
      [parser === 'mocha' ? 'x passes' : 'passes']: 'passed',
    });
  });

  it('TAP (node --test --test-reporter=tap): subtests, SKIP and TODO, escaped #', () => {
    const log = consoleOf(root, 'node --test --test-reporter=tap tap/a.test.mjs');
    expect(log).toContain('# Subtest: nested');
    expect(parseTestLog('tap', log)).toEqual({
      ...suiteResults(' > '),
      math: 'failed',
      'math > nested': 'failed',
      later: 'skipped',
      'has a # in it': 'passed',
    });
  });
});
