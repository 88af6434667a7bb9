import { printable } from './printable.js';

describe('printable', () => {
  it('escapes C0 and C1 control characters, DEL and line separators, keeping the rest', () => {
    expect(printable('\u001b[2J\u001b]0;owned\u0007{bad')).toBe('\\u001b[2J\\u001b]0;owned\\u0007{bad');
    expect(printable('a\u007fb\u009bc\u0085d\u2028e')).toBe('a\\u007fb\\u009bc\\u0085d\\u2028e');
    expect(printable('a\r\nb\tc')).toBe('a\\u000d\\u000ab\\u0009c');
    expect(printable('héllo <script> 😀')).toBe('héllo <script> 😀');
  });

  it('keeps newlines and tabs when multiline, never a carriage return or an escape', () => {
    expect(printable('a\nb\tc\r\u001b[1A', true)).toBe('a\nb\tc\\u000d\\u001b[1A');
  });
});
