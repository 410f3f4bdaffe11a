/**
 * The honest baselines of the realistic fixture repositories (repos/): for each runner, no change
 * scores 0 (FAIL_TO_PASS failing, PASS_TO_PASS passing) and the gold patch scores 1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { goldScript, Harness } from './real-harness.js';
import { JS_REPOS } from './repos/js.js';
import { PY_REPOS } from './repos/python.js';

const REPOS = [...JS_REPOS, ...PY_REPOS];
const h = new Harness('realistic repos: honest baselines');

beforeAll(() => h.setup(REPOS), 120_000);
afterAll(() => h.teardown());

describe('realistic fixture repositories', () => {
  it.each(REPOS.map((r) => r.runner))(
    '%s: no change scores 0, the gold patch 1',
    async (runner) => {
      const { task } = h.repo(runner);
      const empty = await h.score(runner, 'true');
      expect(
        { reward: empty.result?.reward, verdict: empty.verdict, detail: empty.result?.detail },
        empty.result?.detail,
      ).toMatchObject({ reward: 0, verdict: 'unresolved' });
      for (const id of task.FAIL_TO_PASS)
        expect([id, empty.result?.tests[id]]).not.toEqual([id, 'passed']);
      for (const id of task.PASS_TO_PASS)
        expect([id, empty.result?.tests[id]]).toEqual([id, 'passed']);
      const gold = await h.score(runner, goldScript(task));
      expect({
        reward: gold.result?.reward,
        verdict: gold.verdict,
        detail: gold.result?.detail,
        tests: gold.result?.tests,
      }).toMatchObject({ reward: 1, verdict: 'resolved' });
      h.rows.push({
        attack: `no change / gold patch (${runner})`,
        defence: '-',
        reward: gold.result!.reward,
        reason: `${empty.verdict} / ${gold.verdict}`,
        note: '',
      });
    },
  );
});
