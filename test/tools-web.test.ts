import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createWebFetchTool } from '../activities/tools/web-fetch.tool.js';
import { createWebSearchTool } from '../activities/tools/web-search.tool.js';
import { AddressGuard } from '../infra/search/address-guard.js';
import { createHttpPageFetcher, WebFetchError, type WebFetchOptions } from '../infra/search/web-fetch.http.js';
import { createHttpWebSearchClient } from '../infra/search/web-search.http.js';

let server: http.Server;
let base = '';
const requests: string[] = [];

before(async () => {
  server = http.createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    const url = request.url ?? '/';
    const send = (status: number, type: string, body: string, headers: Record<string, string> = {}) => {
      response.writeHead(status, { 'content-type': type, ...headers });
      response.end(body);
    };
    if (url === '/article')
      send(
        200,
        'text/html; charset=utf-8',
        '<html><head><title>Tea &amp; Biscuits</title><style>p{}</style></head><body><h1>Tea</h1><p>Milk <b>first</b>?</p><script>alert(1)</script><p>No&#44; later.</p></body></html>',
      );
    else if (url === '/hop') send(302, 'text/plain', '', { location: '/article' });
    else if (url === '/to-metadata') send(302, 'text/plain', '', { location: 'http://169.254.169.254/latest/meta-data/' });
    else if (url.startsWith('/loop')) send(302, 'text/plain', '', { location: `/loop${url.length}` });
    else if (url === '/image') send(200, 'image/png', 'PNG');
    else if (url === '/big') send(200, 'text/plain', 'z'.repeat(50_000));
    else if (url === '/slow') setTimeout(() => send(200, 'text/plain', 'late'), 2000);
    else if (url.startsWith('/searxng'))
      send(
        200,
        'application/json',
        JSON.stringify({
          results: [{ title: 'Tea', url: 'https://tea.example/', content: 'All about tea', engine: 'x' }, { title: 'No url' }],
        }),
      );
    else if (url === '/serper' && request.method === 'POST') {
      let body = '';
      request.on('data', (chunk) => {
        body += String(chunk);
      });
      request.on('end', () =>
        send(
          200,
          'application/json',
          JSON.stringify({
            organic: [{ title: 'Serper hit', link: 'https://s.example/', snippet: `key=${request.headers['x-api-key']} body=${body}` }],
          }),
        ),
      );
    } else send(404, 'text/plain', 'no');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

const options = (overrides: Partial<WebFetchOptions> = {}): WebFetchOptions => ({
  maxBytes: 10_000,
  timeoutMs: 1000,
  maxRedirects: 3,
  allow: ['127.0.0.1'],
  ...overrides,
});

async function failure(promise: Promise<unknown>): Promise<WebFetchError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof WebFetchError, `expected a WebFetchError, got ${String(error)}`);
  return error;
}

test('the address guard refuses private, loopback, link-local and mapped addresses unless allowed', () => {
  const guard = new AddressGuard(['10.1.0.0/16']);
  assert.deepEqual(
    [
      '8.8.8.8',
      '127.0.0.1',
      '10.0.0.1',
      '10.1.2.3',
      '169.254.169.254',
      '192.168.1.1',
      '::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '2606:4700::1111',
    ].map((a) => guard.permits(a)),
    [true, false, false, true, false, false, false, false, false, true],
  );
});

test('web_fetch refuses a loopback server unless config allows it, without sending a request', async () => {
  const before = requests.length;
  const refused = await failure(createHttpPageFetcher(options({ allow: [] })).fetch(`${base}/article`));
  assert.equal(refused.code, 'REFUSED');
  assert.equal(
    refused.message,
    'refused: 127.0.0.1 resolves to 127.0.0.1, a private, loopback or link-local address (allow it with LONGHAUL_WEB_FETCH_ALLOW)',
  );
  assert.equal(requests.length, before);
  const localhost = await failure(createHttpPageFetcher(options({ allow: [] })).fetch(`http://localhost:${new URL(base).port}/article`));
  assert.equal(localhost.code, 'REFUSED');
});

test('web_fetch follows a redirect to readable text, and re-checks a redirect that points at cloud metadata', async () => {
  const fetcher = createHttpPageFetcher(options());
  const page = await fetcher.fetch(`${base}/hop`);
  assert.deepEqual(page, {
    url: `${base}/article`,
    title: 'Tea & Biscuits',
    text: 'Tea\n\nMilk first?\n\nNo, later.',
    contentType: 'text/html',
    cut: false,
  });
  const metadata = await failure(fetcher.fetch(`${base}/to-metadata`));
  assert.equal(
    metadata.message,
    'refused: 169.254.169.254 resolves to 169.254.169.254, a private, loopback or link-local address (allow it with LONGHAUL_WEB_FETCH_ALLOW)',
  );
  assert.equal((await failure(fetcher.fetch(`${base}/loop`))).message, 'refused: more than 3 redirects');
  assert.equal((await failure(fetcher.fetch('file:///etc/passwd'))).message, 'refused: only http and https URLs, not file:');
});

test('web_fetch refuses non-text content, cuts a body at the byte cap and stops at the time limit', async () => {
  const fetcher = createHttpPageFetcher(options({ maxBytes: 4096, timeoutMs: 500 }));
  assert.equal((await failure(fetcher.fetch(`${base}/image`))).message, 'refused: content type "image/png" is not text');
  const big = await fetcher.fetch(`${base}/big`);
  assert.deepEqual([big.text.length, big.cut], [4096, true]);
  const startedAt = Date.now();
  const slow = await failure(fetcher.fetch(`${base}/slow`));
  assert.deepEqual([slow.code, slow.message], ['TIMEOUT', 'timed out after 500 ms']);
  assert.ok(Date.now() - startedAt < 1500);
  assert.equal((await failure(fetcher.fetch(`${base}/missing`))).message, `HTTP 404 from ${base}/missing`);
});

test('the web_fetch tool shows the page text with its URL and marks a cut page', async () => {
  const tool = createWebFetchTool(createHttpPageFetcher(options({ maxBytes: 1024 })), 100);
  const article = await tool.execute({ url: `${base}/article` });
  assert.equal(article.observation, `Tea & Biscuits (${base}/article)\nTea\n\nMilk first?\n\nNo, later.`);
  assert.equal(tool.judge(article), true);
  const big = await tool.execute({ url: `${base}/big` });
  assert.equal(big.observation, `${base}/big (${base}/big)\n${'z'.repeat(100)}\n[… 924 more characters]\n[… page cut at the byte limit]`);
  await sleep(0);
});

test('web_search speaks the SearXNG JSON API and a Serper-compatible API', async () => {
  const searxng = createWebSearchTool(createHttpWebSearchClient({ url: `${base}/searxng`, api: 'searxng', apiKey: null, timeoutMs: 1000 }));
  const found = await searxng.execute({ query: 'tea' });
  assert.equal(found.observation, '[1] Tea\nhttps://tea.example/\nAll about tea');
  assert.ok(requests.includes('GET /searxng?q=tea&format=json'));
  const serper = createHttpWebSearchClient({ url: `${base}/serper`, api: 'serper', apiKey: 'secret', timeoutMs: 1000 });
  assert.deepEqual(await serper.search('biscuits', 3), [
    { title: 'Serper hit', url: 'https://s.example/', snippet: 'key=secret body={"q":"biscuits","num":3}' },
  ]);
});
