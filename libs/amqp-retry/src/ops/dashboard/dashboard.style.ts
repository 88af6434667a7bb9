/**
 * The one style inline in the page (the CSP admits it by its hash, see SECURITY_HEADERS): the notice shown while the
 * page's own script and stylesheet load. Should a guard refuse them, the notice stays, styled, and after two seconds
 * says what to do: a page left as an unstyled shell tells an operator nothing.
 */
export const BOOT_STYLE =
  '#boot{margin:1rem;padding:.75rem 1rem;border-radius:8px;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;' +
  'background:#fbeceb;border:1px solid #efc2bf;color:#1d2330}#boot p{margin:.25rem 0}' +
  '#boot .later{visibility:hidden;animation:boot-later 0s linear 2s forwards}@keyframes boot-later{to{visibility:visible}}';
