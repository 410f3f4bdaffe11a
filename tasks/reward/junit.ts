/**
 * A small JUnit XML reader for the subset `node --test --test-reporter=junit` writes (checked
 * against Node 20): nested `<testsuite>` elements for `describe` blocks and for tests that have
 * subtests, `<testcase name=...>` leaves, and `<failure>`, `<error>` or `<skipped>` children.
 *
 * A test's id is its name prefixed by the names of its enclosing suites, joined by " > ":
 * `describe('math', () => describe('nested', () => it('adds')))` → `math > nested > adds`.
 *
 * Node 20 escapes attributes twice over for `"` (it writes `&amp;quot;`), so after decoding,
 * a literal `&quot;` is read back as `"`; newlines in names are dropped by Node itself.
 */

export type ReportedStatus = 'passed' | 'failed' | 'skipped';

/** The JUnit document is not well-formed enough to read. */
export class JUnitParseError extends Error {
  override name = 'JUnitParseError';
}

interface Element {
  name: string;
  attrs: Record<string, string>;
  children: Element[];
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, ref: string) => {
    if (ref.startsWith('#x')) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref.startsWith('#')) return String.fromCodePoint(parseInt(ref.slice(1), 10));
    return ENTITIES[ref] ?? whole;
  });
}

const ATTR = /([^\s=/>]+)\s*=\s*("([^"]*)"|'([^']*)')/g;

/** Parses elements and attributes; text, comments, CDATA, PIs and doctypes are skipped. */
function parseXml(xml: string): Element {
  const root: Element = { name: '#document', attrs: {}, children: [] };
  const stack: Element[] = [root];
  let i = 0;
  const skipPast = (marker: string, from: number): number => {
    const end = xml.indexOf(marker, from);
    if (end < 0) throw new JUnitParseError(`unterminated construct at offset ${from}`);
    return end + marker.length;
  };
  while (i < xml.length) {
    const lt = xml.indexOf('<', i);
    if (lt < 0) break;
    if (xml.startsWith('<!--', lt)) i = skipPast('-->', lt + 4);
    else if (xml.startsWith('<![CDATA[', lt)) i = skipPast(']]>', lt + 9);
    else if (xml.startsWith('<?', lt)) i = skipPast('?>', lt + 2);
    else if (xml.startsWith('<!', lt)) i = skipPast('>', lt + 2);
    else if (xml.startsWith('</', lt)) {
      const end = skipPast('>', lt + 2);
      const name = xml.slice(lt + 2, end - 1).trim();
      const open = stack.pop();
      if (!open || open === root || open.name !== name)
        throw new JUnitParseError(`unexpected </${name}>`);
      i = end;
    } else {
      // Attribute values may contain '>' (Node does not escape it), so find the tag's end by
      // walking over quoted values.
      let j = lt + 1;
      let quote = '';
      while (j < xml.length && (quote || xml[j] !== '>')) {
        const c = xml[j]!;
        if (quote) {
          if (c === quote) quote = '';
        } else if (c === '"' || c === "'") quote = c;
        j++;
      }
      if (j >= xml.length) throw new JUnitParseError(`unterminated tag at offset ${lt}`);
      const selfClosing = xml[j - 1] === '/';
      const inner = xml.slice(lt + 1, selfClosing ? j - 1 : j);
      const name = /^[^\s/>]+/.exec(inner)?.[0];
      if (!name) throw new JUnitParseError(`bad tag at offset ${lt}`);
      const attrs: Record<string, string> = {};
      for (const m of inner.slice(name.length).matchAll(ATTR)) {
        attrs[m[1]!] = decodeEntities(m[3] ?? m[4] ?? '');
      }
      const el: Element = { name, attrs, children: [] };
      stack[stack.length - 1]!.children.push(el);
      if (!selfClosing) stack.push(el);
      i = j + 1;
    }
  }
  if (stack.length !== 1) throw new JUnitParseError(`unclosed <${stack[stack.length - 1]!.name}>`);
  return root;
}

/** Node 20's doubled escaping of `"`: see the file comment. */
function nodeName(raw: string): string {
  return raw.replace(/&quot;/g, '"');
}

function statusOf(testcase: Element): ReportedStatus {
  const kinds = new Set(testcase.children.map((c) => c.name));
  if (kinds.has('failure') || kinds.has('error')) return 'failed';
  if (kinds.has('skipped')) return 'skipped';
  return 'passed';
}

/**
 * Test id → status. A test reported more than once (same name in two files) keeps its worst
 * status, so one failing copy is never hidden by a passing one.
 */
export function parseJUnit(xml: string): Record<string, ReportedStatus> {
  const results: Record<string, ReportedStatus> = {};
  const rank: Record<ReportedStatus, number> = { passed: 0, skipped: 1, failed: 2 };
  const walk = (el: Element, suites: string[]): void => {
    for (const child of el.children) {
      if (child.name === 'testsuite') {
        walk(child, [...suites, nodeName(child.attrs.name ?? '')]);
      } else if (child.name === 'testsuites') {
        walk(child, suites);
      } else if (child.name === 'testcase') {
        const id = [...suites, nodeName(child.attrs.name ?? '')].join(' > ');
        const status = statusOf(child);
        const prev = results[id];
        if (prev === undefined || rank[status] > rank[prev]) results[id] = status;
      }
    }
  };
  const doc = parseXml(xml);
  if (!doc.children.some((c) => c.name === 'testsuites' || c.name === 'testsuite')) {
    throw new JUnitParseError('no <testsuites> or <testsuite> element');
  }
  walk(doc, []);
  return results;
}

/**
 * Test id → status from pytest's `--junitxml` report written with `-o junit_family=xunit1`, which
 * adds each test's `file`. Ids are pytest node ids, as SWE-bench names pytest tests:
 * `tests/test_x.py::TestClass::test_method[param]` or `tests/test_x.py::test_function`. pytest
 * derives `classname` from the node id (path with `/` → `.` and `.py` dropped, then the classes),
 * so the classes are what follows the file's dotted path. A test whose `classname` does not start
 * with its file's dotted path (a method inherited from another file) gets `<classname>::<name>`.
 * A collection error is a testcase named after the module with an `<error>`: it never matches a
 * test id, so the tests it hid are missing.
 */
export function parsePytestJUnit(xml: string): Record<string, ReportedStatus> {
  const results: Record<string, ReportedStatus> = {};
  const rank: Record<ReportedStatus, number> = { passed: 0, skipped: 1, failed: 2 };
  const walk = (el: Element): void => {
    for (const child of el.children) {
      if (child.name === 'testcase') {
        const id = pytestNodeId(
          child.attrs.file ?? '',
          child.attrs.classname ?? '',
          child.attrs.name ?? '',
        );
        const status = statusOf(child);
        const prev = results[id];
        if (prev === undefined || rank[status] > rank[prev]) results[id] = status;
      } else {
        walk(child);
      }
    }
  };
  const doc = parseXml(xml);
  if (!doc.children.some((c) => c.name === 'testsuites' || c.name === 'testsuite')) {
    throw new JUnitParseError('no <testsuites> or <testsuite> element');
  }
  walk(doc);
  return results;
}

function pytestNodeId(file: string, classname: string, name: string): string {
  const dotted = file.replace(/\.py$/, '').replaceAll('/', '.');
  if (file !== '' && classname === dotted) return `${file}::${name}`;
  if (file !== '' && classname.startsWith(`${dotted}.`)) {
    const classes = classname.slice(dotted.length + 1).split('.');
    return [file, ...classes, name].join('::');
  }
  return classname === '' ? name : `${classname}::${name}`;
}
