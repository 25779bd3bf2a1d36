/**
 * Tools under stress: the tool registry a tools worker builds from configuration (per-tool limits
 * from LONGHAUL_TOOL_*), run through the real tool activities and the Postgres tool-call store,
 * against a local HTTP server that misbehaves on purpose: it never answers, dribbles bytes, sends
 * 10 MB, answers 429 with Retry-After, or 500s. Each failing call must come back as an observation
 * the agent can read (ok=false, not invalid) within its deadline, and never as an exception.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createToolActivities } from '../activities/tools/run-tools.activities.js';
import { buildToolRegistry } from '../composition/tool-registry.js';
import { openSearchDatabase } from '../infra/search/open.js';
import { createPgToolCallStore } from '../infra/search/tool-call-store.pg.js';
import { loadConfig } from '../infra/config.js';
import { testConfig } from './helpers/stack.js';

const pool = await openSearchDatabase(testConfig(), 4);
const store = createPgToolCallStore(pool);
let server: http.Server;
let base = '';
/** Arrival times (ms) of requests, by the scenario word in their URL or query. */
const arrivals = new Map<string, number[]>();
let inFlight = 0;
let maxInFlight = 0;

const results = (query: string) =>
  JSON.stringify({ results: [{ title: `About ${query}`, url: `https://example.org/${encodeURIComponent(query)}`, content: 'text' }] });

before(async () => {
  server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    const word = url.searchParams.get('q') ?? url.pathname.slice(1);
    const times = arrivals.get(word) ?? [];
    times.push(Date.now());
    arrivals.set(word, times);
    const kind = word.split('-')[0];
    if (kind === 'hang') return; // never answers; the socket stays open
    if (kind === 'dribble') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => response.write('.'), 100);
      response.on('close', () => clearInterval(timer));
      return;
    }
    if (kind === 'huge') {
      response.writeHead(200, { 'content-type': url.pathname === '/search' ? 'application/json' : 'text/plain' });
      const block = Buffer.alloc(1024 * 1024, 'x');
      let sent = 0;
      const pump = () => {
        while (sent < 10 && response.write(block)) sent += 1;
        if (sent >= 10) response.end();
        else response.once('drain', pump);
      };
      pump();
      return;
    }
    if (kind === 'busy' && times.length <= 2) {
      response.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '1' });
      return void response.end('slow down');
    }
    if (kind === 'broken') {
      response.writeHead(500, { 'content-type': 'text/plain' });
      return void response.end('oops');
    }
    if (kind === 'forbidden') {
      response.writeHead(403, { 'content-type': 'text/plain' });
      return void response.end('no');
    }
    const counted = kind === 'slow';
    if (counted) inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    setTimeout(
      () => {
        if (counted) inFlight -= 1;
        if (url.pathname === '/search') {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(results(word));
        } else {
          response.writeHead(200, { 'content-type': 'text/plain' });
          response.end(`page ${word}`);
        }
      },
      kind === 'slow' ? 300 : 0,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await pool.end();
});

function activitiesWith(environment: NodeJS.ProcessEnv) {
  const settings = loadConfig({
    ...process.env,
    LONGHAUL_WEB_SEARCH_URL: `${base}/search`,
    LONGHAUL_WEB_FETCH_ALLOW: '127.0.0.1',
    ...environment,
  });
  const tools = buildToolRegistry(settings, pool);
  return { activities: createToolActivities({ registry: tools.registry, store, cacheTtlMs: 0 }), tools };
}

const unique = (word: string) => `${word}-${randomUUID().slice(0, 8)}`;

test('a server that never answers, one that dribbles bytes and one that sends 10 MB each give a readable observation in time', async () => {
  const { activities, tools } = activitiesWith({
    LONGHAUL_TOOL_LIMITS: 'web_search:timeout_ms=1000,retries=1;web_fetch:timeout_ms=600,retries=0',
    LONGHAUL_WEB_FETCH_MAX_BYTES: String(64 * 1024),
    LONGHAUL_ACCESS_PAGE_CHARS: '100000',
  });
  const [hang, dribble, hugeSearch, hugePage, fine] = [unique('hang'), unique('dribble'), unique('huge'), unique('huge'), unique('fine')];
  const startedAt = Date.now();
  const turn = await activities.runTools({
    key: `stress/${randomUUID()}`,
    calls: [
      { tool: 'web_search', input: { query: hang } },
      { tool: 'web_fetch', input: { url: `${base}/${dribble}` } },
      { tool: 'web_search', input: { query: hugeSearch } },
      { tool: 'web_fetch', input: { url: `${base}/${hugePage}` } },
      { tool: 'web_search', input: { query: fine } },
    ],
    maxObservationChars: 200_000,
  });
  const seconds = (Date.now() - startedAt) / 1000;
  await tools.close();
  const [hung, dribbled, hugeResult, hugeFetch, ok] = turn;
  // Never answers: two attempts of 1000 ms, then an observation (not an exception, not "invalid").
  assert.deepEqual([hung!.ok, hung!.invalid], [false, false]);
  assert.match(
    hung!.observation,
    /^Error: web_search is unavailable: .*no answer within 1000 ms \(2 attempts in \d+\.\d s\)\. Try again later/,
  );
  assert.equal(arrivals.get(hang)?.length, 2);
  // Dribbles forever: the attempt's time limit cuts it, whatever has arrived.
  assert.deepEqual([dribbled!.ok, dribbled!.invalid], [false, false]);
  assert.match(dribbled!.observation, /^Error: web_fetch is unavailable: no answer within 600 ms \(1 attempt in/);
  // 10 MB: the search answer is refused at the byte cap (not retried), the page is cut at it.
  assert.equal(hugeResult!.ok, false);
  assert.match(hugeResult!.observation, /^Error: web_search failed: search API answer is larger than the 65536 bytes read at most/);
  assert.equal(hugeFetch!.ok, true);
  assert.ok(hugeFetch!.observation.length < 70_000, 'at most the byte cap of the 10 MB was read');
  assert.match(hugeFetch!.observation, /page cut at the byte limit/);
  // The healthy call of the same turn is unharmed.
  assert.deepEqual([ok!.ok, ok!.documentIds], [true, [`https://example.org/${fine}`]]);
  assert.ok(seconds < 30, `the turn ended (${seconds} s), bounded by the limits`);
});

test('429 with Retry-After is retried after at least the time asked; a 500 is retried, then read as unavailable; a 403 is not retried', async () => {
  const { activities, tools } = activitiesWith({
    LONGHAUL_TOOL_RETRIES: '2',
    LONGHAUL_TOOL_LIMITS: 'web_fetch:retries=3,deadline_ms=20000',
  });
  const [busy, broken, forbidden] = [unique('busy'), unique('broken'), unique('forbidden')];
  const [searched, fetched, refused] = await activities.runTools({
    key: `stress/${randomUUID()}`,
    calls: [
      { tool: 'web_search', input: { query: busy } },
      { tool: 'web_fetch', input: { url: `${base}/${broken}` } },
      { tool: 'web_fetch', input: { url: `${base}/${forbidden}` } },
    ],
  });
  await tools.close();
  assert.equal(searched!.ok, true, searched!.observation);
  const times = arrivals.get(busy)!;
  assert.equal(times.length, 3);
  assert.ok(
    times[1]! - times[0]! >= 990 && times[2]! - times[1]! >= 990,
    `Retry-After: 1 honoured (gaps ${times[1]! - times[0]!}, ${times[2]! - times[1]!} ms)`,
  );
  assert.deepEqual([fetched!.ok, fetched!.invalid], [false, false]);
  assert.match(fetched!.observation, /^Error: web_fetch is unavailable: HTTP 500 from .* \(4 attempts in/);
  assert.equal(arrivals.get(broken)?.length, 4);
  assert.equal(refused!.ok, false);
  assert.match(refused!.observation, /HTTP 403/);
  assert.equal(arrivals.get(forbidden)?.length, 1);
});

test('a Retry-After longer than the call may take ends the call at once with the reason', async () => {
  const { activities, tools } = activitiesWith({ LONGHAUL_TOOL_LIMITS: 'web_search:deadline_ms=500' });
  const busy = unique('busy');
  const startedAt = Date.now();
  const [result] = await activities.runTools({ key: `stress/${randomUUID()}`, calls: [{ tool: 'web_search', input: { query: busy } }] });
  await tools.close();
  assert.ok(Date.now() - startedAt < 900, 'it did not sleep through a wait it could not afford');
  assert.match(result!.observation, /HTTP 429; the server asks to wait 1 s, longer than the 500 ms this call may take/);
  assert.equal(arrivals.get(busy)?.length, 1);
});

test('concurrency and rate limits hold per tool: at most N calls at once, calls started at most Q a second', async () => {
  const { activities, tools } = activitiesWith({ LONGHAUL_TOOL_LIMITS: 'web_fetch:concurrency=2;web_search:qps=5' });
  maxInFlight = 0;
  const slow = Array.from({ length: 6 }, () => unique('slow'));
  const paced = Array.from({ length: 6 }, () => unique('paced'));
  const [fetches, searches] = await Promise.all([
    activities.runTools({
      key: `stress/${randomUUID()}`,
      calls: slow.map((word) => ({ tool: 'web_fetch', input: { url: `${base}/${word}` } })),
    }),
    activities.runTools({ key: `stress/${randomUUID()}`, calls: paced.map((word) => ({ tool: 'web_search', input: { query: word } })) }),
  ]);
  await tools.close();
  assert.ok(fetches.every((result) => result.ok) && searches.every((result) => result.ok));
  assert.equal(maxInFlight, 2);
  // The limiter starts call i no sooner than 200·i ms after the first; arrivals jitter a little, the span cannot shrink much.
  const starts = paced.map((word) => arrivals.get(word)![0]!).sort((a, b) => a - b);
  assert.ok(starts.at(-1)! - starts[0]! >= 5 * 200 - 60, `6 calls at 5 qps span at least 1 s (span ${starts.at(-1)! - starts[0]!} ms)`);
});

test('LONGHAUL_TOOL_LIMITS errors name the variable, the tool and the key', () => {
  const problem = (value: string) => {
    try {
      loadConfig({ LONGHAUL_TOOL_LIMITS: value });
      return '';
    } catch (error) {
      return (error as Error).message;
    }
  };
  assert.match(
    problem('web_search:qps=-1'),
    /^LONGHAUL_TOOL_LIMITS="web_search:qps=-1" is invalid: web_search: qps=-1 should be a number from 0 to 10000\. Fix or unset/,
  );
  assert.match(
    problem('web_fetch:speed=3'),
    /web_fetch: unknown key "speed" \(known: timeout_ms, retries, concurrency, qps, deadline_ms\)/,
  );
  assert.match(problem('nonsense'), /"nonsense" should be tool:key=value/);
  assert.throws(
    () => buildToolRegistry(loadConfig({ ...process.env, LONGHAUL_TOOL_LIMITS: 'web_serch:qps=1' }), pool),
    /LONGHAUL_TOOL_LIMITS names tool "web_serch", which does not exist/,
  );
});
