import { describe, expect, it } from 'vitest';
import {
  canaryPlanOf,
  compiledCanaryTargets,
  makeCompiledCanary,
} from '../../tasks/reward/index.js';
import { canaryStatuses } from '../../tasks/reward/canary-plan.js';
import { newFileDiff } from '../sandbox/helpers.js';

const patchOf = (...paths: string[]): string => paths.map((p) => newFileDiff(p, 'x\n')).join('');

describe('compiled canaries', () => {
  it('go: beside the first hidden _test.go file, in its package', () => {
    const patch = patchOf('README.md', 'pkg/a_test.go', 'pkg/b_test.go');
    expect(compiledCanaryTargets('go-test', patch)).toEqual([
      { path: 'pkg/a_test.go', created: false },
    ]);
    const canary = makeCompiledCanary('go-test', 'pkg/a_test.go', '// doc\npackage a_test\n');
    expect(canary?.path).toMatch(/^pkg\/zz_[a-z]{10}_test\.go$/);
    expect(canary?.text).toMatch(/^package a_test\n/);
    expect(makeCompiledCanary('go-test', 'pkg/a_test.go', 'no package clause')).toBeUndefined();
    expect(compiledCanaryTargets('go-test', patchOf('main.go'))).toEqual([]);
  });

  it('cargo: test crate files and crate sources, ids by module path', () => {
    const patch = patchOf(
      'tests/it.rs',
      'tests/suite/main.rs',
      'tests/common/mod.rs',
      'src/lib.rs',
      'src/bin/tool.rs',
      'crates/core/src/parse/mod.rs',
      'crates/core/src/parse/lexer.rs',
      'Cargo.toml',
    );
    const targets = compiledCanaryTargets('cargo-test', patch).map((t) => t.path);
    expect(targets).toEqual([
      'tests/it.rs',
      'tests/suite/main.rs',
      'src/lib.rs',
      'src/bin/tool.rs',
      'crates/core/src/parse/mod.rs',
      'crates/core/src/parse/lexer.rs',
    ]);
    const prefixes = targets.map((path) => {
      const id = makeCompiledCanary('cargo-test', path, '')!.ids[0]!;
      return id.slice(0, id.lastIndexOf('canary_'));
    });
    expect(prefixes).toEqual(['', '', '', '', 'parse::', 'parse::lexer::']);
  });

  it('TAP tasks: canaries for the JS files of the test patch, written where they use tape or node:test', () => {
    const plan = canaryPlanOf({ log_parser: 'tap' })!;
    expect(
      plan.targets(patchOf('test/a.js', 'test/b.mjs', 'tests/test_x.py'), () => Buffer.alloc(4)),
    ).toEqual([
      { path: 'test/a.js', created: false },
      { path: 'test/b.mjs', created: false },
    ]);
    const node =
      "import { test } from 'node:test';\nimport assert from 'node:assert';\n\ntest('adds', () => {\n  assert.equal(1, 1);\n});\n";
    expect(
      plan.make('test/b.mjs', node, ['adds'], () => Buffer.alloc(4))?.ids.length,
    ).toBeGreaterThan(0);
    expect(
      plan.make('test/a.js', "console.log('ok 1');\n", [], () => Buffer.alloc(4)),
    ).toBeUndefined();
  });
});

describe('canaryStatuses', () => {
  it('finds a canary by its own id, or by its test name where the runner named the module otherwise', () => {
    const reported = {
      'test_qwerty (admin_views.tests.TestAbc)': 'failed',
      'test_qwerty (admin_views.tests.TestAbc.test_qwerty)': 'failed',
      'test_p.py::TestZz::test_zz': 'passed',
      'exact id': 'failed',
    } as const;
    expect(
      canaryStatuses(
        [
          'test_qwerty (tests.admin_views.tests.TestAbc)',
          'tests/test_p.py::TestZz::test_zz',
          'exact id',
          'gone',
        ],
        reported,
      ),
    ).toEqual({
      'test_qwerty (tests.admin_views.tests.TestAbc)': 'failed',
      'tests/test_p.py::TestZz::test_zz': 'passed',
      'exact id': 'failed',
      gone: undefined,
    });
  });
});
