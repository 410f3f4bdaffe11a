/**
 * vitest reporter: streams each test case's result as it ends (stream-fd.cjs), with the id
 * parseVitestJson gives it (enclosing suite names and the test name, joined by " > ") and the
 * status vitest's JSON reporter writes. Reporters run in vitest's main process, not in the
 * workers that run the code under test.
 */
import stream from './stream-fd.cjs';

const STATUSES = { passed: 'passed', failed: 'failed', skipped: 'skipped' };

function idOf(testCase) {
  const names = [testCase.name];
  for (let p = testCase.parent; p && p.type === 'suite'; p = p.parent) names.unshift(p.name);
  return names.join(' > ');
}

export default class StreamReporter {
  onTestCaseResult(testCase) {
    stream.result(idOf(testCase), STATUSES[testCase.result().state] ?? 'failed');
  }

  onTestRunEnd() {
    stream.end();
  }
}
