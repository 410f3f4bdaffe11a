import { describe, expect, it } from 'vitest';
import { isTestId, parseTestLog, stripAnsi } from '../../../tasks/reward/log-parsers/index.js';
import { LogParserSchema, type LogParser } from '../../../tasks/schema.js';

const PARSERS: LogParser[] = LogParserSchema.options;

/** Lines that make a backtracking regex take quadratic time or worse. */
function hostileLog(bytes: number): string {
  const long = 256 * 1024;
  const lines = [
    ' '.repeat(long) + 'x',
    'PASSED ' + '['.repeat(long),
    'FAILED a.py::t' + ' - '.repeat(long / 3),
    'test ' + ' ... '.repeat(long / 5),
    'ok' + ' '.repeat(long) + '1',
    't (' + 'a.'.repeat(long / 2) + ' ... ',
    '    ✓' + ' '.repeat(long),
    ' × a > ' + ' > '.repeat(long / 3) + ' 1',
    '--- PASS: ' + 'T'.repeat(long),
    '\x1b]' + 'x'.repeat(long),
    '\x1b[' + ';'.repeat(long),
    'a.py::b' + ' PASSED'.repeat(long / 7) + ' [ 1%]',
  ];
  const block = lines.join('\n') + '\n';
  return block.repeat(Math.ceil(bytes / block.length));
}

describe('log parsers', () => {
  it.each(PARSERS)('%s reads a hostile 8 MiB log in linear time', (parser) => {
    const log = hostileLog(8 * 1024 * 1024);
    const started = performance.now();
    parseTestLog(parser, log);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('keep the worst status of a test reported twice, whichever comes first', () => {
    const pass = 'PASSED tests/test_x.py::test_a\n';
    const fail = 'FAILED tests/test_x.py::test_a - AssertionError\n';
    expect(parseTestLog('pytest', pass + fail)).toEqual({ 'tests/test_x.py::test_a': 'failed' });
    expect(parseTestLog('pytest', fail + pass)).toEqual({ 'tests/test_x.py::test_a': 'failed' });
    const goSkip = '--- SKIP: TestA (0.00s)\n--- PASS: TestA (0.00s)\n';
    expect(parseTestLog('go-test', goSkip)).toEqual({ TestA: 'skipped' });
  });

  it("vitest: a workspace project's name is not part of the id", () => {
    expect(parseTestLog('vitest', ' ✓ |core| test/a.test.ts > math > adds 2ms\n')).toEqual({
      'math > adds': 'passed',
    });
  });

  it('strip colour codes, titles and overwritten progress', () => {
    expect(stripAnsi('\x1b[32m✓\x1b[39m \x1b]0;title\x07adds')).toBe('✓ adds');
    expect(parseTestLog('cargo-test', 'running\rtest a::b ... \x1b[32mok\x1b[0m\r\n')).toEqual({
      'a::b': 'passed',
    });
  });
});

describe('isTestId', () => {
  const cases: [LogParser, string, boolean][] = [
    ['pytest', 'tests/test_x.py::TestC::test_m', true],
    ['pytest', 'tests/test_x.py::test_p[a - b]', true],
    ['pytest', 'test_x.py', false],
    ['pytest', 'tests.test_x.TestC.test_m', false],
    ['unittest', 'test_m (tests.test_x.TestC)', true],
    ['unittest', 'test_m (tests.test_x.TestC.test_m)', true],
    ['unittest', 'tests.test_x.TestC.test_m', false],
    ['jest', 'math > adds', true],
    ['jest', ' math', false],
    ['mocha', 'math adds\nmore', false],
    ['go-test', 'TestTable/one_plus', true],
    ['go-test', 'TestTable/one plus', false],
    ['go-test', 'tests::adds', false],
    ['cargo-test', 'tests::adds', true],
    ['cargo-test', 'src/lib.rs - add (line 3)', true],
    ['cargo-test', 'TestAdd/x', false],
  ];
  it.each(cases)('%s: %j → %s', (parser, id, ok) => {
    expect(isTestId(parser, id)).toBe(ok);
  });
});
