/**
 * Which canaries guard a task's test run: for a report-based task its framework's (canary.ts);
 * for a log-parser task the framework the parser reads (their ids as the log parser names them),
 * or Go's and cargo's (compiled-canary.ts). TAP is printed by tape and node:test alike: a hidden
 * JS file that uses tape gets tape canaries, one that uses node:test node:test ones; any other
 * program printing TAP has no assertion library a canary could be written for, and its runs are
 * unguarded, which the reward says (`RewardResult.canaries` is 0).
 */
import type { LogParser, Task, TestFramework } from '../schema.js';
import { jsCanary } from './canary-js.js';
import { canaryTargets, keptPaths, makeCanary, type Canary, type Random } from './canary.js';
import { compiledCanaryTargets, makeCompiledCanary } from './compiled-canary.js';
import type { ReportedStatus } from './junit.js';
import { record, type TestStatuses } from './log-parsers/lines.js';

export interface CanaryPlan {
  /** The files to read before making their canaries; `created` ones do not exist yet. */
  targets(testPatch: string, random: Random): { path: string; created: boolean }[];
  /** The canary for one target, or undefined when that file can take none. */
  make(path: string, content: string, failToPass: string[], random: Random): Canary | undefined;
}

const FRAMEWORK_OF_PARSER: Partial<Record<LogParser, TestFramework>> = {
  pytest: 'pytest',
  unittest: 'unittest',
  jest: 'jest',
  vitest: 'vitest',
  mocha: 'mocha',
};

function frameworkPlan(framework: TestFramework, rename = (id: string): string => id): CanaryPlan {
  return {
    targets: (testPatch, random) => canaryTargets(framework, testPatch, random),
    make: (path, content, failToPass, random) => {
      const canary = makeCanary(framework, path, content, failToPass, random);
      return canary && { ...canary, ids: canary.ids.map(rename) };
    },
  };
}

/** unittest's report id `a.b.Class.test_m` → its verbose log's `test_m (a.b.Class)`. */
function unittestLogId(id: string): string {
  const dot = id.lastIndexOf('.');
  return `${id.slice(dot + 1)} (${id.slice(0, dot)})`;
}

/** tape's or node:test's hidden test files of a TAP run: any JS or TS file of the test patch. */
const tapPlan: CanaryPlan = {
  targets: (testPatch) =>
    keptPaths(testPatch)
      .filter((p) => /\.[mc]?[jt]sx?$/.test(p))
      .map((path) => ({ path, created: false })),
  make: (path, content, failToPass, random) => {
    const style = /\b(?:from\s+|require\()\s*['"]tap(?:e)?['"]/.test(content)
      ? 'tape'
      : /['"]node:test['"]/.test(content)
        ? 'node-test'
        : undefined;
    return style && jsCanary({ style, path, content, failToPass, random });
  },
};

/**
 * The plan of a task's reward run: canaries go into test-patch files, so a task whose tests are
 * hidden in its image (no test patch) has none; else `canaryPlanOf`.
 */
export function rewardCanaryPlan(
  task: Pick<Task, 'test_framework' | 'log_parser' | 'test_patch'>,
): CanaryPlan | undefined {
  return task.test_patch === '' ? undefined : canaryPlanOf(task);
}

/** The task's canary plan; undefined when its runs cannot be guarded. */
export function canaryPlanOf(
  task: Pick<Task, 'test_framework' | 'log_parser'>,
): CanaryPlan | undefined {
  if (task.test_framework) return frameworkPlan(task.test_framework);
  const parser = task.log_parser;
  if (parser === 'go-test' || parser === 'cargo-test') {
    return {
      targets: (testPatch) => compiledCanaryTargets(parser, testPatch),
      make: (path, content, _failToPass, random) =>
        makeCompiledCanary(parser, path, content, random),
    };
  }
  if (parser === 'tap') return tapPlan;
  const framework = parser ? FRAMEWORK_OF_PARSER[parser] : undefined;
  if (!framework) return undefined;
  return framework === 'unittest'
    ? frameworkPlan(framework, unittestLogId)
    : frameworkPlan(framework);
}

/** A test id without what depends on where its runner ran: a path before `::`, a module in `( )`. */
function nameKey(id: string): string {
  const sep = id.indexOf('::');
  if (sep >= 0) return id.slice(sep);
  const paren = id.indexOf(' (');
  return paren > 0 && id.endsWith(')') ? id.slice(0, paren) : id;
}

/**
 * The status of each canary id in `reported`. A log names tests relative to where the runner ran
 * (Django's runtests.py says `admin_views.tests`, not `tests.admin_views.tests`; pytest run from
 * another rootdir shortens paths), so a canary not found under its own id is looked up by its
 * random test name alone, which no other test shares.
 */
export function canaryStatuses(
  ids: string[],
  reported: TestStatuses,
): Record<string, ReportedStatus | undefined> {
  const byName: TestStatuses = {};
  for (const [id, status] of Object.entries(reported)) record(byName, nameKey(id), status);
  return Object.fromEntries(ids.map((id) => [id, reported[id] ?? byName[nameKey(id)]]));
}
