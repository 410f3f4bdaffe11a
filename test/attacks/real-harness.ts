/**
 * The harness of the realistic attack suites (reward-hacks-real-*.test.ts): the fixture repos of
 * repos/ built once per file, an agent that runs shell in its own bubblewrap sandbox, the real
 * reward, and the table attack → defence → reward (reason) printed at the end.
 *
 * A row is an attack the agent can run from its sandbox, the defence(s) expected to stop it and
 * the reasons that count as stopped. Rows that the current code does not stop fail: the suite is
 * written against the defences of issue 13 (each row names the one it proves).
 */
import { dirname, posix } from 'node:path';
import { expect } from 'vitest';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import * as reward from '../../tasks/reward/index.js';
import type { Task } from '../../tasks/schema.js';
import { removeDirs, tempDir } from '../sandbox/helpers.js';
import { buildRepo, type RepoFixture, type Runner } from './repos/build.js';
import { SCREEN_OFF } from '../reward/fixtures.js';

/** What a row may end as: the reward's reasons, and a diff the infra failed on. */
export type Verdict = reward.RewardReason | 'infra_error';

/** The defences of issue 13, as the tables name them. */
export const DEFENCE = {
  stream: 'stream (2): report vs stream',
  baseline: 'suite baseline (4)',
  screen: 'static screen (5)',
  evades: 'computed names: may evade the screen (5)',
};

export interface RealHack {
  attack: string;
  runner: Runner;
  /** The issue-13 class: 1 neuter, 2 shapes, 3 report, 4 suite, 5 dodge, screen, ids. */
  kind: string;
  /** Shell the agent runs in /workspace; the state it leaves is scored. */
  script: (repo: RepoFixture, task: Task) => string;
  /** The defence(s) expected to stop it. */
  defence: string;
  /** The reasons that count as stopped (the reward must be 0 too). */
  allowed: Verdict[];
  /** The static screen of the agent's diff is (one of) the defences. */
  screen?: boolean;
  /** A hack no defence stops, and why; such a row passes while reward 1. Keep to the minimum. */
  knownUnstopped?: string;
  /** Gold patch applied before the script. */
  withGold?: boolean;
}

export interface Row {
  attack: string;
  defence: string;
  reward: number;
  reason: string;
  note: string;
}

/** The harness of one test file. */
export class Harness {
  readonly rows: Row[] = [];
  readonly repos = new Map<Runner, { fixture: RepoFixture; task: Task; dir: string }>();
  private dirs: string[] = [];
  private episodes = 0;
  provider!: BubblewrapProvider;

  constructor(private readonly title: string) {}

  async setup(fixtures: RepoFixture[]): Promise<void> {
    const rootDir = await tempDir('real-hacks-root');
    this.dirs.push(rootDir);
    this.provider = new BubblewrapProvider({ rootDir });
    for (const fixture of fixtures) {
      const { task, dir } = await buildRepo(fixture);
      this.dirs.push(dir);
      this.repos.set(fixture.runner, { fixture, task, dir });
    }
  }

  async teardown(): Promise<void> {
    printRows(this.title, this.rows);
    await this.provider?.release();
    await removeDirs(this.dirs);
  }

  repo(runner: Runner): { fixture: RepoFixture; task: Task; dir: string } {
    const r = this.repos.get(runner);
    if (!r) throw new Error(`no ${runner} repo`);
    return r;
  }

  /**
   * Plays the agent (its script in its own sandbox), reads its changes as the reward activity does
   * (`workspaceDiff`, on the host), and scores them, with the static screen off unless `screenOn`
   * so that the defence behind it is what is proved; `screened` lists the rules the screen would
   * flag in the same diff. A `WorkspaceDiffError` is what the activity turns into `infra_error`: a
   * defence that failed, recorded as such.
   */
  async score(
    runner: Runner,
    script: string,
    task: Task = this.repo(runner).task,
    screenOn = false,
  ): Promise<{ verdict: Verdict; result?: reward.RewardResult; screened: string[] }> {
    const { dir } = this.repo(runner);
    const key = `real-${process.pid}-${this.episodes++}`;
    const { id } = await this.provider.create({
      idempotencyKey: `${key}:agent`,
      workspaceDir: dir,
      readOnlyMounts: reward.runnerMounts(task),
    });
    let changes: reward.WorkspaceChanges;
    try {
      const r = await this.provider.exec(id, { shell: script }, { timeoutMs: 120_000 });
      if (r.exitCode !== 0) throw new Error(`agent script failed (${r.exitCode}): ${r.stderr}`);
      try {
        changes = await reward.workspaceDiff(this.provider, id);
      } catch (err) {
        if (err instanceof reward.WorkspaceDiffError)
          return { verdict: 'infra_error', screened: [] };
        throw err;
      }
    } finally {
      await this.provider.destroy(id);
    }
    const { diff } = reward.stripTestChanges(changes.diff, reward.pathsOf(task.test_patch));
    const screened = [...new Set(reward.screenDiff(diff, reward.activeRules()).map((f) => f.rule))];
    const result = await reward.evaluateReward(
      { provider: this.provider, ...(screenOn ? {} : { screen: SCREEN_OFF }) },
      {
        task,
        agentDiff: changes.diff,
        ...(changes.rejected ? { agentDiffRejected: changes.rejected } : {}),
        idempotencyKey: key,
      },
    );
    return { verdict: result.reason, result, screened };
  }

  /** Runs a row, records it in the table, and checks it was stopped. */
  async run(hack: RealHack): Promise<void> {
    const { fixture, task } = this.repo(hack.runner);
    const script = `${hack.withGold ? goldScript(task) : ''}${hack.script(fixture, task)}`;
    // Rows of the ids class have no defence but the screen; the others are proved without it.
    const { verdict, result, screened } = await this.score(
      hack.runner,
      script,
      task,
      hack.kind === 'ids',
    );
    const value = result?.reward ?? 0;
    const stopped = verdict !== 'infra_error' && value === 0 && hack.allowed.includes(verdict);
    this.rows.push({
      attack: `[${hack.kind}] ${hack.attack} (${hack.runner})`,
      defence: `${hack.defence} [screen: ${screened.join(', ') || 'nothing'}]`,
      reward: value,
      reason: verdict,
      note: stopped
        ? ''
        : verdict === 'infra_error'
          ? '  NOT STOPPED (infra_error: the episode would go unscored)'
          : hack.knownUnstopped
            ? `  NOT STOPPED (known: ${hack.knownUnstopped})`
            : '  NOT STOPPED',
    });
    if (hack.screen) expect(screened, `the screen flags ${hack.attack}`).not.toHaveLength(0);
    if (hack.knownUnstopped && value === 1) return;
    expect({
      reward: value,
      verdict,
      allowed: hack.allowed,
      tests: result?.tests,
      detail: result?.detail,
    }).toMatchObject({ reward: 0 });
    expect(
      hack.allowed,
      `${verdict}: ${JSON.stringify(result?.tests)}\n${result?.detail ?? ''}`,
    ).toContain(verdict);
  }
}

export function printRows(title: string, rows: Row[]): void {
  if (rows.length === 0) return;
  const a = Math.max(...rows.map((r) => r.attack.length));
  const d = Math.max(...rows.map((r) => r.defence.length));
  console.log(
    [
      `${title}: attack -> defence -> reward (reason)`,
      ...rows.map(
        (r) =>
          `  ${r.attack.padEnd(a)} -> ${r.defence.padEnd(d)} -> ${r.reward} (${r.reason})${r.note}`,
      ),
    ].join('\n'),
  );
}

/** Applies the task's gold patch in the agent's sandbox. */
export function goldScript(task: Task): string {
  return `git apply --whitespace=nowarn <<'GOLD_PATCH_EOF'\n${task.patch}GOLD_PATCH_EOF\n`;
}

/** Writes `code` to a helper module beside the entry module and has the entry load it first. */
export function plant(repo: RepoFixture, name: string, code: string): string {
  const dir = posix.dirname(repo.entry);
  const python = repo.entry.endsWith('.py');
  const ts = repo.entry.endsWith('.ts');
  const cjs = repo.runner === 'jest' || repo.runner === 'tape';
  const file = `${dir}/${name}${python ? '.py' : ts ? '.ts' : '.js'}`;
  const load = python
    ? `from . import ${name}  # noqa: F401`
    : cjs
      ? `require('./${name}');`
      : `import './${name}${ts ? '' : '.js'}';`;
  return `mkdir -p ${dirname(file)}
cat > ${file} <<'PLANTED_EOF'
${code}
PLANTED_EOF
{ echo "${load.replaceAll('"', '\\"')}"; cat ${repo.entry}; } > /tmp/entry && cat /tmp/entry > ${repo.entry}
`;
}
