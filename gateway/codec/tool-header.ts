import type { Template } from '@huggingface/jinja';

type Statement = Template['parsed']['body'][number];
/** An AST node read generically: the library's node classes keep their children in typed fields. */
type Node = { type: string } & Record<string, unknown>;

/**
 * Static proof that a chat template's tool header can be left out of a render without changing the
 * rest (gateway spec, "Incremental encoding, precisely"): returns how many leading statements form
 * the header, or undefined when the proof fails. It holds when
 * - the header is the first statement that is not a comment, and no later statement mentions `tools`;
 * - the header only writes output: no `set`, macro, call or call block, so nothing it does is seen later;
 * - its output reads nothing but `tools`, `messages[0]`, its own loop variables and constants,
 *   so it is the same for every render of the same tools and first message, with or without the
 *   generation prompt.
 * Two renders whose conversations start with the same message then differ from their header-less
 * renders only by one shared prefix, which cutting a base render off removes.
 */
export function separableToolHeader(body: readonly Statement[]): number | undefined {
  const header = body.findIndex((s) => s.type !== 'Comment');
  if (header < 0 || !mentionsTools(body[header] as Node)) return undefined;
  if (body.slice(header + 1).some((s) => mentionsTools(s as Node))) return undefined;
  return readsOnlyToolsAndFirstMessage(body[header] as Node, new Set()) ? header + 1 : undefined;
}

const CONSTANTS = new Set(['true', 'false', 'none', 'True', 'False', 'None']);

/** Any identifier named `tools`, in any position: a variable, a property, a filter or test name. */
function mentionsTools(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(mentionsTools);
  if (node instanceof Map) return [...node.entries()].some(([k, v]) => mentionsTools(k) || mentionsTools(v));
  if (!node || typeof node !== 'object') return false;
  const n = node as Node;
  if (n.type === 'Identifier' && n.value === 'tools') return true;
  return Object.values(n).some(mentionsTools);
}

/**
 * Whether a header statement or expression is pure output reading only what `separableToolHeader`
 * allows. `bound` are the loop variables of the loops around it. Node types not listed fail the proof.
 */
function readsOnlyToolsAndFirstMessage(node: Node, bound: ReadonlySet<string>): boolean {
  const ok = (child: unknown): boolean => readsOnlyToolsAndFirstMessage(child as Node, bound);
  const all = (children: unknown): boolean => (children as Node[]).every(ok);
  switch (node.type) {
    case 'Comment':
    case 'StringLiteral':
    case 'IntegerLiteral':
    case 'FloatLiteral':
    case 'Break':
    case 'Continue':
      return true;
    case 'Identifier': {
      const name = node.value as string;
      return name === 'tools' || bound.has(name) || CONSTANTS.has(name);
    }
    case 'If':
      return ok(node.test) && all(node.body) && all(node.alternate);
    case 'For': {
      const inner = new Set(bound);
      inner.add('loop');
      for (const name of loopNames(node.loopvar as Node)) inner.add(name);
      return (
        ok(node.iterable) &&
        (node.body as Node[]).every((s) => readsOnlyToolsAndFirstMessage(s, inner)) &&
        all(node.defaultBlock)
      );
    }
    case 'MemberExpression': {
      const object = node.object as Node;
      const property = node.property as Node;
      if (node.computed && object.type === 'Identifier' && object.value === 'messages') {
        return property.type === 'IntegerLiteral' && property.value === 0;
      }
      return ok(object) && (!node.computed || ok(property));
    }
    case 'ArrayLiteral':
    case 'TupleLiteral':
      return all(node.value);
    case 'ObjectLiteral':
      return [...(node.value as Map<Node, Node>).entries()].every(([k, v]) => ok(k) && ok(v));
    case 'BinaryExpression':
      return ok(node.left) && ok(node.right);
    case 'UnaryExpression':
      return ok(node.argument);
    case 'TestExpression':
      return ok(node.operand);
    case 'Ternary':
      return ok(node.condition) && ok(node.trueExpr) && ok(node.falseExpr);
    case 'SelectExpression':
      return ok(node.lhs) && ok(node.test);
    case 'SliceExpression':
      return [node.start, node.stop, node.step].every((e) => e === undefined || ok(e));
    case 'FilterExpression': {
      // Filters are pure functions of their operand and arguments; the filter's name is no variable.
      const filter = node.filter as Node;
      if (filter.type === 'Identifier') return ok(node.operand);
      if (filter.type !== 'CallExpression' || (filter.callee as Node).type !== 'Identifier') return false;
      return ok(node.operand) && (filter.args as Node[]).every((a) => (a.type === 'KeywordArgumentExpression' ? ok(a.value) : ok(a)));
    }
    default:
      return false;
  }
}

function loopNames(loopvar: Node): string[] {
  if (loopvar.type === 'Identifier') return [loopvar.value as string];
  return (loopvar.value as Node[]).flatMap(loopNames);
}
