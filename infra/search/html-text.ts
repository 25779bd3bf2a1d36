/**
 * HTML → readable text with html-to-text: the page's title, and its body as paragraphs, headings, lists
 * and table rows (one line each, cells separated by " | ", for data and layout tables alike), without
 * what a reader does not read: scripts, styles, navigation, page chrome (cookie banners, sidebars,
 * footers, forms), images and link targets (link text stays).
 */
import { compile, type DomNode, type FormatCallback, type SelectorDefinition } from 'html-to-text';

const skip = (selector: string): SelectorDefinition => ({ selector, format: 'skip' });

const unread = [
  'head',
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'iframe',
  'object',
  'canvas',
  'img',
  'button',
  'select',
  'input',
  'textarea',
  'nav',
  'footer',
  'aside',
  '[role=navigation]',
  '[role=search]',
  '[role=dialog]',
  '[role=contentinfo]',
  '[hidden]',
  '[aria-hidden=true]',
  // Wikipedia's "[edit]" beside every heading and its skip link.
  '.mw-editsection',
  '.mw-jump-link',
].map(skip);

const headings = (['h1', 'h2', 'h3', 'h4', 'h5', 'h6'] as const).map((selector): SelectorDefinition => ({
  selector,
  format: 'heading',
  options: { uppercase: false, leadingLineBreaks: 2, trailingLineBreaks: 1 },
}));

const line = { leadingLineBreaks: 1, trailingLineBreaks: 1 };

function isCell(node: DomNode): boolean {
  return node.type === 'tag' && (node.name === 'td' || node.name === 'th');
}

/** A table cell inline in its row, after a " | " when a cell precedes it. */
const tableCell: FormatCallback = (element, walk, builder) => {
  const siblings = element.parent?.children ?? [];
  if (siblings.slice(0, siblings.indexOf(element)).some(isCell)) builder.addLiteral(' | ');
  walk(element.children ?? [], builder);
};

const bodyToText = compile({
  wordwrap: false,
  formatters: { tableCell },
  selectors: [
    ...unread,
    ...headings,
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'table', format: 'block', options: line },
    { selector: 'caption', format: 'block', options: line },
    { selector: 'tr', format: 'block', options: line },
    { selector: 'td', format: 'tableCell' },
    { selector: 'th', format: 'tableCell' },
  ],
});

const titleToText = compile({
  wordwrap: false,
  baseElements: { selectors: ['title'], returnDomByDefault: false },
  limits: { maxBaseElements: 1 },
});

export function htmlToText(html: string): { title: string; text: string } {
  // The document's <title> is the first one (an inline SVG's own comes later): parse only up to it.
  const titleEnd = /<\/title\s*>/i.exec(html);
  const title =
    titleEnd === null
      ? ''
      : titleToText(html.slice(0, titleEnd.index + titleEnd[0].length))
          .replace(/\s+/g, ' ')
          .trim();
  const text = bodyToText(html)
    .replace(/\u00a0/g, ' ') // non-breaking spaces (&nbsp;) read, and match a search, as spaces
    .split('\n')
    .map((row) => row.trimEnd())
    // A cell whose content starts with a block leaves its separator alone on a line.
    .filter((row) => row.trim() !== '|')
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title, text };
}
