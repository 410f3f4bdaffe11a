/**
 * CSV records with RFC 4180 quoting: a field containing the delimiter, a double quote or a line
 * break is wrapped in double quotes, and a double quote inside it is written twice.
 */

/** Split one record into its fields. */
export function splitLine(line, delimiter = ',') {
  const fields = [];
  let field = '';
  let inQuotes = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (ch === '"') {
      inQuotes = !inQuotes;
    } else if (ch === delimiter && !inQuotes) {
      fields.push(field);
      field = '';
    } else {
      field += ch;
    }
  }
  if (inQuotes) throw new SyntaxError(`Unterminated quoted field in: ${line}`);
  fields.push(field);
  return fields;
}

/** Split text into records, keeping line breaks that sit inside quoted fields. */
function records(text) {
  const out = [];
  let start = 0;
  let quotes = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '"') quotes++;
    else if (text[i] === '\n' && quotes % 2 === 0) {
      out.push(text.slice(start, i).replace(/\r$/, ''));
      start = i + 1;
    }
  }
  if (start < text.length) out.push(text.slice(start).replace(/\r$/, ''));
  return out;
}

export function parse(text, delimiter = ',') {
  return records(text)
    .filter((record) => record !== '')
    .map((record) => splitLine(record, delimiter));
}

function quoteField(value, delimiter) {
  const text = value === null || value === undefined ? '' : String(value);
  const needsQuotes = text.includes(delimiter) || /["\r\n]/.test(text);
  return needsQuotes ? `"${text.replaceAll('"', '""')}"` : text;
}

export function stringify(rows, delimiter = ',') {
  return rows.map((row) => row.map((v) => quoteField(v, delimiter)).join(delimiter) + '\n').join('');
}
