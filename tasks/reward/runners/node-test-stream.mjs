/**
 * `node --test` reporter: streams each test's result as it ends (stream-fd.cjs), with the id
 * parseJUnit gives it. The tree is built exactly as Node's own junit reporter builds it (a test
 * with subtests is a <testsuite>, not an id), so the two agree. Reporters run in the
 * orchestrating process; the test files run in child processes, which do not inherit fd 3.
 */
import stream from './stream-fd.cjs';

export default async function* streamReporter(source) {
  let current = null;
  const start = (data) => {
    current = { name: data.name, nesting: data.nesting, parent: current, children: 0 };
    if (current.parent) current.parent.children++;
  };
  const idOf = (node) => {
    const names = [];
    for (let n = node; n; n = n.parent) names.unshift(n.name);
    return names.join(' > ');
  };
  for await (const event of source) {
    const { data } = event;
    if (event.type === 'test:start') start(data);
    else if (event.type === 'test:pass' || event.type === 'test:fail') {
      if (!current) start({ name: 'root', nesting: 0 });
      if (current.name !== data.name || current.nesting !== data.nesting) start(data);
      const test = current;
      if (current.nesting === data.nesting) current = current.parent;
      if (test.children === 0) {
        const status =
          event.type === 'test:fail' ? 'failed' : data.skip || data.todo ? 'skipped' : 'passed';
        stream.result(idOf(test), status);
      }
    }
  }
  stream.end();
  yield '';
}
