/**
 * The static screen of the agent's diff (rules.ts): every added line of every file the reward
 * would apply (test files are left to the protected-path rule, diff.ts, which drops them) is
 * matched against the rules of its language, with line numbers in the new file. A finding makes
 * the episode `tampered` before any test runs. Pure: no I/O.
 *
 * A tripwire beside the canaries, not the main defence: code can always reach the same places in
 * ways no pattern names (`getattr(__import__('unit' + 'test'), …)`), so the reward's other
 * defences never rely on it.
 */
import { isTestPath, splitDiff } from '../diff.js';
import { LineLexer, languageOf } from './lexer.js';
import { SCREEN_RULES, type ScreenRule } from './rules.js';

export interface ScreenFinding {
  rule: string;
  /** The file's path in the new tree. */
  path: string;
  /** 1-based line number in the new file. */
  line: number;
  /** The added line, trimmed and clipped to TEXT_CHARS. */
  text: string;
}

/** The most findings a result carries; the rest are counted in the evidence. */
export const MAX_FINDINGS = 20;
const TEXT_CHARS = 120;
const HUNK_HEADER = /^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function clip(line: string): string {
  const text = line.trim();
  return text.length > TEXT_CHARS ? `${text.slice(0, TEXT_CHARS - 1)}…` : text;
}

/** One pattern for all of `rules`' patterns on `view`: most lines match none, and one test is cheaper. */
function unionOf(rules: readonly ScreenRule[], view: ScreenRule['view']): RegExp {
  const sources = rules
    .filter((r) => r.view === view)
    .flatMap((r) => r.patterns.map((p) => p.source));
  return sources.length === 0 ? /(?!)/ : new RegExp(sources.map((s) => `(?:${s})`).join('|'));
}

/** Every finding of the rules in `active` over the added lines of the diff's non-test files. */
export function screenDiff(diff: string, active: ReadonlySet<string>): ScreenFinding[] {
  const findings: ScreenFinding[] = [];
  if (active.size === 0) return findings;
  for (const section of splitDiff(diff)) {
    // With renames off (workspace-diff.ts) a section's paths are one file's; the new one is last.
    const path = section.paths[section.paths.length - 1];
    if (path === undefined || section.paths.some(isTestPath)) continue;
    const language = languageOf(path);
    const rules = SCREEN_RULES.filter(
      (r) =>
        active.has(r.id) &&
        (r.language === 'any' || r.language === language) &&
        !r.exempt?.test(path),
    );
    if (rules.length === 0) continue;
    const anyCode = unionOf(rules, 'code');
    const anyText = unionOf(rules, 'text');
    let oldLeft = 0;
    let newLeft = 0;
    let lineNo = 0;
    let lexer = new LineLexer(language);
    for (const raw of section.text.split('\n')) {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (oldLeft <= 0 && newLeft <= 0) {
        const hunk = HUNK_HEADER.exec(line);
        if (hunk) {
          oldLeft = hunk[1] === undefined ? 1 : Number(hunk[1]);
          lineNo = Number(hunk[2]);
          newLeft = hunk[3] === undefined ? 1 : Number(hunk[3]);
          // A hunk starts mid-file: whatever comment or string was open before it is unknown.
          lexer = new LineLexer(language);
        }
        continue;
      }
      const tag = line[0];
      if (tag === '-') {
        oldLeft--;
        continue;
      }
      if (tag !== '+' && tag !== ' ' && line !== '') continue; // "\ No newline at end of file"
      const body = line.slice(1);
      const views = lexer.next(body);
      if (tag === '+' && (anyCode.test(views.code) || anyText.test(views.text))) {
        for (const rule of rules)
          if (rule.patterns.some((re) => re.test(views[rule.view])))
            findings.push({ rule: rule.id, path, line: lineNo, text: clip(body) });
      }
      if (tag !== '+') oldLeft--;
      newLeft--;
      lineNo++;
    }
  }
  return findings;
}

/** The findings for people: `screen: <path>:<line> [<rule>] <text>`, one a line, capped. */
export function screenEvidence(findings: readonly ScreenFinding[]): string {
  const shown = findings
    .slice(0, MAX_FINDINGS)
    .map((f) => `screen: ${f.path}:${f.line} [${f.rule}] ${f.text}`);
  const more = findings.length - MAX_FINDINGS;
  return [...shown, ...(more > 0 ? [`screen: … and ${more} more`] : [])].join('\n');
}
