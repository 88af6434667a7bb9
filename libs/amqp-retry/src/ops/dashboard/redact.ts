import { maskCredentials } from '../cli/cli-input.js';

/**
 * Removes credentials from text that may reach the page: a broker error can quote its connection URL, and the page
 * must never show a password. URLs as the CLI masks them (`amqp://user:***@host`), and `password=...` pairs as in
 * query strings.
 */
export function redactCredentials(text: string): string {
  return maskCredentials(text).replace(/\b(password|passwd|pwd|secret|token)=([^&\s]+)/gi, '$1=***');
}
