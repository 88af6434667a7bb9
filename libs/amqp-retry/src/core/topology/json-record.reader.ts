/**
 * A message body that must be a JSON object: its fields, or why it is not one (the first of "not JSON", "not an
 * object"), in words.
 */
export function readJsonObject(content: Buffer): { fields: Record<string, unknown> } | { problem: string } {
  let body: unknown;
  try {
    body = JSON.parse(content.toString('utf8'));
  } catch {
    return { problem: 'the body is not JSON' };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { problem: 'the body is not a JSON object' };
  return { fields: body as Record<string, unknown> };
}

/**
 * The fields of a record kept in (or announced on) the broker, a JSON object: none (an empty record) when the body is
 * not JSON or not an object, so that a reader checking each field it needs takes anything unreadable for no record.
 */
export function readRecordFields(content: Buffer): Record<string, unknown> {
  const read = readJsonObject(content);
  return 'fields' in read ? read.fields : {};
}
