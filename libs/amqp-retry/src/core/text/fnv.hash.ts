/** FNV-1a, 32 bits, from `basis`, as 8 hex digits: a short, stable hash of a name or a key (not a secure one). */
export function fnv1a(text: string, basis = 0x811c9dc5): string {
  let hash = basis;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}
