/**
 * Splitting a unified / git diff into per-file sections, to drop the agent's changes to tests and
 * test-runner configuration before the reward applies its diff. Pure: no I/O.
 *
 * The parser follows hunk line counts instead of pattern-matching every line, so a removed line
 * that reads like a header ("--- x", "diff --git ...") inside a hunk cannot start a new section.
 */

export interface DiffSection {
  /** The section's text, exactly as in the input (joining all sections gives the input back). */
  text: string;
  /** Every path the section names (old and new, without `a/` `b/`); empty for a preamble. */
  paths: string[];
}

const HUNK_HEADER = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/;

/** Unquotes a C-style quoted git path (`"a/t\303\251st"`); returns unquoted input unchanged. */
export function unquoteGitPath(raw: string): string {
  if (!raw.startsWith('"') || !raw.endsWith('"') || raw.length < 2) return raw;
  const bytes: number[] = [];
  const escapes: Record<string, number> = {
    a: 7,
    b: 8,
    f: 12,
    n: 10,
    r: 13,
    t: 9,
    v: 11,
    '\\': 92,
    '"': 34,
  };
  const body = raw.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const next = body[i + 1] ?? '';
    if (/[0-7]/.test(next)) {
      const oct = /^[0-7]{1,3}/.exec(body.slice(i + 1))![0];
      bytes.push(parseInt(oct, 8));
      i += oct.length;
    } else {
      bytes.push(escapes[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

function stripPrefix(path: string): string {
  return /^[ab]\//.test(path) ? path.slice(2) : path;
}

/** A path as written after `--- `, `+++ `, `rename from ` and the like. */
function pathField(field: string): string | undefined {
  let raw = field.replace(/\r?\n$/, '');
  if (!raw.startsWith('"')) raw = raw.split('\t')[0]!; // plain diffs may append a timestamp
  const path = unquoteGitPath(raw);
  return path === '/dev/null' ? undefined : path;
}

/** A `---`/`+++` path: the same, without its `a/` or `b/`. */
function stripPathOf(field: string): string | undefined {
  const path = pathField(field);
  return path === undefined ? undefined : stripPrefix(path);
}

/** The two paths of `diff --git a/x b/y`; for unquoted names with spaces, assumes no rename. */
function gitHeaderPaths(rest: string): string[] {
  const line = rest.replace(/\r?\n$/, '');
  const quoted = /^("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)$/.exec(line);
  if (quoted)
    return [stripPrefix(unquoteGitPath(quoted[1]!)), stripPrefix(unquoteGitPath(quoted[2]!))];
  // "a/<p> b/<p>": both halves equal, so the split is in the middle.
  const half = (line.length - 1) / 2;
  if (Number.isInteger(half) && line.slice(0, half).slice(2) === line.slice(half + 1).slice(2)) {
    return [stripPrefix(line.slice(0, half))];
  }
  return [];
}

/** Splits a diff into per-file sections; text before the first file is a path-less preamble. */
export function splitDiff(diff: string): DiffSection[] {
  const lines = diff.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const sections: DiffSection[] = [];
  let current: DiffSection | undefined;
  /** In a git section's extended header (before its first hunk): `---`/`+++` belong to it. */
  let inGitHeader = false;
  const addPath = (section: DiffSection, path: string | undefined): void => {
    if (path !== undefined && !section.paths.includes(path)) section.paths.push(path);
  };
  const start = (paths: string[]): DiffSection => {
    const s: DiffSection = { text: '', paths: [] };
    for (const p of paths) addPath(s, p);
    sections.push(s);
    return s;
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('diff --git ')) {
      current = start(gitHeaderPaths(line.slice('diff --git '.length)));
      inGitHeader = true;
      current.text += line;
      continue;
    }
    const next = lines[i + 1] ?? '';
    if (line.startsWith('--- ') && next.startsWith('+++ ')) {
      if (!inGitHeader || !current) current = start([]);
      current.text += line + next;
      addPath(current, stripPathOf(line.slice(4)));
      addPath(current, stripPathOf(next.slice(4)));
      inGitHeader = false;
      i += 1;
      continue;
    }
    const hunk = HUNK_HEADER.exec(line);
    if (hunk && current) {
      inGitHeader = false;
      current.text += line;
      let oldLeft = hunk[1] === undefined ? 1 : Number(hunk[1]);
      let newLeft = hunk[2] === undefined ? 1 : Number(hunk[2]);
      while ((oldLeft > 0 || newLeft > 0) && i + 1 < lines.length) {
        const body = lines[++i]!;
        current.text += body;
        const tag = body[0];
        if (tag === '-') oldLeft--;
        else if (tag === '+') newLeft--;
        else if (tag === ' ' || body === '\n' || body === '\r\n') {
          oldLeft--;
          newLeft--;
        }
      }
      // "\ No newline at end of file" may follow the last counted line.
      while (lines[i + 1]?.startsWith('\\')) current.text += lines[++i]!;
      continue;
    }
    if (inGitHeader && current) {
      const m = /^(?:rename|copy) (?:from|to) (.*)$/s.exec(line);
      if (m) addPath(current, pathField(m[1]!));
    }
    current ??= start([]);
    current.text += line;
  }
  return sections;
}

/**
 * The protected-path rule: the reward drops every section of the agent's diff that names (as old
 * or new path) a path that is
 *
 * 1. touched by the task's `test_patch` (the hidden tests, whatever their names);
 * 2. a test: under a directory named `test`, `tests`, `__tests__` or `testing` at any depth, or
 *    named like a test of a supported runner (`test_*.py`, `*_test.py`, `*.test.*`, `*.spec.*`,
 *    `*-test.*`, `*_test.*`, `test-*.*`, `test.*` for JS/TS extensions);
 * 3. test-runner configuration, whole files, at any depth: `conftest.py`, `pytest.ini`,
 *    `.pytest.ini`, `pytest.toml`, `.pytest.toml`, `tox.ini`, `setup.cfg`, `pyproject.toml`,
 *    `.coveragerc`, `package.json`, `.mocharc*`, `jest.config*`, `jest.setup*`, `vitest.config*`,
 *    `vitest.setup*`, `vitest.workspace*`, `vite.config*`, `setupTests.*`, `babel.config*`,
 *    `.babelrc*`, `tsconfig*.json`;
 * 4. interpreter start-up hooks and caches: `sitecustomize.py`, `usercustomize.py`, `*.pth`,
 *    `*.pyc`, `*.pyo`, anything under `__pycache__/`, `.pytest_cache/` or `node_modules/`;
 * 5. a top-level module shadowing a test runner: `pytest`, `_pytest`, `pluggy`, `py`, `unittest`,
 *    `iniconfig`, `vitest` as `<name>.py`, `<name>/` or `<name>.{js,mjs,cjs}` at the root;
 * 6. repository plumbing: `.gitattributes`, `.gitmodules`.
 *
 * Whole files, not keys or sections: an agent that needs a change in `package.json` or
 * `pyproject.toml` loses it, which costs less than a config that neuters assertions.
 */
const TEST_DIRS = new Set(['test', 'tests', '__tests__', 'testing']);
const JS_EXT = String.raw`(?:js|mjs|cjs|ts|mts|cts|jsx|tsx)`;
const PROTECTED_NAMES: RegExp[] = [
  /^test_.*\.py$/,
  /_test\.py$/,
  new RegExp(String.raw`\.(?:test|spec)\.${JS_EXT}$`),
  new RegExp(String.raw`[-_]test\.${JS_EXT}$`),
  new RegExp(String.raw`^test(?:-.*)?\.${JS_EXT}$`),
  /^conftest\.py$/,
  /^\.?pytest\.(?:ini|toml)$/,
  /^tox\.ini$/,
  /^setup\.cfg$/,
  /^pyproject\.toml$/,
  /^\.coveragerc$/,
  /^package\.json$/,
  /^\.mocharc/,
  /^(?:jest|vitest|vite)\.config\./,
  /^(?:jest|vitest)\.setup\./,
  /^vitest\.workspace\./,
  /^setupTests\./,
  /^babel\.config\./,
  /^\.babelrc/,
  /^tsconfig.*\.json$/,
  /^(?:site|user)customize\.py$/,
  /\.pth$/,
  /\.py[co]$/,
  /^\.git(?:attributes|modules)$/,
];
const PROTECTED_DIRS = new Set(['__pycache__', '.pytest_cache', 'node_modules']);
const RUNNER_MODULES = new Set([
  'pytest',
  '_pytest',
  'pluggy',
  'py',
  'unittest',
  'iniconfig',
  'vitest',
]);

function shadowsRunner(parts: string[]): boolean {
  const top = parts[0] ?? '';
  const module = parts.length > 1 ? top : top.replace(/\.(?:py|js|mjs|cjs)$/, '');
  return (parts.length > 1 || module !== top) && RUNNER_MODULES.has(module);
}

/** Rules 2 to 6 of the protected-path rule above (rule 1 needs the task: `stripTestChanges`). */
export function isTestPath(path: string): boolean {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  const base = parts[parts.length - 1] ?? '';
  return (
    parts.some((p) => TEST_DIRS.has(p) || PROTECTED_DIRS.has(p)) ||
    PROTECTED_NAMES.some((re) => re.test(base)) ||
    shadowsRunner(parts)
  );
}

/** Every path a diff's sections name: for a test patch, the hidden test files. */
export function pathsOf(diff: string): string[] {
  return [...new Set(splitDiff(diff).flatMap((s) => s.paths))];
}

/**
 * The diff without the sections that touch a protected path (rules above; `protectedPaths` are
 * the paths of the task's test patch; `protectedTrees` are paths protected with all below them,
 * the task's hidden paths inside its workspace), and the paths dropped.
 */
export function stripTestChanges(
  diff: string,
  protectedPaths: Iterable<string> = [],
  protectedTrees: readonly string[] = [],
): { diff: string; dropped: string[] } {
  const hidden = new Set(protectedPaths);
  const inTree = (p: string): boolean => protectedTrees.some((t) => p === t || p.startsWith(`${t}/`));
  const kept: string[] = [];
  const dropped: string[] = [];
  for (const section of splitDiff(diff)) {
    // A file section whose paths could not be read is dropped too: fail closed.
    const unreadable = section.paths.length === 0 && /^(?:diff |--- )/.test(section.text);
    if (unreadable || section.paths.some((p) => hidden.has(p) || inTree(p) || isTestPath(p)))
      dropped.push(...section.paths);
    else kept.push(section.text);
  }
  return { diff: kept.join(''), dropped };
}
