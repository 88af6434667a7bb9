/**
 * A text safe to print to a terminal or a log: C0 and C1 control characters, DEL and the Unicode line separators
 * (escape sequences that could move the cursor, rewrite a terminal's title or hide text) shown as `\u001b`-style
 * escapes. Newlines and tabs are kept when `multiline`. For every text built from message data (bodies quoted by a
 * parse error, exception messages, header values) that reaches a log line or the CLI's output.
 * @example printable('\u001b[2J{bad') // '\\u001b[2J{bad'
 */
export function printable(text: string, multiline = false): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what it looks for
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) =>
    multiline && (c === '\n' || c === '\t') ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
