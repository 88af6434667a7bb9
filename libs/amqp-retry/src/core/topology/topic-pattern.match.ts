/** True when `pattern` has a topic wildcard word: `*` (one word) or `#` (zero or more), between dots. */
export const hasTopicWildcard = (pattern: string): boolean => pattern.split('.').some((word) => word === '*' || word === '#');

/**
 * A topic pattern against a routing key, as RabbitMQ matches them: dot-separated words, `*` one word, `#` zero or
 * more. In time linear in the pattern's words times the key's (a publisher chooses the key, of any length in a body).
 */
export function topicMatches(pattern: string, routingKey: string): boolean {
  const words = routingKey.split('.');
  // reach[w]: the pattern's words so far match the key's first w words
  let reach = Array.from({ length: words.length + 1 }, (_, w) => w === 0);
  for (const part of pattern.split('.')) {
    const next = new Array<boolean>(words.length + 1).fill(false);
    for (let w = 0; w <= words.length; w++) {
      if (!reach[w]) continue;
      if (part === '#') {
        next.fill(true, w); // from the first reached word on, any number of words
        break;
      }
      if (w < words.length && (part === '*' || part === words[w])) next[w + 1] = true;
    }
    reach = next;
  }
  return reach[words.length];
}
