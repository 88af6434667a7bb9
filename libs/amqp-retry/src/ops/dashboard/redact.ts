/**
 * Removes credentials from text that may reach the page: a broker error can quote its connection URL, and the page
 * must never show a password. `amqp://user:secret@host` -> `amqp://user:***@host`, for any scheme, and
 * `password=...` pairs as in query strings.
 */
export function redactCredentials(text: string): string {
  return text
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@:]*):([^\s/@]*)@/gi, '$1$2:***@')
    .replace(/\b(password|passwd|pwd|secret|token)=([^&\s]+)/gi, '$1=***');
}
