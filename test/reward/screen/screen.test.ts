import { describe, expect, it } from 'vitest';
import { activeRules } from '../../../tasks/reward/screen/config.js';
import { LineLexer, languageOf } from '../../../tasks/reward/screen/lexer.js';
import { RULE_IDS } from '../../../tasks/reward/screen/rules.js';
import { MAX_FINDINGS, screenDiff, screenEvidence } from '../../../tasks/reward/screen/screen.js';
import { newFileDiff } from '../../sandbox/helpers.js';
import { ATTACKS, BENIGN } from './cases.js';

const ALL = activeRules();
const rulesOf = (diff: string): string[] => [...new Set(screenDiff(diff, ALL).map((f) => f.rule))];

describe('screen rules', () => {
  it.each(ATTACKS)('$rule flags $line', ({ path, line, rule }) => {
    expect(rulesOf(newFileDiff(path, `${line}\n`))).toContain(rule);
  });

  it('every rule has an attack', () => {
    expect(new Set(ATTACKS.map((a) => a.rule))).toEqual(new Set(RULE_IDS));
  });

  it.each(Object.entries(BENIGN))('passes benign code: %s', (path, content) => {
    expect(screenDiff(newFileDiff(path, content), ALL)).toEqual([]);
  });

  it('screens only added lines of non-test files', () => {
    const diff = [
      newFileDiff('test/setup.js', 'expect.extend({ toBe: () => ({ pass: true }) });\n'),
      newFileDiff('tests/conftest.py', 'import atexit\natexit.register(print)\n'),
      newFileDiff('src/math.spec.ts', "process.on('exit', forge);\n"),
      'diff --git a/src/old.js b/src/old.js\n--- a/src/old.js\n+++ b/src/old.js\n@@ -1,2 +1,1 @@\n' +
        "-process.on('exit', forge);\n keep();\n",
    ].join('');
    expect(screenDiff(diff, ALL)).toEqual([]);
  });

  it('reads comments and strings opened on context lines', () => {
    const hunk = (path: string, open: string, added: string, close: string): string =>
      `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n@@ -1,2 +1,3 @@\n ${open}\n+${added}\n ${close}\n`;
    expect(screenDiff(hunk('src/a.js', '/*', "process.on('exit', forge);", '*/'), ALL)).toEqual([]);
    expect(screenDiff(hunk('pkg/a.py', 'DOC = """', 'atexit.register(forge)', '"""'), ALL)).toEqual(
      [],
    );
    expect(rulesOf(hunk('pkg/a.py', 'DOC = """"""', 'atexit.register(forge)', 'x = 1'))).toEqual([
      'py-exit-hook',
    ]);
  });

  it('names the path, the line in the new file, the rule and the clipped line', () => {
    const long = `require('assert').throws = function () { ${'x'.repeat(200)} };`;
    const diff =
      'diff --git a/src/index.js b/src/index.js\n--- a/src/index.js\n+++ b/src/index.js\n' +
      '@@ -10,3 +10,5 @@ function a() {\n line10();\n-gone();\n+added11();\n' +
      `+${long}\n line13();\n+atexit.register(x)\n`;
    const findings = screenDiff(diff, ALL);
    expect(findings).toEqual([
      {
        rule: 'js-assert-override',
        path: 'src/index.js',
        line: 12,
        text: `${long.slice(0, 119)}…`,
      },
    ]);
    expect(screenEvidence(findings)).toBe(
      `screen: src/index.js:12 [js-assert-override] ${long.slice(0, 119)}…`,
    );
  });

  it('caps the evidence and counts the rest', () => {
    const lines = Array.from({ length: MAX_FINDINGS + 5 }, (_, i) => `atexit.register(f${i})`);
    const findings = screenDiff(newFileDiff('pkg/m.py', `${lines.join('\n')}\n`), ALL);
    expect(findings).toHaveLength(MAX_FINDINGS + 5);
    const evidence = screenEvidence(findings).split('\n');
    expect(evidence).toHaveLength(MAX_FINDINGS + 1);
    expect(evidence[0]).toBe('screen: pkg/m.py:1 [py-exit-hook] atexit.register(f0)');
    expect(evidence.at(-1)).toBe('screen: … and 5 more');
  });

  it('applies only the active rules', () => {
    const diff = newFileDiff(
      'pkg/cli.py',
      'import atexit, readline\natexit.register(readline.write_history_file)\n',
    );
    expect(
      screenDiff(diff, activeRules({ enabled: true, disabledRules: ['py-exit-hook'] })),
    ).toEqual([]);
    expect(screenDiff(diff, activeRules({ enabled: false, disabledRules: [] }))).toEqual([]);
    expect(rulesOf(diff)).toEqual(['py-exit-hook']);
  });

  it('leaves a runner repository its own internals', () => {
    expect(
      rulesOf(newFileDiff('src/_pytest/python.py', 'from _pytest.main import Session\n')),
    ).toEqual([]);
    expect(
      rulesOf(newFileDiff('lib/mocha/runner.js', 'Runner.prototype.fail = function () {};\n')),
    ).toEqual([]);
  });
});

describe('line lexer', () => {
  const views = (language: 'python' | 'js-ts', lines: string[]) => {
    const lexer = new LineLexer(language);
    return lines.map((l) => lexer.next(l));
  };

  it('drops JS comments, block comments across lines, and blanks strings in the code view', () => {
    expect(
      views('js-ts', [
        "const a = 'x // y'; // note",
        '/* open',
        'still */ b("q\\"q");',
        'c(`t',
        'u`);',
      ]),
    ).toEqual([
      { code: "const a = ''; ", text: "const a = 'x // y'; " },
      { code: '', text: '' },
      { code: '  b("");', text: '  b("q\\"q");' },
      { code: 'c(`', text: 'c(`t' },
      { code: '`);', text: 'u`);' },
    ]);
  });

  it('drops Python comments and carries triple-quoted strings across lines', () => {
    expect(
      views('python', ['x = "a # b"  # c', '"""doc', 'atexit.register', '"""', "y = '''z'''"]),
    ).toEqual([
      { code: 'x = ""  ', text: 'x = "a # b"  ' },
      { code: '"""', text: '"""doc' },
      { code: '', text: 'atexit.register' },
      { code: '"""', text: '"""' },
      { code: "y = ''''''", text: "y = '''z'''" },
    ]);
  });

  it('knows languages by extension', () => {
    expect(['a.py', 'b.pyi', 'c.mjs', 'd.tsx', 'e.sh', 'Makefile'].map(languageOf)).toEqual([
      'python',
      'python',
      'js-ts',
      'js-ts',
      'other',
      'other',
    ]);
  });
});
