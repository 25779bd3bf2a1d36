import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../paths.js';
import { htmlToText } from './html-text.js';

/** Saved pages, written to look like the real thing (markup, scripts, styles and chrome as those sites ship them). */
const page = (name: string) => htmlToText(fs.readFileSync(path.join(repoRoot, 'test', 'fixtures', 'pages', name), 'utf8'));

function assertAbsent(text: string, junk: readonly string[]): void {
  for (const piece of junk) assert.ok(!text.includes(piece), `"${piece}" should not be in the text:\n${text}`);
  assert.doesNotMatch(text, /<\/?[a-z][^>]*>/i, 'no markup left');
}

test('a Wikipedia article: lead, infobox and tables as rows, references; no scripts, styles, menus, [edit] or footer', () => {
  const { title, text } = page('wikipedia-lake-titicaca.html');
  assert.equal(title, 'Lake Titicaca - Wikipedia');
  for (const piece of [
    'Lake Titicaca (Spanish: Lago Titicaca; Quechua: Titiqaqa Qucha) is a large freshwater lake in the Andes mountains on the border of Bolivia and Peru.',
    'highest navigable lake in the world.[1]',
    'Location | Andes, Peru and Bolivia',
    'Surface area | 8,372 km2 (3,232 sq mi)',
    'Max. depth | 281 m (922 ft)',
    'Sub-basins of Lake Titicaca\nSub-basin | Local name | Max. depth\nLarger, northern | Lago Chucuito | 284 m',
    '\nGeography\n',
    'The Level of Lake Titicaca. Geological Society of America.',
    'Lakes of Bolivia',
  ])
    assert.ok(text.includes(piece), `"${piece}" missing from:\n${text}`);
  assert.ok(text.indexOf('Location | Andes') < text.indexOf('is a large freshwater lake'), 'document order kept');
  assertAbsent(text, [
    'RLCONF',
    'wgPageName',
    'mw.loader',
    'csrfToken',
    'wgBackendResponseTime', // scripts
    'infobox{',
    'border:1px',
    'font-size', // styles
    'Main menu',
    'Random article',
    'Jump to content',
    'Search Wikipedia', // header navigation and search
    'edit]',
    'Edit section', // section edit links
    'Junín',
    'Lakes of Peru\n * Junín', // navbox
    'Privacy policy',
    'last edited',
    'Creative Commons', // footer
    'upload.wikimedia.org',
    'CentralAutoLogin',
    '/wiki/',
    'href', // images and link targets
  ]);
});

test('a news article: headline, standfirst, body and quote in order; no cookie banner, trackers, navigation, promos, sidebar or footer', () => {
  const { title, text } = page('news-article.html');
  assert.equal(title, 'Andean glaciers lost a third of their ice since 2000, survey finds | The Daily Ledger');
  const expected = [
    'Andean glaciers lost a third of their ice since 2000, survey finds',
    'Satellite and field measurements across Peru and Bolivia show retreat accelerating after 2015',
    'By Marta Quispe, South America correspondent',
    'Glaciers in the tropical Andes have lost roughly a third of their ice since the turn of the century',
    'the pace of retreat nearly doubled after 2015.',
    '“We are watching a water tower empty in real time,” said Dr Rosa Mamani',
    'Water for two cities',
    'About 15% of the water used in La Paz and El Alto in the dry season comes from glacier melt',
    'Officials in El Alto said a new reservoir would open in 2026.',
  ];
  let position = -1;
  for (const piece of expected) {
    const found = text.indexOf(piece);
    assert.ok(found > position, `"${piece}" missing or out of order in:\n${text}`);
    position = found;
  }
  assertAbsent(text, [
    'gtag',
    'dataLayer',
    '__LEDGER_AD_SLOTS__',
    'NewsArticle',
    'googletagmanager',
    'ledger.bundle', // scripts, JSON-LD
    '--ledger-blue',
    'font-family',
    '@media', // styles
    'cookies',
    'Accept all', // cookie banner
    'Politics',
    'Sport',
    'Climate crisis', // section and breadcrumb navigation
    'logo', // inline SVG
    'Sign up to Down to Earth',
    'Most viewed',
    'Last-minute winner', // promo and sidebar
    'About us',
    'Terms',
    '© 2024', // footer
    'i.ledger.example',
    'INTCMP', // image and link targets
  ]);
});

test('a legacy page (upper-case tags, unclosed paragraphs, layout table, commented script): text, entities and preformatted lines', () => {
  const { title, text } = page('legacy-faq.html');
  assert.equal(title, 'Altiplano Rail FAQ – Puno to Cusco');
  for (const piece of [
    'Frequently Asked Questions',
    'How long is the journey from Puno to Cusco?',
    'between Puno and Cusco in about 10½ hours, crossing the La Raya pass at 4,319 m.',
    'Lunch is served between Juliaca & Sicuani;',
    '  Departure   Puno   07:30\n  Arrival     Cusco  18:00',
    'Last updated 14/06/2009 · info@altiplano-rail.example',
  ])
    assert.ok(text.includes(piece), `"${piece}" missing from:\n${text}`);
  assertAbsent(text, [
    'visitorCounter',
    'popUp',
    'tracker',
    'counter.example',
    'font-weight',
    '#FFFFEE',
    'template marker',
    'SiteBuilder',
    '&frac12;',
    '&middot;',
  ]);
});

test('no title gives an empty one; entities are decoded; a fragment without html or body still converts', () => {
  assert.deepEqual(htmlToText('<p>Caf&eacute; &amp; bar&#44; open &#x2014; daily</p><p>Second</p>'), {
    title: '',
    text: 'Café & bar, open — daily\n\nSecond',
  });
  assert.equal(htmlToText('<title>\n  A   spaced\n title </title><p>x</p>').title, 'A spaced title');
});
