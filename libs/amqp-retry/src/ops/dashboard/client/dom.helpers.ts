/**
 * The page's DOM helpers. Rule: message data (bodies, headers, errors, queue names) reaches the DOM only through
 * textContent, value or setAttribute of non-executable attributes; never innerHTML.
 */

type Attrs = Record<string, string | number | boolean | undefined | null | ((event: Event) => void)>;
type Child = Node | string | undefined | null | false;

/** An element with attributes (`text` sets textContent, `className` the class, `on<event>` a listener) and children. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, children: Child[] = []): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  setAttributes(node, attrs);
  for (const child of children) if (child) node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  return node;
}

const SVG = 'http://www.w3.org/2000/svg';

/** An SVG element (the rate charts); attributes only, never markup. */
export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, children: Child[] = []): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  setAttributes(node, attrs);
  for (const child of children) if (child) node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  return node;
}

function setAttributes(node: Element, attrs: Attrs): void {
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = String(value);
    else if (key === 'className') node.setAttribute('class', String(value));
    else if (typeof value === 'function') node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
}

export function clear(node: Node): void {
  while (node.firstChild) node.removeChild(node.firstChild);
}

/** An element of the page by id, typed by what the page's HTML puts there; a missing one is a bug of the page. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node as T;
}

/** The content of a `<meta name>` of the page, or ''. */
export const meta = (name: string): string => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';

/**
 * A name that wraps only after its separators (. - _ /): its parts as text with a <wbr> after each separator, so that
 * "shop.payments" breaks after "shop." and never inside "payments"; its textContent is the name as it is.
 */
export function nameNode(name: string, className = 'name'): HTMLSpanElement {
  const span = el('span', { className, title: name });
  for (const part of name.split(/(?<=[._\-/])/)) {
    span.appendChild(document.createTextNode(part));
    if (/[._\-/]$/.test(part)) span.appendChild(document.createElement('wbr'));
  }
  return span;
}
