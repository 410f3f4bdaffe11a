/**
 * Parse and serialize INI files.
 *
 * parse(text) returns { [section]: { [key]: value } }; keys before the first section header live
 * under the '' section. Values are always strings.
 */

const SECTION = /^\[([^\]]+)\]$/;

function isQuoted(value) {
  return value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0];
}

/** Drop a trailing ` ; comment` or ` # comment`, unless the value is quoted. */
function stripInlineComment(value) {
  if (isQuoted(value)) return value;
  const match = /\s[;#]/.exec(value);
  return match ? value.slice(0, match.index).trimEnd() : value;
}

function unquote(value) {
  return isQuoted(value) ? value.slice(1, -1) : value;
}

export function parse(text) {
  const result = { '': {} };
  let current = result[''];
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith(';') || line.startsWith('#')) return;

    const header = SECTION.exec(line);
    if (header) {
      const name = header[1].trim();
      result[name] ??= {};
      current = result[name];
      return;
    }

    const parts = line.split('=');
    if (parts.length < 2 || parts[0].trim() === '') {
      throw new SyntaxError(`line ${index + 1}: expected "key = value", got "${line}"`);
    }
    const key = parts[0].trim();
    const value = parts[1].trim();
    current[key] = unquote(stripInlineComment(value));
  });
  return result;
}

function formatValue(value) {
  const text = String(value);
  const needsQuotes = text !== text.trim() || /[;#"']/.test(text);
  return needsQuotes ? `"${text}"` : text;
}

export function stringify(data) {
  const out = [];
  const writeSection = (entries) => {
    for (const [key, value] of Object.entries(entries)) out.push(`${key} = ${formatValue(value)}`);
  };
  writeSection(data[''] ?? {});
  for (const [name, entries] of Object.entries(data)) {
    if (name === '') continue;
    if (out.length > 0) out.push('');
    out.push(`[${name}]`);
    writeSection(entries);
  }
  return out.join('\n') + '\n';
}
