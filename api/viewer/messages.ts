import { z } from 'zod';
import { html, type Html } from './html.js';

/** Characters of one message shown; the tokens below it hold the rest. */
const SHOWN_CHARS = 20_000;

/** A stored canonical message, read loosely: anything else is shown as JSON. */
const StoredMessage = z.object({
  role: z.string(),
  content: z.unknown().optional(),
  reasoning_content: z.string().optional(),
  tool_calls: z.array(z.object({ name: z.unknown(), arguments: z.unknown() })).optional(),
  tool_call_id: z.string().optional(),
});

function clipped(text: string): Html {
  if (text.length <= SHOWN_CHARS) return html`${text}`;
  return html`${text.slice(0, SHOWN_CHARS)}<span class="clip">… ${text.length - SHOWN_CHARS} more characters (see the tokens)</span>`;
}

const asText = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value) ?? '');

/** One message as the chain recorded it: role, reasoning, content, tool calls. */
export function messageBlock(raw: unknown): Html {
  const parsed = StoredMessage.safeParse(raw);
  if (!parsed.success) return html`<div class="msg"><pre>${clipped(asText(raw))}</pre></div>`;
  const m = parsed.data;
  return html`<div class="msg role-${m.role.replace(/[^a-z]/g, '')}"><div class="role">${m.role}${m.tool_call_id ? ` (${m.tool_call_id})` : ''}</div>${
    m.reasoning_content ? html`<pre class="reasoning">${clipped(m.reasoning_content)}</pre>` : ''
  }${m.content !== undefined && m.content !== '' ? html`<pre class="content">${clipped(asText(m.content))}</pre>` : ''}${(m.tool_calls ?? []).map(
    (call) => html`<div class="tool-call" data-tool-call=""><span class="tool-name">${asText(call.name)}</span><pre>${clipped(JSON.stringify(call.arguments, null, 2) ?? '')}</pre></div>`,
  )}</div>`;
}

/** The messages a turn appended, then its reply, from the stored JSON. */
export function turnMessages(messagesJson: string, replyJson: string): Html {
  const parse = (text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
  const added = parse(messagesJson);
  return html`${(Array.isArray(added) ? added : [added]).map(messageBlock)}${messageBlock(parse(replyJson))}`;
}
