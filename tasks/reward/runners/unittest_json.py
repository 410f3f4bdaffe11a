"""Run a repository's unittest suite and write a JSON report (stdlib only).

Usage: python3 unittest_json.py REPORT_PATH

Discovers tests under ``tests/`` with the repository root (the working directory) as the top
level, i.e. ``python -m unittest discover -s tests -t .``, so ``tests/`` must be a package. Writes
``{"<test.id()>": "passed" | "failed" | "error" | "skipped"}``. Expected failures count as
passed and unexpected successes as failed, as SWE-bench does; a failing subtest fails its test.
Import errors and class or module fixture errors show up under unittest's own ids for them
(``unittest.loader._FailedTest.x``, ``setUpClass (tests.x.C)``), so the tests they hide are
simply absent from the report. Each status is also streamed as it is recorded
(agent_rollout_stream.py), and the end of the run after the report is written. Exit status: 0
when everything passed, 1 otherwise.
"""

import json
import os
import sys
import unittest

# Run with `python3 -P`, which leaves this script's directory off the path; the stream module
# beside it is imported before any test module.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_rollout_stream as stream  # noqa: E402

STREAM_STATUSES = {"passed": "passed", "failed": "failed", "error": "failed", "skipped": "skipped"}


class JsonResult(unittest.TextTestResult):
    """A text result that also records one status per test id."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.statuses = {}

    def _record(self, test, status):
        test_id = test.id()
        # A test with failing subtests was already marked; do not let addSuccess undo that.
        if self.statuses.get(test_id) in ("failed", "error"):
            return
        self.statuses[test_id] = status
        stream.result(test_id, STREAM_STATUSES[status])

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failed")

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "passed")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "failed")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._record(test, "failed" if failed else "error")


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: unittest_json.py REPORT_PATH\n")
        return 2
    report_path = argv[1]
    root = os.getcwd()
    suite = unittest.defaultTestLoader.discover(os.path.join(root, "tests"), top_level_dir=root)
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=2, resultclass=JsonResult)
    result = runner.run(suite)
    with open(report_path, "w", encoding="utf-8") as f:
        json.dump(result.statuses, f, indent=1, sort_keys=True)
    stream.end()
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
