/**
 * mocha reporter: mocha's own JSON reporter (its report, with `--reporter-option output=`), plus
 * each result streamed as it happens (stream-fd.cjs) under the test's full title, as
 * parseMochaJson reads the report. mocha takes one reporter, so this one wraps the JSON one.
 * Hook failures are streamed under the hook's title, as the JSON report lists them.
 */
'use strict';
// The runners load reporters and preloads as CommonJS.
/* eslint-disable @typescript-eslint/no-require-imports */
const Mocha = require('mocha');
const stream = require('./stream-fd.cjs');

const { EVENT_RUN_END, EVENT_TEST_FAIL, EVENT_TEST_PASS, EVENT_TEST_PENDING } =
  Mocha.Runner.constants;

class StreamReporter extends Mocha.reporters.JSON {
  constructor(runner, options) {
    super(runner, options);
    runner.on(EVENT_TEST_PASS, (test) => stream.result(test.fullTitle(), 'passed'));
    runner.on(EVENT_TEST_FAIL, (test) => stream.result(test.fullTitle(), 'failed'));
    runner.on(EVENT_TEST_PENDING, (test) => stream.result(test.fullTitle(), 'skipped'));
    // After the JSON reporter's own end handler, registered first, has written the report.
    runner.once(EVENT_RUN_END, () => stream.end());
  }
}

module.exports = StreamReporter;
