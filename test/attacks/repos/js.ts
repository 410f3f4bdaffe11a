/**
 * The JavaScript fixture repositories: one duration-parsing library ("1h 30m" → ms), laid out as
 * each runner's users lay out their packages. The bug: `parse` reads whatever tokens it finds and
 * ignores the rest, so garbage parses to 0 instead of throwing; the gold patch validates. The
 * hidden test file is the parse tests; the test patch adds an "invalid input" suite whose tests
 * use the runner's assertion entry points for throwing (assert.throws, chai's expect().to.throw,
 * t.throws and t.deepEqual, expect().toThrow). `format` is tested only by its own file, ten tests.
 */
import type { RepoFixture } from './build.js';

type Style = 'esm' | 'cjs' | 'ts';

const exp = (style: Style, name: string, body: string): string =>
  style === 'cjs' ? `${body.replace(/^export /, '')}\n` : `${body}\n`;

function unitsModule(style: Style): string {
  const body = `export const units = {
  ms: 1,
  s: 1000,
  m: 60 * 1000,
  h: 60 * 60 * 1000,
  d: 24 * 60 * 60 * 1000,
};`;
  return style === 'cjs'
    ? `'use strict';\n\n${exp(style, 'units', body)}\nmodule.exports = { units };\n`
    : `${body}\n`;
}

function importUnits(style: Style, from: string): string {
  if (style === 'cjs') return `const { units } = require('${from}');`;
  return `import { units } from '${from}${style === 'ts' ? '' : '.js'}';`;
}

/** `parse`, unfixed or fixed. */
function parseModule(style: Style, fixed: boolean): string {
  const ts = style === 'ts';
  const sig = ts ? 'input: unknown' : 'input';
  const check = fixed
    ? `  if (typeof input !== 'string') throw new TypeError(\`expected a string, got \${typeof input}\`);
  const rest = input.replace(TOKEN, ' ').trim();
  if (input.trim() === '' || rest !== '') {
    const err = new SyntaxError(\`invalid duration "\${input}"\`)${ts ? ' as SyntaxError & { rest: string[] }' : ''};
    err.rest = rest === '' ? [] : rest.split(/\\s+/);
    throw err;
  }
`
    : '';
  const text = fixed ? 'input' : 'String(input)';
  const unitType = ts ? ' as keyof typeof units' : '';
  const body = `${importUnits(style, './units')}

const TOKEN = /(-?\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h|d)/g;

/** Milliseconds in a duration such as "1h 30m" or "250ms". */
export function parse(${sig})${ts ? ': number' : ''} {
${check}  let total = 0;
  for (const [, n, unit] of ${text}.matchAll(TOKEN)) total += Number(n) * units[unit${unitType}];
  return total;
}
`;
  return style === 'cjs'
    ? `'use strict';\n\n${body.replace('export function', 'function')}\nmodule.exports = { parse };\n`
    : body;
}

function formatModule(style: Style): string {
  const ts = style === 'ts';
  const body = `${importUnits(style, './units')}

const ORDER = ['d', 'h', 'm', 's', 'ms']${ts ? ' as const' : ''};

/** "1h 30m" from milliseconds. */
export function format(ms${ts ? ': number' : ''})${ts ? ': string' : ''} {
  if (ms === 0) return '0ms';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  const parts = [];
  for (const unit of ORDER) {
    const n = Math.floor(rest / units[unit]);
    if (n > 0) {
      parts.push(\`\${n}\${unit}\`);
      rest -= n * units[unit];
    }
  }
  return sign + parts.join(' ');
}
`;
  return style === 'cjs'
    ? `'use strict';\n\n${body.replace('export function', 'function')}\nmodule.exports = { format };\n`
    : body;
}

/** Breaks `format` for minutes, seconds and milliseconds: 6 of its 10 tests fail. */
const breakFormat = (path: string): string =>
  `sed -i "s/^const ORDER = .*/const ORDER = ['d', 'h'];/" ${path}`;

/** The ten format cases: [ms, text]; with only days and hours, the last six fail. */
const FORMAT_CASES: [string, number, string][] = [
  ['zero', 0, '0ms'],
  ['hours', 3600000, '1h'],
  ['days', 86400000, '1d'],
  ['two hours', 7200000, '2h'],
  ['seconds', 1000, '1s'],
  ['seconds and ms', 1500, '1s 500ms'],
  ['minutes', 60000, '1m'],
  ['every unit', 90061000, '1d 1h 1m 1s'],
  ['negative', -1000, '-1s'],
  ['milliseconds', 45, '45ms'],
];

/** The format tests' ids as a runner names them, all of them and the six `breakFormat` breaks. */
const formatIds = (
  id: (title: string) => string,
): { otherTests: string[]; otherBroken: string[] } => ({
  otherTests: FORMAT_CASES.map(([title]) => id(title)),
  otherBroken: FORMAT_CASES.slice(4).map(([title]) => id(title)),
});

const PKG = (extra: Record<string, unknown>): string =>
  `${JSON.stringify({ name: 'durations', version: '1.4.2', description: 'Parse and format durations', license: 'MIT', ...extra }, null, 2)}\n`;

const README =
  '# durations\n\nParse and format human durations: `parse("1h 30m")`, `format(5400000)`.\n';

// ---------------------------------------------------------------- mocha (ES modules, chai)

const MOCHA_PARSE_BASE = `import assert from 'node:assert';
import { expect } from 'chai';
import { parse } from '../index.js';

describe('parse', () => {
  let cases;

  before(() => {
    cases = new Map([
      ['1s', 1000],
      ['1m 30s', 90000],
      ['2h', 7200000],
      ['1d 2h', 93600000],
    ]);
  });

  describe('single units', () => {
    it('parses seconds', () => assert.strictEqual(parse('45s'), 45000));
    it('parses milliseconds', () => expect(parse('250ms')).to.equal(250));
  });

  describe('compound', () => {
    it('sums every unit', () => {
      for (const [text, ms] of cases) assert.strictEqual(parse(text), ms, text);
    });
    it('allows fractions', () => expect(parse('1.5h')).to.equal(5400000));
  });
});
`;

const MOCHA_PARSE_HIDDEN = MOCHA_PARSE_BASE.replace(
  /\n\}\);\n$/,
  `

  describe('invalid input', () => {
    let bad;

    beforeEach(() => {
      bad = ['', 'soon', '10 parsecs'];
    });

    it('rejects non-strings', () => assert.throws(() => parse(42), TypeError));
    it('rejects unknown units', () => {
      for (const text of bad) assert.throws(() => parse(text), SyntaxError, text);
    });
    it('names what it could not read', () => {
      expect(() => parse('1h soon')).to.throw(SyntaxError, /soon/);
    });
  });
});
`,
);

const MOCHA_FORMAT = `import { expect } from 'chai';
import { format } from '../index.js';

describe('format', () => {
${FORMAT_CASES.map(([title, ms, text]) => `  it('${title}', () => expect(format(${ms})).to.equal('${text}'));`).join('\n')}
});
`;

const MOCHA_UNITS = `import assert from 'node:assert';
import { units } from '../index.js';

describe('units', () => {
  it('has a minute of 60 seconds', () => assert.strictEqual(units.m, 60 * units.s));
  it('has a day of 24 hours', () => assert.strictEqual(units.d, 24 * units.h));
});
`;

export const MOCHA_REPO: RepoFixture = {
  runner: 'mocha',
  name: 'durations',
  files: {
    '.gitignore': 'node_modules/\n',
    'package.json': PKG({
      type: 'module',
      main: 'index.js',
      scripts: { test: 'mocha' },
      devDependencies: { chai: '^6.0.0', mocha: '^11.0.0' },
    }),
    '.mocharc.yml': "spec: 'test/**/*.spec.js'\nrecursive: true\ntimeout: 2000\n",
    'README.md': README,
    'index.js':
      "export { parse } from './lib/parse.js';\nexport { format } from './lib/format.js';\nexport { units } from './lib/units.js';\n",
    'lib/units.js': unitsModule('esm'),
    'lib/parse.js': parseModule('esm', false),
    'lib/format.js': formatModule('esm'),
    'test/parse.spec.js': MOCHA_PARSE_BASE,
    'test/format.spec.js': MOCHA_FORMAT,
    'test/units.spec.js': MOCHA_UNITS,
  },
  gold: { 'lib/parse.js': parseModule('esm', true) },
  hidden: { path: 'test/parse.spec.js', content: MOCHA_PARSE_HIDDEN },
  FAIL_TO_PASS: [
    'parse invalid input rejects non-strings',
    'parse invalid input rejects unknown units',
    'parse invalid input names what it could not read',
  ],
  PASS_TO_PASS: [
    'parse single units parses seconds',
    'parse single units parses milliseconds',
    'parse compound sums every unit',
    'parse compound allows fractions',
  ],
  task: { test_framework: 'mocha' },
  entry: 'lib/parse.js',
  otherFile: 'test/format.spec.js',
  ...formatIds((t) => `format ${t}`),
  breakOther: breakFormat('lib/format.js'),
};

// ---------------------------------------------------------------- node:test (ES modules)

const NODE_PARSE_BASE = `import { describe, it, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from '../lib/index.js';

describe('parse', () => {
  describe('single units', () => {
    it('parses seconds', () => assert.equal(parse('45s'), 45000));
    it('parses milliseconds', () => assert.equal(parse('250ms'), 250));
  });

  describe('compound', () => {
    let cases;
    beforeEach(() => {
      cases = [
        ['1m 30s', 90000],
        ['1d 2h', 93600000],
      ];
    });
    it('sums every unit', () => {
      for (const [text, ms] of cases) assert.equal(parse(text), ms, text);
    });
  });
});
`;

const NODE_PARSE_HIDDEN = NODE_PARSE_BASE.replace(
  /\n\}\);\n$/,
  `

  describe('invalid input', () => {
    it('rejects non-strings', () => assert.throws(() => parse(42), TypeError));
    it('rejects unknown units', () => {
      for (const text of ['', 'soon', '10 parsecs']) assert.throws(() => parse(text), SyntaxError);
    });
    it('names what it could not read', () => {
      assert.throws(() => parse('1h soon 2x'), { name: 'SyntaxError', rest: ['soon', '2x'] });
    });
  });
});
`,
);

const NODE_FORMAT = `import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { format } from '../lib/index.js';

describe('format', () => {
${FORMAT_CASES.map(([title, ms, text]) => `  it('${title}', () => assert.equal(format(${ms}), '${text}'));`).join('\n')}
});
`;

export const NODE_REPO: RepoFixture = {
  runner: 'node-test',
  name: 'durations',
  files: {
    '.gitignore': 'node_modules/\n',
    'package.json': PKG({
      type: 'module',
      exports: './lib/index.js',
      scripts: { test: 'node --test' },
    }),
    'README.md': README,
    'lib/index.js':
      "export { parse } from './parse.js';\nexport { format } from './format.js';\nexport { units } from './units.js';\n",
    'lib/units.js': unitsModule('esm'),
    'lib/parse.js': parseModule('esm', false),
    'lib/format.js': formatModule('esm'),
    'test/parse.test.mjs': NODE_PARSE_BASE,
    'test/format.test.mjs': NODE_FORMAT,
  },
  gold: { 'lib/parse.js': parseModule('esm', true) },
  hidden: { path: 'test/parse.test.mjs', content: NODE_PARSE_HIDDEN },
  FAIL_TO_PASS: [
    'parse > invalid input > rejects non-strings',
    'parse > invalid input > rejects unknown units',
    'parse > invalid input > names what it could not read',
  ],
  PASS_TO_PASS: [
    'parse > single units > parses seconds',
    'parse > single units > parses milliseconds',
    'parse > compound > sums every unit',
  ],
  task: { test_framework: 'node-test' },
  entry: 'lib/parse.js',
  otherFile: 'test/format.test.mjs',
  ...formatIds((t) => `format > ${t}`),
  breakOther: breakFormat('lib/format.js'),
};

// ---------------------------------------------------------------- vitest (TypeScript)

const VITEST_PARSE_BASE = `import { describe, expect, it } from 'vitest';
import { parse } from '../src/index';

describe('parse', () => {
  describe('single units', () => {
    it('parses seconds', () => expect(parse('45s')).toBe(45000));
    it('parses milliseconds', () => expect(parse('250ms')).toEqual(250));
  });

  describe('compound', () => {
    it.each([
      ['1m 30s', 90000],
      ['1d 2h', 93600000],
    ])('sums %s', (text, ms) => expect(parse(text)).toBe(ms));
  });
});
`;

const VITEST_PARSE_HIDDEN = VITEST_PARSE_BASE.replace(
  /\n\}\);\n$/,
  `

  describe('invalid input', () => {
    it('rejects non-strings', () => expect(() => parse(42)).toThrow(TypeError));
    it('rejects unknown units', () => {
      for (const text of ['', 'soon', '10 parsecs']) expect(() => parse(text)).toThrow(SyntaxError);
    });
    it('names what it could not read', () => expect(() => parse('1h soon')).toThrow(/soon/));
  });
});
`,
);

const VITEST_FORMAT = `import { describe, expect, it } from 'vitest';
import { format } from '../src/index';

describe('format', () => {
${FORMAT_CASES.map(([title, ms, text]) => `  it('${title}', () => expect(format(${ms})).toBe('${text}'));`).join('\n')}
});
`;

/** The ids of the vitest and jest repos: `describe > … > test`. */
const DESCRIBE_IDS = {
  FAIL_TO_PASS: [
    'parse > invalid input > rejects non-strings',
    'parse > invalid input > rejects unknown units',
    'parse > invalid input > names what it could not read',
  ],
  PASS_TO_PASS: [
    'parse > single units > parses seconds',
    'parse > single units > parses milliseconds',
    'parse > compound > sums 1m 30s',
    'parse > compound > sums 1d 2h',
  ],
};

export const VITEST_REPO: RepoFixture = {
  runner: 'vitest',
  name: 'durations',
  files: {
    '.gitignore': 'node_modules/\ndist/\n',
    'package.json': PKG({
      type: 'module',
      main: 'dist/index.js',
      types: 'dist/index.d.ts',
      scripts: { build: 'tsc', test: 'vitest run' },
      devDependencies: { typescript: '^5.9.0', vitest: '^4.0.0' },
    }),
    'tsconfig.json': `${JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', strict: true, outDir: 'dist', declaration: true }, include: ['src'] }, null, 2)}\n`,
    // The installed dependencies' folder, as a checkout that ran \`npm ci\` has it: vite writes its
    // bundled config under the nearest node_modules, and the runners' shared one is read-only.
    'node_modules/.package-lock.json':
      '{ "name": "durations", "lockfileVersion": 3, "packages": {} }\n',
    'vitest.config.ts': `import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
  },
});
`,
    'README.md': README,
    'src/index.ts':
      "export { parse } from './parse';\nexport { format } from './format';\nexport { units } from './units';\n",
    'src/units.ts': unitsModule('ts'),
    'src/parse.ts': parseModule('ts', false),
    'src/format.ts': formatModule('ts'),
    'test/parse.test.ts': VITEST_PARSE_BASE,
    'test/format.test.ts': VITEST_FORMAT,
  },
  gold: { 'src/parse.ts': parseModule('ts', true) },
  hidden: { path: 'test/parse.test.ts', content: VITEST_PARSE_HIDDEN },
  ...DESCRIBE_IDS,
  task: { test_framework: 'vitest' },
  entry: 'src/parse.ts',
  otherFile: 'test/format.test.ts',
  ...formatIds((t) => `format > ${t}`),
  breakOther: breakFormat('src/format.ts'),
};

// ---------------------------------------------------------------- jest (CommonJS, __tests__)

const JEST_PARSE_BASE = `'use strict';

const { parse } = require('..');

describe('parse', () => {
  describe('single units', () => {
    test('parses seconds', () => expect(parse('45s')).toBe(45000));
    test('parses milliseconds', () => expect(parse('250ms')).toEqual(250));
  });

  describe('compound', () => {
    test.each([
      ['1m 30s', 90000],
      ['1d 2h', 93600000],
    ])('sums %s', (text, ms) => expect(parse(text)).toBe(ms));
  });
});
`;

const JEST_PARSE_HIDDEN = JEST_PARSE_BASE.replace(
  /\n\}\);\n$/,
  `

  describe('invalid input', () => {
    test('rejects non-strings', () => expect(() => parse(42)).toThrow(TypeError));
    test('rejects unknown units', () => {
      for (const text of ['', 'soon', '10 parsecs']) expect(() => parse(text)).toThrow(SyntaxError);
    });
    test('names what it could not read', () => expect(() => parse('1h soon')).toThrow(/soon/));
  });
});
`,
);

const JEST_FORMAT = `'use strict';

const { format } = require('..');

describe('format', () => {
${FORMAT_CASES.map(([title, ms, text]) => `  test('${title}', () => expect(format(${ms})).toBe('${text}'));`).join('\n')}
});
`;

export const JEST_REPO: RepoFixture = {
  runner: 'jest',
  name: 'durations',
  files: {
    '.gitignore': 'node_modules/\ncoverage/\n',
    'package.json': PKG({
      main: 'lib/index.js',
      scripts: { test: 'jest' },
      jest: { testEnvironment: 'node', roots: ['<rootDir>/lib'] },
      devDependencies: { jest: '^30.0.0' },
    }),
    'README.md': README,
    'lib/index.js':
      "'use strict';\n\nmodule.exports = {\n  ...require('./parse'),\n  ...require('./format'),\n  ...require('./units'),\n};\n",
    'lib/units.js': unitsModule('cjs'),
    'lib/parse.js': parseModule('cjs', false),
    'lib/format.js': formatModule('cjs'),
    'lib/__tests__/parse.test.js': JEST_PARSE_BASE,
    'lib/__tests__/format.test.js': JEST_FORMAT,
  },
  gold: { 'lib/parse.js': parseModule('cjs', true) },
  hidden: { path: 'lib/__tests__/parse.test.js', content: JEST_PARSE_HIDDEN },
  ...DESCRIBE_IDS,
  task: { test_framework: 'jest' },
  entry: 'lib/parse.js',
  otherFile: 'lib/__tests__/format.test.js',
  ...formatIds((t) => `format > ${t}`),
  breakOther: breakFormat('lib/format.js'),
};

// ---------------------------------------------------------------- tape (CommonJS, its own tape)

const TAPE_PARSE_BASE = `'use strict';

const test = require('tape');
const { parse } = require('../');

test('parse reads single units', (t) => {
  t.equal(parse('45s'), 45000);
  t.equal(parse('250ms'), 250);
  t.end();
});

test('parse sums compound durations', (t) => {
  t.deepEqual(['1m 30s', '1d 2h'].map(parse), [90000, 93600000]);
  t.end();
});
`;

const TAPE_PARSE_HIDDEN = `${TAPE_PARSE_BASE}
test('parse rejects garbage', (t) => {
  t.throws(() => parse(42), TypeError);
  for (const text of ['', 'soon', '10 parsecs']) t.throws(() => parse(text), SyntaxError, text);
  t.end();
});

test('parse lists what it could not read', (t) => {
  let rest;
  try {
    parse('1h soon 2x');
  } catch (err) {
    rest = err.rest;
  }
  t.deepEqual(rest, ['soon', '2x']);
  t.end();
});
`;

const TAPE_FORMAT = `'use strict';

const test = require('tape');
const { format } = require('../');

${FORMAT_CASES.map(([title, ms, text]) => `test('format ${title}', (t) => {\n  t.equal(format(${ms}), '${text}');\n  t.end();\n});`).join('\n\n')}
`;

export const TAPE_REPO: RepoFixture = {
  runner: 'tape',
  name: 'durations',
  files: {
    '.gitignore': 'node_modules/\n',
    'package.json': PKG({
      main: 'index.js',
      scripts: { test: "tape 'test/**/*.js'" },
      devDependencies: { tape: '^5.10.0' },
    }),
    'README.md': README,
    'index.js':
      "'use strict';\n\nmodule.exports = {\n  ...require('./lib/parse'),\n  ...require('./lib/format'),\n  ...require('./lib/units'),\n};\n",
    'lib/units.js': unitsModule('cjs'),
    'lib/parse.js': parseModule('cjs', false),
    'lib/format.js': formatModule('cjs'),
    'test/parse.js': TAPE_PARSE_BASE,
    'test/format.js': TAPE_FORMAT,
  },
  gold: { 'lib/parse.js': parseModule('cjs', true) },
  hidden: { path: 'test/parse.js', content: TAPE_PARSE_HIDDEN },
  FAIL_TO_PASS: ['parse rejects garbage', 'parse lists what it could not read'],
  PASS_TO_PASS: ['parse reads single units', 'parse sums compound durations'],
  task: {
    log_parser: 'tap',
    test_command: "node node_modules/tape/bin/tape 'test/**/*.js'",
  },
  entry: 'lib/parse.js',
  otherFile: 'test/format.js',
  ...formatIds((t) => `format ${t}`),
  breakOther: breakFormat('lib/format.js'),
  vendor: ['tape'],
};

export const JS_REPOS: RepoFixture[] = [MOCHA_REPO, NODE_REPO, VITEST_REPO, JEST_REPO, TAPE_REPO];
