"""pytest plugin (``-p agent_rollout_pytest``): streams each test's result as it ends
(agent_rollout_stream.py), the worst of its setup, call and teardown, under the id
``parsePytestJUnit`` reads from the ``--junitxml`` report (tasks/reward/junit.ts). Collection
errors and skipped modules are streamed under the ids the JUnit report gives them. Loaded with
``-p``, it is imported before any conftest.py of the code under test.
"""

import re

import pytest
from _pytest.junitxml import mangle_test_address

import agent_rollout_stream as stream

_RANK = {"passed": 0, "skipped": 1, "failed": 2}
_worst = {}
_prefix = []


def _report_id(report):
    """What parsePytestJUnit makes of the JUnit testcase pytest writes for this report."""
    names = mangle_test_address(report.nodeid)
    classname = ".".join(_prefix + names[:-1])
    name = names[-1]
    file = report.location[0] or ""
    dotted = re.sub(r"\.py$", "", file).replace("/", ".")
    if file and classname == dotted:
        return f"{file}::{name}"
    if file and classname.startswith(dotted + "."):
        return "::".join([file, *classname[len(dotted) + 1 :].split("."), name])
    return name if classname == "" else f"{classname}::{name}"


def pytest_configure(config):
    prefix = config.getoption("junitprefix", None)
    if prefix:
        _prefix.append(prefix)


def pytest_runtest_logreport(report):
    status = report.outcome
    if _RANK[status] > _RANK[_worst.get(report.nodeid, "passed")]:
        _worst[report.nodeid] = status
    if report.when == "teardown":
        stream.result(_report_id(report), _worst.pop(report.nodeid, "passed"))


def pytest_collectreport(report):
    if not report.passed:
        stream.result(_report_id(report), "failed" if report.failed else "skipped")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish():
    stream.end()
