import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JUnitParseError, parseJUnit } from '../../tasks/reward/junit.js';
import { parseUnittestJson, ReportParseError } from '../../tasks/reward/report.js';
import { removeDirs, tempDir, writeTree } from '../sandbox/helpers.js';

const dirs: string[] = [];
afterAll(() => removeDirs(dirs));

/** What Node 20's junit reporter wrote for the suite in the live test below (trimmed). */
const NODE20_SAMPLE = `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
	<testsuite name="math" time="0.003143" disabled="0" errors="0" tests="2" failures="1" skipped="1" hostname="vm">
		<testcase name="adds &lt;&amp;&amp;quot;'>" time="0.000519" classname="test"/>
		<testsuite name="nested" time="0.001749" disabled="0" errors="0" tests="3" failures="1" skipped="2" hostname="vm">
			<testcase name="mul" time="0.001394" classname="test" failure="4 == 5">
				<failure type="testCodeFailure" message="4 == 5">
Error [ERR_TEST_FAILURE]: 4 == 5
    at TestContext.&lt;anonymous> (/tmp/nt/test/a.test.js:6:28)
				</failure>
			</testcase>
			<testcase name="skipped one" time="0.000078" classname="test">
				<skipped type="skipped" message="true"/>
			</testcase>
		</testsuite>
	</testsuite>
	<testcase name="top level" time="0.000113" classname="test"/>
	<testsuite name="parent" time="0.000457" disabled="0" errors="0" tests="2" failures="1" skipped="0" hostname="vm">
		<testcase name="sub ok" time="0.000081" classname="test"/>
	</testsuite>
	<!-- tests 9 -->
</testsuites>
`;

describe('parseJUnit', () => {
  it('reads nested suites, statuses and Node 20 escaping', () => {
    expect(parseJUnit(NODE20_SAMPLE)).toEqual({
      'math > adds <&"\'>': 'passed',
      'math > nested > mul': 'failed',
      'math > nested > skipped one': 'skipped',
      'top level': 'passed',
      'parent > sub ok': 'passed',
    });
  });

  it('matches what the installed node --test actually writes', async () => {
    const dir = await tempDir('junit');
    dirs.push(dir);
    await writeTree(dir, {
      'package.json': '{ "type": "module" }\n',
      'test/a.test.js': `import { describe, it, test } from 'node:test';
import assert from 'node:assert';
describe('math', () => {
  it('adds <&"\\'>', () => assert.equal(1 + 1, 2));
  describe('nested', () => {
    it('mul', () => assert.equal(2 * 2, 5));
    it.skip('skipped one', () => {});
    it.todo('todo one');
  });
});
test('top level', () => {});
test('parent', async (t) => {
  await t.test('sub ok', () => {});
  await t.test('sub fail', () => { throw new Error('x'); });
});
`,
      'test/b.test.js': `import { test } from 'node:test';
test('other file', () => { console.log('<testcase name="fake"/>'); });
`,
    });
    const report = join(dir, 'report.xml');
    try {
      execFileSync(
        process.execPath,
        ['--test', '--test-reporter=junit', `--test-reporter-destination=${report}`],
        {
          cwd: dir,
          stdio: 'ignore',
        },
      );
    } catch {
      // Failing tests make node exit 1; the report is what matters.
    }
    expect(parseJUnit(await readFile(report, 'utf8'))).toEqual({
      'math > adds <&"\'>': 'passed',
      'math > nested > mul': 'failed',
      'math > nested > skipped one': 'skipped',
      'math > nested > todo one': 'skipped',
      'top level': 'passed',
      'parent > sub ok': 'passed',
      'parent > sub fail': 'failed',
      'other file': 'passed',
    });
  });

  it('keeps the worst status of a test reported twice', () => {
    const xml = `<testsuites><testcase name="t"/><testcase name="t"><failure/></testcase><testcase name="t"/></testsuites>`;
    expect(parseJUnit(xml)).toEqual({ t: 'failed' });
  });

  it('rejects what is not a JUnit report', () => {
    for (const bad of [
      '',
      'not xml',
      '<testsuites><testcase name="x">',
      '<html></html>',
      '<a></b>',
    ]) {
      expect(() => parseJUnit(bad), bad).toThrow(JUnitParseError);
    }
  });
});

describe('parseUnittestJson', () => {
  it('maps error and skipped to not passing', () => {
    expect(
      parseUnittestJson(
        '{"a.B.c": "passed", "a.B.d": "failed", "a.B.e": "error", "a.B.f": "skipped"}',
      ),
    ).toEqual({
      'a.B.c': 'passed',
      'a.B.d': 'failed',
      'a.B.e': 'failed',
      'a.B.f': 'skipped',
    });
  });

  it('rejects malformed reports', () => {
    for (const bad of ['', '[]', '{"a": "ok"}', '{"a": 1}', 'null']) {
      expect(() => parseUnittestJson(bad), bad).toThrow(ReportParseError);
    }
  });
});
