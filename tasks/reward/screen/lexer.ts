/**
 * Two views of a source line for the screen's rules, cheap and line by line: `code` without
 * comments and with string contents blanked (a rule about code must not fire on a docstring or
 * an error message), `text` without comments but with strings whole (a rule about a module name
 * or a report path must see `require('assert')` and `"$REWARD_REPORT"`). Not a parser: regular
 * expression literals and nested template expressions are read as plain code or string.
 */

export type Language = 'python' | 'js-ts' | 'other';

export interface LineViews {
  code: string;
  text: string;
}

interface Syntax {
  lineComment: string;
  block?: { open: string; close: string };
  /** String delimiters, longest first; those in `multiLine` may span lines. */
  quotes: string[];
  multiLine: Set<string>;
}

const SYNTAX: Record<Exclude<Language, 'other'>, Syntax> = {
  python: {
    lineComment: '#',
    quotes: ['"""', "'''", '"', "'"],
    multiLine: new Set(['"""', "'''"]),
  },
  'js-ts': {
    lineComment: '//',
    block: { open: '/*', close: '*/' },
    quotes: ['`', '"', "'"],
    multiLine: new Set(['`']),
  },
};

const JS_EXT = /\.(?:js|mjs|cjs|ts|mts|cts|jsx|tsx)$/;

export function languageOf(path: string): Language {
  if (/\.pyi?$/.test(path)) return 'python';
  return JS_EXT.test(path) ? 'js-ts' : 'other';
}

/**
 * Splits consecutive lines of one file into views, carrying block comments and multi-line
 * strings from line to line. Start a new lexer where the file's text is not contiguous (a hunk).
 */
export class LineLexer {
  /** The closing delimiter of the comment or string the next line starts in. */
  private open: { close: string; comment: boolean } | undefined;

  constructor(private readonly language: Language) {}

  next(line: string): LineViews {
    if (this.language === 'other') return { code: line, text: line };
    const syntax = SYNTAX[this.language];
    let code = '';
    let text = '';
    let i = 0;
    while (i < line.length) {
      if (this.open) {
        const { close, comment } = this.open;
        const end = comment ? line.indexOf(close, i) : closingQuote(line, i, close);
        const stop = end < 0 ? line.length : end;
        if (!comment) text += line.slice(i, stop);
        if (end < 0) break;
        if (!comment) {
          code += close;
          text += close;
        } else {
          code += ' ';
          text += ' ';
        }
        i = end + close.length;
        this.open = undefined;
        continue;
      }
      if (line.startsWith(syntax.lineComment, i)) break;
      if (syntax.block && line.startsWith(syntax.block.open, i)) {
        this.open = { close: syntax.block.close, comment: true };
        i += syntax.block.open.length;
        continue;
      }
      const quote = syntax.quotes.find((q) => line.startsWith(q, i));
      if (quote) {
        code += quote;
        text += quote;
        this.open = { close: quote, comment: false };
        i += quote.length;
        continue;
      }
      code += line[i];
      text += line[i];
      i++;
    }
    // A single-line string left open ends with its line (an unterminated or continued literal).
    if (this.open && !this.open.comment && !syntax.multiLine.has(this.open.close))
      this.open = undefined;
    return { code, text };
  }
}

/** Index of the quote closing a string at or after `from`, skipping backslash escapes; -1 if none. */
function closingQuote(line: string, from: number, quote: string): number {
  for (let i = from; i < line.length; i++) {
    if (line[i] === '\\') i++;
    else if (line.startsWith(quote, i)) return i;
  }
  return -1;
}
