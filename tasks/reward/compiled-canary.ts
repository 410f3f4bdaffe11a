/**
 * Canary tests for Go and Rust (see canary.ts for why canaries exist). Each evaluation makes new
 * random names and values; every canary must fail, each through another way of failing, so that
 * code that shadows one (a crate-local `assert_eq!` macro, say) leaves the others failing.
 *
 * - Go: a `_test.go` file of its own beside the first hidden `_test.go` file, in that file's
 *   package. A package's test files are built into one test binary, so the canary runs with
 *   whatever the hidden tests run with; a file of its own is needed because Go takes imports only
 *   at the top of a file, and the canary imports `testing` under a random name.
 * - cargo: `#[test]` functions added at the end of each hidden test file (`tests/<name>.rs`, or a source
 *   file under `src/`): an integration test file is a crate of its own, so only canaries in that
 *   file share its crate. Their ids are the file's module path and the function's name.
 */
import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { keptPaths, letters, values, type Canary, type Random } from './canary.js';

export type CompiledCanaryKind = 'go-test' | 'cargo-test';

/** Integration test crates (`tests/x.rs`, `tests/x/main.rs`) and crate sources (`…/src/…`). */
function isCargoTestFile(path: string): boolean {
  if (!path.endsWith('.rs')) return false;
  const parts = path.split('/');
  const tests = parts.lastIndexOf('tests');
  const src = parts.lastIndexOf('src');
  if (tests >= 0 && tests > src) {
    const rest = parts.slice(tests + 1);
    return rest.length === 1 || (rest.length === 2 && rest[1] === 'main.rs');
  }
  return src >= 0;
}

/** The libtest module path of a file's top level: `src/a/b.rs` → `a::b`, crate roots → ``. */
function cargoModulePath(path: string): string {
  const parts = path.split('/');
  const tests = parts.lastIndexOf('tests');
  const src = parts.lastIndexOf('src');
  if (tests > src) return '';
  const rest = parts.slice(src + 1);
  if (rest[0] === 'bin' || (rest.length === 1 && (rest[0] === 'lib.rs' || rest[0] === 'main.rs')))
    return '';
  const last = rest[rest.length - 1]!;
  const modules = last === 'mod.rs' ? rest.slice(0, -1) : [...rest.slice(0, -1), last.slice(0, -3)];
  return modules.join('::');
}

/** Where the canaries go: the hidden test files to read (Go: the first one only). */
export function compiledCanaryTargets(
  kind: CompiledCanaryKind,
  testPatch: string,
): { path: string; created: boolean }[] {
  const kept = keptPaths(testPatch);
  if (kind === 'go-test') {
    const first = kept.find((p) => p.endsWith('_test.go'));
    return first ? [{ path: first, created: false }] : [];
  }
  return kept.filter(isCargoTestFile).map((path) => ({ path, created: false }));
}

const GO_PACKAGE = /^package\s+([A-Za-z_]\w*)/m;

function goCanary(path: string, content: string, random: Random): Canary | undefined {
  const pkg = GO_PACKAGE.exec(content)?.[1];
  if (!pkg) return undefined;
  const r = letters(random, 10);
  const [x, y] = values(random);
  const testing = `testing_${r}`;
  const [fatal, sub] = [`TestZ${letters(random, 10)}`, `TestZ${letters(random, 10)}`];
  const subName = letters(random, 8);
  const text = [
    `package ${pkg}`,
    '',
    `import ${testing} "testing"`,
    '',
    `func ${fatal}(t *${testing}.T) {`,
    `\tif ${x} != ${y} {`,
    `\t\tt.Fatalf("%d != %d", ${x}, ${y})`,
    '\t}',
    '}',
    '',
    `func ${sub}(t *${testing}.T) {`,
    `\tt.Run("${subName}", func(t *${testing}.T) { t.Errorf("%d != %d", ${x}, ${y}) })`,
    '}',
    '',
  ].join('\n');
  const file = posix.join(posix.dirname(path), `zz_${r}_test.go`);
  return { path: file, text, ids: [fatal, sub, `${sub}/${subName}`] };
}

function cargoCanary(path: string, content: string, random: Random): Canary {
  const [x, y] = values(random);
  const names = [0, 1, 2].map(() => `canary_${letters(random, 10)}`);
  const bodies = [
    `assert_eq!(${x}, ${y});`,
    `assert!(${x} == ${y});`,
    `if ${x} != ${y} { ::core::panic!("{} != {}", ${x}, ${y}); }`,
  ];
  const text =
    content + names.map((name, i) => `\n#[test]\nfn ${name}() {\n    ${bodies[i]}\n}\n`).join('');
  const module = cargoModulePath(path);
  return { path, text, ids: names.map((n) => (module ? `${module}::${n}` : n)) };
}

/**
 * The canary for one target file, its content as the test patch left it; undefined for a Go
 * file without a package clause.
 */
export function makeCompiledCanary(
  kind: CompiledCanaryKind,
  path: string,
  content: string,
  random: Random = randomBytes,
): Canary | undefined {
  return kind === 'go-test' ? goCanary(path, content, random) : cargoCanary(path, content, random);
}
