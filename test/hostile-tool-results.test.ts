/**
 * Hostile-input corpus, boundary "tool results" (test/fixtures/hostile/tool-results.json): web tools
 * (web_fetch, access with a URL, web_search) against one local server that misbehaves as each case
 * says — never answers, dribbles bytes, sends 10 MB, resets the connection, sends bytes that are not
 * what its content type or encoding claims, redirects in a loop, asks to retry much later. Every call
 * goes through the registry a tools worker builds (with the per-tool limits of LONGHAUL_TOOL_LIMITS)
 * and the real tools activity, all cases at once, and must come back within its deadline as a result
 * the agent can read (never invalid, never an exception).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createToolActivities } from '../activities/tools/run-tools.activities.js';
import type { ToolResult } from '../workflows/contracts/tools.contract.js';
import { buildToolRegistry } from '../composition/tool-registry.js';
import { loadConfig } from '../infra/config.js';
import { openSearchDatabase } from '../infra/search/open.js';
import { createPgToolCallStore } from '../infra/search/tool-call-store.pg.js';
import { expand, loadCorpus, reportCount, type CorpusCase } from './helpers/hostile-corpus.js';
import { testConfig } from './helpers/stack.js';

interface Respond {
  readonly mode?: 'hang' | 'headers-then-hang' | 'dribble' | 'reset' | 'short-body' | 'redirect-loop' | 'many-results';
  readonly status?: number;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
  readonly bodyBase64?: string;
  readonly count?: number;
}

interface ToolResultCase extends CorpusCase {
  readonly tool: 'web_fetch' | 'access' | 'web_search';
  readonly page?: number;
  readonly respond: Respond;
  readonly ok: boolean;
  readonly observation: string;
}

const cases = loadCorpus<ToolResultCase>('tool-results');
const byId = new Map(cases.map((entry) => [entry.id, entry]));
const attemptTimeoutMs = 1500;
const deadlineMs = 6000;
/** Calls running at once: the server shares this process, so all 10 MB answers at once would starve it. */
const parallel = 8;
const bodies = new Map<string, Buffer>();

const pool = await openSearchDatabase(testConfig(), 2);
let server: http.Server;
let base = '';

function answer(id: string, respond: Respond, request: http.IncomingMessage, response: http.ServerResponse): void {
  switch (respond.mode) {
    case 'hang':
      return; // never answers; the socket stays open
    case 'headers-then-hang':
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.flushHeaders();
      return;
    case 'dribble': {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => response.write('.'), 100);
      response.on('close', () => clearInterval(timer));
      return;
    }
    case 'reset':
      response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '10000' });
      response.write('x'.repeat(1000), () => response.destroy());
      return;
    case 'short-body':
      response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
      response.write('only ten b', () => response.socket?.end());
      return;
    case 'redirect-loop': {
      const hop = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('hop') ?? 0);
      const next = new URL(request.url ?? '/', 'http://x');
      next.searchParams.set('hop', String(hop + 1));
      response.writeHead(302, { location: `${next.pathname}${next.search}` });
      response.end();
      return;
    }
    case 'many-results':
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          results: Array.from({ length: respond.count ?? 1 }, (_, index) => ({
            title: `Result ${index}`,
            url: `https://example.org/${index}`,
            content: 'text',
          })),
        }),
      );
      return;
    default: {
      const body =
        bodies.get(id) ??
        (respond.bodyBase64 !== undefined
          ? Buffer.from(respond.bodyBase64, 'base64')
          : Buffer.from(typeof respond.body === 'string' ? respond.body : String(expand(respond.body) ?? '')));
      bodies.set(id, body);
      response.writeHead(respond.status ?? 200, respond.headers ?? {});
      response.end(body);
    }
  }
}

before(async () => {
  server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    const id = url.pathname === '/search' ? (url.searchParams.get('q') ?? '') : decodeURIComponent(url.pathname.replace(/^\/case\//, ''));
    const entry = byId.get(id);
    if (!entry) {
      response.writeHead(404, { 'content-type': 'text/plain' });
      return void response.end(`no case ${id}`);
    }
    answer(entry.id, entry.respond, request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await pool.end();
});

function callOf(entry: ToolResultCase): { tool: string; input: unknown } {
  if (entry.tool === 'web_search') return { tool: 'web_search', input: { query: entry.id } };
  const url = `${base}/case/${entry.id}`;
  if (entry.tool === 'web_fetch') return { tool: 'web_fetch', input: { url } };
  return { tool: 'access', input: { target: url, ...(entry.page === undefined ? {} : { page: entry.page }) } };
}

test(`the hostile tool-result corpus (${cases.length} cases): hanging, dribbling, huge and malformed answers each give a readable observation within the deadline`, async () => {
  const limits = `timeout_ms=${attemptTimeoutMs},retries=1,concurrency=64,deadline_ms=${deadlineMs}`;
  const settings = loadConfig({
    ...process.env,
    LONGHAUL_WEB_SEARCH_URL: `${base}/search`,
    LONGHAUL_WEB_FETCH: 'on',
    LONGHAUL_WEB_FETCH_ALLOW: '127.0.0.1',
    LONGHAUL_WEB_FETCH_MAX_BYTES: String(64 * 1024),
    LONGHAUL_ACCESS_PAGE_CHARS: '1000',
    LONGHAUL_WEB_FETCH_TIMEOUT_MS: String(attemptTimeoutMs),
    LONGHAUL_TOOL_LIMITS: ['web_fetch', 'access', 'web_search'].map((tool) => `${tool}:${limits}`).join(';'),
  });
  const built = buildToolRegistry(settings, pool);
  const activities = createToolActivities({ registry: built.registry, store: createPgToolCallStore(pool), cacheTtlMs: 0 });
  try {
    const outcomes: { entry: ToolResultCase; results: ToolResult[]; ms: number }[] = [];
    for (let start = 0; start < cases.length; start += parallel)
      outcomes.push(
        ...(await Promise.all(
          cases.slice(start, start + parallel).map(async (entry) => {
            const startedAt = Date.now();
            const results = await activities.runTools({
              key: `hostile-tool-results/${randomUUID()}`,
              calls: [callOf(entry)],
              maxObservationChars: 200_000,
            });
            return { entry, results, ms: Date.now() - startedAt };
          }),
        )),
      );
    const failures: string[] = [];
    for (const { entry, results, ms } of outcomes) {
      const [result] = results;
      const shown = JSON.stringify(result?.observation ?? null).slice(0, 300);
      if (!result) failures.push(`${entry.id}: no result`);
      else if (result.invalid) failures.push(`${entry.id}: invalid (the call was well formed): ${shown}`);
      else if (result.ok !== entry.ok) failures.push(`${entry.id}: ok=${result.ok}, expected ${entry.ok}: ${shown}`);
      else if (!new RegExp(entry.observation).test(result.observation))
        failures.push(`${entry.id}: ${shown} does not match /${entry.observation}/`);
      else if (result.observation.includes('\u0000')) failures.push(`${entry.id}: the observation carries a NUL byte`);
      // The deadline bounds the call; the slack is for a loaded machine (the limiter itself gives up at the deadline).
      if (ms > deadlineMs + 5000) failures.push(`${entry.id}: took ${ms} ms, past the ${deadlineMs} ms deadline`);
    }
    assert.deepEqual(failures, []);
    const counts = new Map<string, number>();
    for (const entry of cases) counts.set(entry.tool, (counts.get(entry.tool) ?? 0) + 1);
    reportCount('tool results', cases.length, [...counts].map(([tool, count]) => `${tool} ${count}`).join(', '));
  } finally {
    await built.close();
  }
});
