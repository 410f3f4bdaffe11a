/**
 * HTML built by tagged templates: every interpolated value is escaped unless it is already `Html`.
 * Transcripts are hostile input (a policy can write `<script>`), so nothing reaches a page raw.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type HtmlPart = Html | string | number | boolean | null | undefined | readonly HtmlPart[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

function render(part: HtmlPart): string {
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join('');
  if (part === null || part === undefined || part === false) return '';
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...values: HtmlPart[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => (out += render(value) + strings[i + 1]!));
  return new Html(out);
}

/** A whole viewer page: its styles and script come from /viewer/assets (the CSP allows no inline code). */
export function page(title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} · agent-rollout viewer</title>
<link rel="icon" href="/viewer/assets/icon.svg"><link rel="stylesheet" href="/viewer/assets/viewer.css"><script src="/viewer/assets/viewer.js" defer></script></head>
<body><nav><a href="/viewer">batches</a></nav><main>${body}</main></body></html>`;
}
