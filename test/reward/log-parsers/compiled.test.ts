import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compiledCanaryTargets,
  makeCompiledCanary,
  type Canary,
} from '../../../tasks/reward/index.js';
import { parseTestLog } from '../../../tasks/reward/log-parsers/index.js';
import { newFileDiff, removeDirs, tempDir, writeTree } from '../../sandbox/helpers.js';
import { consoleOf } from './run.js';

const GO_TEST = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("bad")
	}
}

func TestFail(t *testing.T) { t.Fatal("boom") }

func TestSkip(t *testing.T) { t.Skip("later") }

func TestTable(t *testing.T) {
	cases := []struct {
		name    string
		a, want int
	}{{"one plus", 1, 2}, {"two", 2, 5}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if Add(c.a, 1) != c.want {
				t.Errorf("got %d", Add(c.a, 1))
			}
			t.Run("deeper", func(t *testing.T) {})
		})
	}
}

func TestParallel(t *testing.T) {
	for _, n := range []string{"a", "b"} {
		t.Run(n, func(t *testing.T) {
			t.Parallel()
			if n == "b" {
				t.Error("b fails")
			}
		})
	}
}
`;

const RUST_LIB = `/// Adds.
///
/// \`\`\`
/// assert_eq!(calc::add(1, 2), 3);
/// \`\`\`
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

pub mod extra;

pub mod ops {
    #[cfg(test)]
    mod tests {
        #[test]
        fn nested_ok() {
            assert_eq!(crate::add(1, -1), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 2), 3);
    }

    #[test]
    fn fails() {
        assert_eq!(add(1, 2), 4);
    }

    #[test]
    #[ignore]
    fn ignored() {}

    #[test]
    #[ignore = "slow"]
    fn ignored_with_reason() {}

    macro_rules! cases {
        ($($name:ident: $a:expr => $want:expr,)*) => {
            $(#[test] fn $name() { assert_eq!(add($a, 1), $want); })*
        };
    }

    cases! {
        case_one: 1 => 2,
        case_two: 2 => 5,
    }
}
`;

const RUST_IT = `#[test]
fn integration() {
    assert_eq!(calc::add(2, 2), 4);
}

#[test]
#[should_panic]
fn panics() {
    panic!("as it should");
}
`;

const RUST_EXTRA = `#[cfg(test)]
mod tests {
    #[test]
    fn in_extra() {}
}
`;

const dirs: string[] = [];
let goLog: string;
let cargoLog: string;
let goCanaries: Canary[];
let cargoCanaries: Canary[];

/** The canaries the reward would add to `files` as a test patch, written next to them. */
function canariesFor(kind: 'go-test' | 'cargo-test', files: Record<string, string>): Canary[] {
  const patch = Object.entries(files)
    .map(([path, text]) => newFileDiff(path, text))
    .join('');
  return compiledCanaryTargets(kind, patch).map(({ path }) => {
    const canary = makeCompiledCanary(kind, path, files[path]!);
    if (!canary) throw new Error(`no canary for ${path}`);
    return canary;
  });
}

beforeAll(async () => {
  const root = await tempDir('log-compiled');
  dirs.push(root);
  await writeTree(root, {
    'go/go.mod': 'module example.com/calc\n\ngo 1.22\n',
    'go/calc.go': 'package calc\n\nfunc Add(a, b int) int { return a + b }\n',
    'go/calc_test.go': GO_TEST,
    'rust/Cargo.toml': '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
    'rust/src/lib.rs': RUST_LIB,
    'rust/src/extra.rs': RUST_EXTRA,
    'rust/tests/it.rs': RUST_IT,
  });
  goCanaries = canariesFor('go-test', { 'go/calc_test.go': GO_TEST });
  cargoCanaries = canariesFor('cargo-test', {
    'rust/src/extra.rs': RUST_EXTRA,
    'rust/tests/it.rs': RUST_IT,
    'rust/Cargo.toml': '',
  });
  for (const c of [...goCanaries, ...cargoCanaries]) await writeFile(join(root, c.path), c.text);
  goLog = consoleOf(`${root}/go`, 'go test -v ./...', {
    GOFLAGS: '-mod=mod',
    GOPROXY: 'off',
    GOCACHE: `${root}/gocache`,
    GOPATH: `${root}/gopath`,
    GOTOOLCHAIN: 'local',
  });
  cargoLog = consoleOf(`${root}/rust`, 'cargo test --offline --no-fail-fast', {
    CARGO_TARGET_DIR: `${root}/target`,
  });
}, 240_000);

afterAll(() => removeDirs(dirs));

/** Every canary fails, under the id the log parser gives it. */
function canaryResults(canaries: Canary[]): Record<string, string> {
  return Object.fromEntries(canaries.flatMap((c) => c.ids).map((id) => [id, 'failed']));
}

describe('log parsers on the real output of compiled-language runners', () => {
  it('canaries: a Go file of its own, cargo tests in each test crate file', () => {
    expect(goCanaries.map((c) => c.path)).toEqual([
      expect.stringMatching(/^go\/zz_[a-z]+_test\.go$/),
    ]);
    expect(goCanaries[0]!.ids).toHaveLength(3);
    expect(cargoCanaries.map((c) => c.path)).toEqual(['rust/src/extra.rs', 'rust/tests/it.rs']);
    expect(cargoCanaries[0]!.ids.every((id) => id.startsWith('extra::canary_'))).toBe(true);
    expect(cargoCanaries[1]!.ids.every((id) => /^canary_[a-z]+$/.test(id))).toBe(true);
  });

  it('go test -v: tests, nested and parallel subtests, the canary file beside the tests', () => {
    expect(goLog).toContain('--- FAIL: TestTable');
    expect(parseTestLog('go-test', goLog)).toEqual({
      TestAdd: 'passed',
      TestFail: 'failed',
      TestSkip: 'skipped',
      TestTable: 'failed',
      'TestTable/one_plus': 'passed',
      'TestTable/one_plus/deeper': 'passed',
      'TestTable/two': 'failed',
      'TestTable/two/deeper': 'passed',
      TestParallel: 'failed',
      'TestParallel/a': 'passed',
      'TestParallel/b': 'failed',
      ...canaryResults(goCanaries),
    });
  });

  it('cargo test: tests by module path, ignored, should_panic, integration, doc tests, canaries', () => {
    expect(cargoLog).toContain('test result:');
    expect(parseTestLog('cargo-test', cargoLog)).toEqual({
      'ops::tests::nested_ok': 'passed',
      'tests::adds': 'passed',
      'tests::fails': 'failed',
      'tests::ignored': 'skipped',
      'tests::ignored_with_reason': 'skipped',
      'tests::case_one': 'passed',
      'tests::case_two': 'failed',
      integration: 'passed',
      panics: 'passed',
      'src/lib.rs - add (line 3)': 'passed',
      'extra::tests::in_extra': 'passed',
      ...canaryResults(cargoCanaries),
    });
  });
});
