/**
 * Scripted policies for the simulated inference engine: per task, a short path that solves it
 * (look at the code, apply the gold patch, run the tests, submit) and a plausible wrong path that
 * earns reward 0. The engine recognises the task by `match` and the branch by the first thought.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { JEST_CACHE_DIR, NODE_MODULES_MOUNT } from './reward/runners.js';
import type { Task, TestFramework } from './schema.js';

export interface ScriptedTurn {
  thought: string;
  tool: { name: string; arguments: Record<string, unknown> } | null;
  content?: string;
}

export interface TaskScript {
  taskId: string;
  match: string;
  solve: ScriptedTurn[];
  wander: ScriptedTurn[];
}

/** A wrong edit: replace `find` by `replace` in `path` (relative to the workspace). */
interface WrongEdit {
  thought: string;
  path: string;
  find: string;
  replace: string;
}

/** What a developer would look at for a built-in pack task, and where they could go astray. */
interface PackHints {
  inspect: { thought: string; command: string };
  fixThought: string;
  wanderInspect: { thought: string; command: string };
  wrongEdit: WrongEdit;
}

const PACK_HINTS: Record<string, PackHints> = {
  'js-ini-parser-1': {
    inspect: {
      thought:
        'Values lose everything after a second equals sign, so I should read how parse() splits a line into key and value.',
      command: 'cat -n src/ini.js',
    },
    fixThought:
      'parse() splits the line on every equals sign and keeps only parts[1]; splitting at the first equals sign keeps the whole value.',
    wanderInspect: {
      thought:
        'The truncation probably comes from the inline comment handling, so I will look at stripInlineComment first.',
      command: 'grep -n -A6 "function stripInlineComment" src/ini.js',
    },
    wrongEdit: {
      thought:
        'I will make only a semicolon start an inline comment so fewer values get cut short.',
      path: 'src/ini.js',
      find: 'const match = /\\s[;#]/.exec(value);',
      replace: 'const match = /\\s;/.exec(value);',
    },
  },
  'js-semver-compare-1': {
    inspect: {
      thought:
        'rc.10 sorting before rc.2 points at the prerelease comparison, so I will read comparePrerelease.',
      command: 'grep -n -A12 "function comparePrerelease" lib/semver.js',
    },
    fixThought:
      "Prerelease identifiers are compared as strings, so '10' sorts before '2'; numeric identifiers must compare as numbers and rank below alphanumeric ones.",
    wanderInspect: {
      thought:
        'The wrong order shows up in sort() and maxVersion(), so I will look at how they are implemented.',
      command: 'grep -n -A9 "export function sort" lib/semver.js',
    },
    wrongEdit: {
      thought:
        'I will give sort() a numeric-aware tie-breaker so versions like rc.10 and rc.2 are ordered naturally.',
      path: 'lib/semver.js',
      find: 'return [...versions].sort(compare);',
      replace:
        'return [...versions].sort((a, b) => compare(a, b) || a.localeCompare(b, undefined, { numeric: true }));',
    },
  },
  'js-lru-cache-1': {
    inspect: {
      thought:
        'Another entry disappears when an existing key is updated, so I will read LRUCache.set.',
      command: 'grep -n -A6 "  set(key, value) {" lib/lru.js',
    },
    fixThought:
      'set() evicts whenever the cache is full, even when it only overwrites a key; it should evict only when a new key is inserted.',
    wanderInspect: {
      thought: 'Maybe reads do not refresh recency properly, so I will compare get() and peek().',
      command: 'grep -n -A16 "  peek(key) {" lib/lru.js',
    },
    wrongEdit: {
      thought:
        'I will make peek() refresh recency like get() so entries that were just touched are not evicted.',
      path: 'lib/lru.js',
      find: 'peek(key) {\n    return this.map.get(key);\n  }',
      replace: 'peek(key) {\n    return this.map.has(key) ? this.get(key) : undefined;\n  }',
    },
  },
  'js-csv-split-1': {
    inspect: {
      thought:
        'Quotes vanish while splitting, so I will read how splitLine handles the quote character.',
      command: 'grep -n -A20 "export function splitLine" src/csv.js',
    },
    fixThought:
      'splitLine toggles the quoted state on every quote, so a doubled quote inside a quoted field is lost; it must become one literal quote.',
    wanderInspect: {
      thought:
        'The round trip breaks, so stringify may be escaping quotes the wrong way; I will look at quoteField.',
      command: 'grep -n -A5 "function quoteField" src/csv.js',
    },
    wrongEdit: {
      thought: 'I will escape embedded quotes with a backslash instead of doubling them.',
      path: 'src/csv.js',
      find: `text.replaceAll('"', '""')`,
      replace: String.raw`text.replaceAll('"', '\\"')`,
    },
  },
  'py-roman-numerals-1': {
    inspect: {
      thought:
        'to_roman builds numerals greedily from the NUMERALS table, so I will check that table first.',
      command: "sed -n '1,25p' roman.py",
    },
    fixThought:
      "The NUMERALS table has no (400, 'CD') pair, so 400 comes out as CCCC and the canonical check rejects CD; adding the pair fixes both.",
    wanderInspect: {
      thought:
        "from_roman rejects 'CD', so its canonical check is probably too strict; I will read from_roman.",
      command: 'grep -n -A16 "def from_roman" roman.py',
    },
    wrongEdit: {
      thought:
        'I will accept any numeral whose value is in range instead of requiring the canonical spelling.',
      path: 'roman.py',
      find: '    if not MIN_VALUE <= total <= MAX_VALUE or to_roman(total) != numeral:',
      replace: '    if not MIN_VALUE <= total <= MAX_VALUE:',
    },
  },
  'py-date-range-1': {
    inspect: {
      thought:
        'The error mentions month 0, so I will read how add_months computes the target month.',
      command: 'grep -n -A8 "def add_months" daterange/core.py',
    },
    fixThought:
      'month_index % 12 is 0 for December; counting months from zero and adding one after the modulo gives 1..12 and the right year.',
    wanderInspect: {
      thought: 'The crash is raised by calendar.monthrange, so I will see where the code calls it.',
      command: 'grep -n "monthrange" daterange/core.py',
    },
    wrongEdit: {
      thought: 'I will map month 0 to 1 so calendar.monthrange never receives an invalid month.',
      path: 'daterange/core.py',
      find: '    month = month_index % 12\n',
      replace: '    month = month_index % 12 or 1\n',
    },
  },
  'py-word-wrap-1': {
    inspect: {
      thought:
        'Lines are wrapped one word early, so I will look at the check that decides whether a word still fits.',
      command: 'cat -n wordwrap/__init__.py',
    },
    fixThought:
      "The fit check uses '<', which rejects a line of exactly the available width; it should be '<='.",
    wanderInspect: {
      thought:
        'Maybe the indent is subtracted from the width twice, so I will check how the room per line is computed.',
      command: 'grep -n "room" wordwrap/__init__.py',
    },
    wrongEdit: {
      thought: 'I will stop subtracting the indent from the width so lines get their full width.',
      path: 'wordwrap/__init__.py',
      find: '    room = width - len(indent)\n',
      replace: '    room = width\n',
    },
  },
  'py-slugify-1': {
    inspect: {
      thought: 'Accented letters vanish, so I will look at how to_ascii converts the text.',
      command: 'grep -n -A5 "def to_ascii" slugkit/__init__.py',
    },
    fixThought:
      "NFC keeps 'é' as one non-ASCII code point that the ASCII encoding drops; NFKD splits off the accent first so the base letter survives.",
    wanderInspect: {
      thought:
        'Maybe the pattern that strips non-alphanumerics removes the accented letters, so I will look at _NOT_ALNUM.',
      command: 'grep -n "_NOT_ALNUM" slugkit/__init__.py',
    },
    wrongEdit: {
      thought:
        'I will make the pattern Unicode-aware so accented letters count as word characters.',
      path: 'slugkit/__init__.py',
      find: '_NOT_ALNUM = re.compile(r"[^a-z0-9]+")',
      replace: '_NOT_ALNUM = re.compile(r"[\\W_]+")',
    },
  },
};

/** The command a developer runs for the repository's own tests, from /workspace. */
const VISIBLE_TEST_COMMAND: Record<TestFramework, string> = {
  pytest: 'python3 -m pytest -q',
  vitest: `node ${NODE_MODULES_MOUNT}/vitest/vitest.mjs run`,
  'node-test': 'node --test',
  unittest: 'python3 -m unittest discover -s tests -t .',
  mocha: `node ${NODE_MODULES_MOUNT}/mocha/bin/mocha.js`,
  jest: `node ${NODE_MODULES_MOUNT}/jest/bin/jest.js --ci --no-watchman --cacheDirectory=${JEST_CACHE_DIR}`,
};

export function scriptForTask(task: Task): TaskScript {
  const hints = PACK_HINTS[task.instance_id];
  return {
    taskId: task.instance_id,
    match: matchText(task.problem_statement),
    solve: hints ? packSolve(task, hints) : genericSolve(task),
    wander: hints ? packWander(task, hints) : genericWander(task),
  };
}

/** The first non-empty line of the issue, which any prompt built from it contains verbatim. */
function matchText(problemStatement: string): string {
  const firstLine =
    problemStatement.split('\n').find((line) => line.trim() !== '') ?? problemStatement;
  return firstLine.trim().slice(0, 80);
}

function packSolve(task: Task, hints: PackHints): ScriptedTurn[] {
  return [
    shell(hints.inspect.thought, hints.inspect.command),
    shell(hints.fixThought, applyPatchCommand(task.patch)),
    runTests(
      task,
      'Now I will run the test suite to check the fix and make sure nothing else broke.',
    ),
    submit('The tests pass, so I will submit the fix.', task),
  ];
}

function packWander(task: Task, hints: PackHints): ScriptedTurn[] {
  const edit = hints.wrongEdit;
  const original = readFileSync(join(task.workspace.path, edit.path), 'utf8');
  if (!original.includes(edit.find)) {
    throw new Error(
      `wander edit for ${task.instance_id}: "${edit.find}" not found in ${edit.path}`,
    );
  }
  return [
    shell(hints.wanderInspect.thought, hints.wanderInspect.command),
    {
      thought: edit.thought,
      tool: {
        name: 'write_file',
        arguments: { path: edit.path, content: original.replace(edit.find, edit.replace) },
      },
    },
    runTests(task, 'Let me run the tests to see whether that helped.'),
    submit('That should address the issue, so I will submit.', task),
  ];
}

/** For tasks without hints: read the files the fix touches, then apply it. */
function genericSolve(task: Task): ScriptedTurn[] {
  const file = patchedFiles(task.patch)[0];
  const inspect = file
    ? shell(`The issue points at ${file}, so I will read it first.`, `cat -n ${shellQuote(file)}`)
    : shell('I will start by listing the repository files.', 'git ls-files');
  return [
    inspect,
    shell('I see the cause now and will apply a fix for it.', applyPatchCommand(task.patch)),
    runTests(task, 'Now I will run the test suite to check the fix.'),
    submit('The tests pass, so I will submit the fix.', task),
  ];
}

/** For tasks without hints: a look around that never changes the code. */
function genericWander(task: Task): ScriptedTurn[] {
  return [
    shell(
      'Before changing anything I will read the README to understand the project.',
      'cat README.md',
    ),
    runTests(task, 'Let me run the existing tests to see whether anything is actually broken.'),
    submit(
      'The existing tests pass, so the behaviour seems intended; I will submit without changes.',
      task,
    ),
  ];
}

function shell(thought: string, command: string): ScriptedTurn {
  return { thought, tool: { name: 'shell', arguments: { command } } };
}

/** The task's visible tests: its own command, else its framework's runner. */
function runTests(task: Task, thought: string): ScriptedTurn {
  const command =
    task.test_command ?? (task.test_framework ? VISIBLE_TEST_COMMAND[task.test_framework] : 'true');
  return shell(thought, command);
}

function submit(thought: string, task: Task): ScriptedTurn {
  return {
    thought,
    tool: {
      name: 'submit',
      arguments: { summary: `Addressed ${task.instance_id}: ${matchText(task.problem_statement)}` },
    },
  };
}

/** Write the patch through a quoted heredoc (no expansion) and apply it with git. */
function applyPatchCommand(patch: string): string {
  const body = patch.endsWith('\n') ? patch : `${patch}\n`;
  let delimiter = 'FIX_PATCH_EOF';
  while (body.split('\n').includes(delimiter)) delimiter += '_';
  return `cat > /tmp/fix.patch <<'${delimiter}'\n${body}${delimiter}\ngit apply /tmp/fix.patch`;
}

function patchedFiles(patch: string): string[] {
  return [...patch.matchAll(/^diff --git a\/(\S+) b\//gm)]
    .map((m) => m[1] ?? '')
    .filter((f) => f !== '');
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
