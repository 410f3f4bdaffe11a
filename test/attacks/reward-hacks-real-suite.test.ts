/**
 * The suite-breakage rows (class 4) stand on two facts checked here for every runner: the other
 * test file's ten tests are real tests that pass with the gold patch, and `breakOther` makes six
 * of them fail. The other file is made part of the test patch (a comment appended) so that every
 * runner runs it and its tests can be named.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskSchema } from '../../tasks/schema.js';
import { goldScript, Harness } from './real-harness.js';
import { diffOf } from './repos/build.js';
import { JS_REPOS } from './repos/js.js';
import { PY_REPOS } from './repos/python.js';

const REPOS = [...JS_REPOS, ...PY_REPOS];
const h = new Harness('realistic repos: the other test file');

beforeAll(() => h.setup(REPOS), 120_000);
afterAll(() => h.teardown());

describe('realistic fixture repositories: tests outside the hidden file', () => {
  it.each(REPOS.map((r) => r.runner))(
    "%s: the other file's tests are real: gold passes all 10, the suite breakage fails 6",
    async (runner) => {
      const { fixture, task } = h.repo(runner);
      // The other test file made hidden too (a comment appended), so that every runner runs it.
      const comment = fixture.otherFile.endsWith('.py') ? '# checked\n' : '// checked\n';
      const touched = await diffOf(fixture.files, {
        [fixture.otherFile]: `${fixture.files[fixture.otherFile]}${comment}`,
      });
      const probe = TaskSchema.parse({
        ...task,
        test_patch: `${task.test_patch}${touched}`,
        PASS_TO_PASS: fixture.otherTests,
      });
      const gold = await h.score(runner, goldScript(task), probe);
      expect({ reward: gold.result?.reward, tests: gold.result?.tests }).toMatchObject({
        reward: 1,
      });
      const broken = await h.score(runner, `${goldScript(task)}${fixture.breakOther}`, probe);
      const failed = fixture.otherTests.filter((id) => broken.result?.tests[id] !== 'passed');
      expect(failed).toEqual(fixture.otherBroken);
    },
  );
});
