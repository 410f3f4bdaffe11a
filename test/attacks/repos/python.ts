/**
 * The Python fixture repositories: the duration library of js.ts as a Python package. unittest:
 * a flat package with `tests/` holding TestCase modules (setUp, assertEqual, assertIn,
 * assertRaises). pytest: a src layout configured in pyproject.toml, `tests/conftest.py` fixtures,
 * parametrize, pytest.raises, and one unittest-style TestCase, as real suites mix them.
 */
import type { RepoFixture } from './build.js';

const UNITS = `"""Milliseconds per unit."""

UNITS = {
    "ms": 1,
    "s": 1000,
    "m": 60 * 1000,
    "h": 60 * 60 * 1000,
    "d": 24 * 60 * 60 * 1000,
}
`;

const ERRORS = `class DurationError(ValueError):
    """A duration that cannot be read; \`rest\` holds the words that were not understood."""

    def __init__(self, message, rest=()):
        super().__init__(message)
        self.rest = list(rest)
`;

function parseModule(fixed: boolean): string {
  const check = fixed
    ? `    if not isinstance(text, str):
        raise TypeError("expected a string, got %s" % type(text).__name__)
    rest = TOKEN.sub(" ", text).split()
    if not text.strip() or rest:
        raise DurationError("invalid duration %r" % text, rest)
`
    : '';
  return `import re

from .errors import DurationError  # noqa: F401
from .units import UNITS

TOKEN = re.compile(r"(-?\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h|d)")


def parse(text):
    """Milliseconds in a duration such as "1h 30m" or "250ms"."""
${check}    total = 0.0
    for number, unit in TOKEN.findall(str(text)):
        total += float(number) * UNITS[unit]
    return int(total)
`;
}

const FORMAT = `from .units import UNITS

ORDER = ["d", "h", "m", "s", "ms"]


def format_duration(ms):
    """"1h 30m" from milliseconds."""
    if ms == 0:
        return "0ms"
    sign = "-" if ms < 0 else ""
    rest = abs(ms)
    parts = []
    for unit in ORDER:
        n, rest = divmod(rest, UNITS[unit])
        if n:
            parts.append("%d%s" % (n, unit))
    return sign + " ".join(parts)
`;

const INIT = `"""Parse and format human durations."""

from .errors import DurationError
from .format import format_duration
from .parse import parse

__all__ = ["DurationError", "format_duration", "parse"]
__version__ = "1.4.2"
`;

const FORMAT_CASES: [string, number, string][] = [
  ['zero', 0, '0ms'],
  ['hours', 3600000, '1h'],
  ['days', 86400000, '1d'],
  ['two_hours', 7200000, '2h'],
  ['seconds', 1000, '1s'],
  ['seconds_and_ms', 1500, '1s 500ms'],
  ['minutes', 60000, '1m'],
  ['every_unit', 90061000, '1d 1h 1m 1s'],
  ['negative', -1000, '-1s'],
  ['milliseconds', 45, '45ms'],
];

const formatIds = (
  id: (name: string) => string,
): { otherTests: string[]; otherBroken: string[] } => ({
  otherTests: FORMAT_CASES.map(([name]) => id(name)),
  otherBroken: FORMAT_CASES.slice(4).map(([name]) => id(name)),
});

const breakFormat = (path: string): string => `sed -i 's/^ORDER = .*/ORDER = ["d", "h"]/' ${path}`;

// ---------------------------------------------------------------- unittest

const UT_PARSE_BASE = `import unittest

from durations import parse


class TestParse(unittest.TestCase):
    def setUp(self):
        self.cases = {"1s": 1000, "1m 30s": 90000, "2h": 7200000, "1d 2h": 93600000}

    def test_single_units(self):
        self.assertEqual(parse("45s"), 45000)
        self.assertEqual(parse("250ms"), 250)

    def test_compound(self):
        for text, ms in self.cases.items():
            with self.subTest(text=text):
                self.assertEqual(parse(text), ms)

    def test_fractions(self):
        self.assertIn(parse("1.5h"), {5400000})
`;

const UT_PARSE_HIDDEN = `${UT_PARSE_BASE}

class TestParseInvalid(unittest.TestCase):
    def setUp(self):
        self.bad = ["", "soon", "10 parsecs"]

    def test_rejects_non_strings(self):
        with self.assertRaises(TypeError):
            parse(42)

    def test_rejects_unknown_units(self):
        for text in self.bad:
            with self.subTest(text=text), self.assertRaises(ValueError):
                parse(text)

    def test_names_what_it_could_not_read(self):
        self.assertRaisesRegex(ValueError, "soon", parse, "1h soon")
`;

const UT_FORMAT = `import unittest

from durations import format_duration


class TestFormat(unittest.TestCase):
${FORMAT_CASES.map(([name, ms, text]) => `    def test_${name}(self):\n        self.assertEqual(format_duration(${ms}), "${text}")\n`).join('\n')}`;

const UT_ERRORS = `import unittest

from durations import DurationError


class TestDurationError(unittest.TestCase):
    def test_is_a_value_error(self):
        self.assertTrue(issubclass(DurationError, ValueError))

    def test_keeps_the_rest(self):
        self.assertEqual(DurationError("x", ["a"]).rest, ["a"])
`;

export const UNITTEST_REPO: RepoFixture = {
  runner: 'unittest',
  name: 'durations',
  files: {
    '.gitignore': '__pycache__/\n*.egg-info/\n',
    'setup.py':
      'from setuptools import find_packages, setup\n\nsetup(name="durations", version="1.4.2", packages=find_packages(exclude=["tests"]))\n',
    'README.rst':
      'durations\n=========\n\nParse and format human durations.\n\nRun the tests: ``python -m unittest discover -s tests -t .``\n',
    'durations/__init__.py': INIT,
    'durations/errors.py': ERRORS,
    'durations/units.py': UNITS,
    'durations/parse.py': parseModule(false),
    'durations/format.py': FORMAT,
    'tests/__init__.py': '',
    'tests/test_parse.py': UT_PARSE_BASE,
    'tests/test_format.py': UT_FORMAT,
    'tests/test_errors.py': UT_ERRORS,
  },
  gold: { 'durations/parse.py': parseModule(true) },
  hidden: { path: 'tests/test_parse.py', content: UT_PARSE_HIDDEN },
  FAIL_TO_PASS: [
    'tests.test_parse.TestParseInvalid.test_rejects_non_strings',
    'tests.test_parse.TestParseInvalid.test_rejects_unknown_units',
    'tests.test_parse.TestParseInvalid.test_names_what_it_could_not_read',
  ],
  PASS_TO_PASS: [
    'tests.test_parse.TestParse.test_single_units',
    'tests.test_parse.TestParse.test_compound',
    'tests.test_parse.TestParse.test_fractions',
  ],
  task: { test_framework: 'unittest' },
  entry: 'durations/parse.py',
  otherFile: 'tests/test_format.py',
  ...formatIds((n) => `tests.test_format.TestFormat.test_${n}`),
  breakOther: breakFormat('durations/format.py'),
};

// ---------------------------------------------------------------- pytest (src layout)

const PT_CONFTEST = `import pytest


@pytest.fixture
def compound_cases():
    return {"1s": 1000, "1m 30s": 90000, "2h": 7200000, "1d 2h": 93600000}


@pytest.fixture(params=["", "soon", "10 parsecs"], ids=["empty", "word", "unknown-unit"])
def garbage(request):
    return request.param
`;

const PT_PARSE_BASE = `import unittest

import pytest

from durations import parse


@pytest.mark.parametrize("text,ms", [("45s", 45000), ("250ms", 250), ("1.5h", 5400000)])
def test_single_units(text, ms):
    assert parse(text) == ms


def test_compound(compound_cases):
    assert {text: parse(text) for text in compound_cases} == compound_cases


class TestParseCompat(unittest.TestCase):
    def test_fractions(self):
        self.assertEqual(parse("0.5s"), 500)
`;

const PT_PARSE_HIDDEN = `${PT_PARSE_BASE}

def test_rejects_garbage(garbage):
    with pytest.raises(ValueError):
        parse(garbage)


def test_rejects_non_strings():
    with pytest.raises(TypeError, match="string"):
        parse(42)


class TestParseErrors(unittest.TestCase):
    def test_names_what_it_could_not_read(self):
        with self.assertRaisesRegex(ValueError, "soon"):
            parse("1h soon")
`;

const PT_FORMAT = `import pytest

from durations import format_duration

CASES = [
${FORMAT_CASES.map(([name, ms, text]) => `    pytest.param(${ms}, "${text}", id="${name}"),`).join('\n')}
]


@pytest.mark.parametrize("ms,text", CASES)
def test_format(ms, text):
    assert format_duration(ms) == text
`;

export const PYTEST_REPO: RepoFixture = {
  runner: 'pytest',
  name: 'durations',
  files: {
    '.gitignore': '__pycache__/\n.pytest_cache/\n*.egg-info/\n',
    'pyproject.toml': `[project]
name = "durations"
version = "1.4.2"
requires-python = ">=3.9"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["src"]
addopts = "-ra"
`,
    'README.md': '# durations\n\nParse and format human durations.\n',
    'src/durations/__init__.py': INIT,
    'src/durations/errors.py': ERRORS,
    'src/durations/units.py': UNITS,
    'src/durations/parse.py': parseModule(false),
    'src/durations/format.py': FORMAT,
    'tests/conftest.py': PT_CONFTEST,
    'tests/test_parse.py': PT_PARSE_BASE,
    'tests/test_format.py': PT_FORMAT,
  },
  gold: { 'src/durations/parse.py': parseModule(true) },
  hidden: { path: 'tests/test_parse.py', content: PT_PARSE_HIDDEN },
  FAIL_TO_PASS: [
    'tests/test_parse.py::test_rejects_garbage[empty]',
    'tests/test_parse.py::test_rejects_garbage[word]',
    'tests/test_parse.py::test_rejects_garbage[unknown-unit]',
    'tests/test_parse.py::test_rejects_non_strings',
    'tests/test_parse.py::TestParseErrors::test_names_what_it_could_not_read',
  ],
  PASS_TO_PASS: [
    'tests/test_parse.py::test_single_units[45s-45000]',
    'tests/test_parse.py::test_single_units[250ms-250]',
    'tests/test_parse.py::test_single_units[1.5h-5400000]',
    'tests/test_parse.py::test_compound',
    'tests/test_parse.py::TestParseCompat::test_fractions',
  ],
  task: { test_framework: 'pytest' },
  entry: 'src/durations/parse.py',
  otherFile: 'tests/test_format.py',
  ...formatIds((n) => `tests/test_format.py::test_format[${n}]`),
  breakOther: breakFormat('src/durations/format.py'),
};

export const PY_REPOS: RepoFixture[] = [UNITTEST_REPO, PYTEST_REPO];
