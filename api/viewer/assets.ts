/**
 * The viewer's only script and style sheet, served from /viewer/assets so the Content-Security-
 * Policy can forbid inline code. The script loads fragments on demand: a turn's tokens when it is
 * opened, the next page of tokens on "more", the phase plot after the batch page shows.
 */
export const VIEWER_JS = `'use strict';
async function load(url, into) {
  const answer = await fetch(url, { credentials: 'same-origin' });
  const text = await answer.text();
  if (answer.ok) into.insertAdjacentHTML('beforeend', text);
  else into.insertAdjacentText('beforeend', 'could not load (' + answer.status + ')');
}
document.addEventListener('toggle', (event) => {
  const details = event.target;
  if (!(details instanceof HTMLDetailsElement) || !details.open || details.dataset.loaded || !details.dataset.src) return;
  details.dataset.loaded = 'loading';
  load(details.dataset.src, details.querySelector('.slot')).then(() => { details.dataset.loaded = 'yes'; });
}, true);
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-more]') : null;
  if (!button || button.disabled) return;
  button.disabled = true;
  const slot = button.parentElement;
  slot.dataset.loaded = 'loading';
  load(button.dataset.more, slot).then(() => { button.remove(); slot.dataset.loaded = 'yes'; });
});
document.addEventListener('DOMContentLoaded', () => {
  for (const element of document.querySelectorAll('.lazy[data-src]')) {
    element.dataset.loaded = 'loading';
    const into = document.createElement('div');
    load(element.dataset.src, into).then(() => { element.replaceChildren(...into.childNodes); element.dataset.loaded = 'yes'; });
  }
});
`;

export const VIEWER_CSS = `body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d1d1f; }
nav { background: #24292f; padding: 6px 16px; } nav a { color: #fff; }
main { padding: 8px 16px 40px; max-width: 1200px; }
table { border-collapse: collapse; } td, th { padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: left; }
.muted { color: #777; } .error { color: #b00020; font-weight: bold; }
.plot { background: #fafafa; border: 1px solid #e5e5e5; display: block; margin: 4px 0 8px; }
.plot .pt { fill: #2f6fde; fill-opacity: .7; } .plot .bar { fill: #5b8def; }
.plot text { font-size: 11px; fill: #444; } .plot .axis-line { stroke: #aaa; }
.evidence { background: #f6f8fa; border: 1px solid #e1e4e8; padding: 4px 12px; margin: 8px 0; }
.test-passed td:last-child { color: #1a7f37; } .test-failed td:last-child, .test-missing td:last-child { color: #b00020; }
.chain { border-top: 2px solid #24292f; margin-top: 16px; }
details.turn { border: 1px solid #ddd; margin: 4px 0; padding: 2px 8px; } details.turn > summary { cursor: pointer; }
.msg { border-left: 3px solid #aaa; margin: 4px 0; padding-left: 8px; } .msg .role { font-weight: bold; font-size: 12px; }
.role-assistant { border-color: #2f6fde; } .role-tool { border-color: #9a6700; } .role-user { border-color: #1a7f37; }
pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; }
.tokens { font: 12px/1.6 ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; background: #fff; border: 1px solid #eee; padding: 4px; }
.tok { border-right: 1px dotted #ddd; } .tok.sampled { background: #dbeafe; }
.tok.drift { outline: 2px solid #d73a49; }
.marker { display: inline-block; font: bold 11px system-ui, sans-serif; padding: 0 4px; border-radius: 3px; }
.drift-marker { background: #d73a49; color: #fff; } .rollback { background: #fff5b1; color: #5c4400; display: block; margin: 4px 0; }
.clip { color: #777; font-style: italic; }
`;

/** Named by every page, so browsers do not ask the API for /favicon.ico (a 401 there). */
export const VIEWER_ICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2f6fde"/></svg>';
