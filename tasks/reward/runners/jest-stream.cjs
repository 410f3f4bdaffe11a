/**
 * jest reporter: streams each test case's result as it ends (stream-fd.cjs), with the id
 * parseJestJson gives it (ancestor titles and the title, joined by " > "). Reporters run in
 * jest's main process.
 */
'use strict';
// The runners load reporters and preloads as CommonJS.
/* eslint-disable @typescript-eslint/no-require-imports */
const stream = require('./stream-fd.cjs');

const STATUSES = {
  passed: 'passed',
  failed: 'failed',
  skipped: 'skipped',
  pending: 'skipped',
  todo: 'skipped',
  disabled: 'skipped',
};

class StreamReporter {
  onTestCaseResult(_test, result) {
    stream.result(
      [...result.ancestorTitles, result.title].join(' > '),
      STATUSES[result.status] ?? 'failed',
    );
  }

  onRunComplete() {
    stream.end();
  }
}

module.exports = StreamReporter;
