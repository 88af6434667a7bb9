/**
 * The fields of a record kept in (or announced on) the broker, a JSON object: none (an empty record) when the body is
 * not JSON or not an object, so that a reader checking each field it needs takes anything unreadable for no record.
 */
export function readRecordFields(content: Buffer): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(content.toString('utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
