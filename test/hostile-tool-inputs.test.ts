/**
 * Hostile-input corpus, boundary "tool inputs" (test/fixtures/hostile/tool-inputs.json): inputs that
 * fail a tool's schema — wrong types, missing and extra fields, oversized strings, NUL bytes, lone
 * UTF-16 surrogates, inputs that are not objects — for every tool the tools worker registers (the
 * registry is built from configuration with web search, web fetch and sql turned on). Each call goes
 * through the real tools activity and must come back as an invalid result (the agent reads an
 * observation that names the field) without the tool running: no request reaches the local web
 * server, and no plug-in's execute is entered.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { ToolRegistry, type AnyToolPlugin } from '../activities/tools/registry.js';
import { createToolActivities } from '../activities/tools/run-tools.activities.js';
import { buildToolRegistry } from '../composition/tool-registry.js';
import { loadConfig } from '../infra/config.js';
import { openSearchDatabase } from '../infra/search/open.js';
import { createPgToolCallStore } from '../infra/search/tool-call-store.pg.js';
import { expand, loadCorpus, reportCount, type CorpusCase } from './helpers/hostile-corpus.js';
import { testConfig } from './helpers/stack.js';

interface ToolInputCase extends CorpusCase {
  readonly kind: string;
  readonly tool: string;
  readonly input: unknown;
  /** The field the observation names ("input" for the input as a whole). */
  readonly names?: string;
  /** Text the observation contains. */
  readonly observation?: string;
}

const cases = loadCorpus<ToolInputCase>('tool-inputs');
/** Every registered tool has a case of each of these kinds. */
const requiredKinds = ['wrong-type', 'missing-field', 'extra-field', 'oversized', 'nul-byte', 'lone-surrogate'];

const pool = await openSearchDatabase(testConfig(), 2);
const requests: string[] = [];
let server: http.Server;
let base = '';

before(async () => {
  server = http.createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"results":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await pool.end();
});

test(`the hostile tool-input corpus (${cases.length} cases): every schema failure of every registered tool is an invalid result naming the field, and no tool runs`, async () => {
  const readerUrl = new URL(testConfig().postgres.url);
  readerUrl.username = 'longhaul_sql_reader';
  const settings = loadConfig({
    ...process.env,
    LONGHAUL_WEB_SEARCH_URL: `${base}/search`,
    LONGHAUL_WEB_FETCH: 'on',
    LONGHAUL_WEB_FETCH_ALLOW: '127.0.0.1',
    LONGHAUL_SQL_TOOL_URL: readerUrl.toString(),
  });
  const built = buildToolRegistry(settings, pool);
  const executed: string[] = [];
  const names = built.registry.names();
  const watched = new ToolRegistry(
    names.map((name): AnyToolPlugin => {
      const plugin = built.registry.get(name)!;
      return {
        ...plugin,
        execute: (input: unknown, context) => {
          executed.push(`${name} ${JSON.stringify(input).slice(0, 100)}`);
          return plugin.execute(input, context);
        },
      };
    }),
  );
  const activities = createToolActivities({ registry: watched, store: createPgToolCallStore(pool), cacheTtlMs: 0 });
  try {
    assert.deepEqual([...names].sort(), ['access', 'answer', 'search', 'sql', 'web_fetch', 'web_search']);
    for (const name of names)
      for (const kind of requiredKinds)
        assert.ok(
          cases.some((entry) => entry.tool === name && entry.kind === kind),
          `tool-inputs.json has no "${kind}" case for the registered tool ${name}: add one`,
        );
    const kinds = new Map<string, number>();
    const failures: string[] = [];
    for (const entry of cases) {
      const [result] = await activities.runTools({
        key: `hostile-tool-inputs/${randomUUID()}`,
        calls: [{ tool: entry.tool, input: expand(entry.input) }],
      });
      kinds.set(entry.kind, (kinds.get(entry.kind) ?? 0) + 1);
      const shown = JSON.stringify(result?.observation ?? null).slice(0, 300);
      if (!result) failures.push(`${entry.id}: no result`);
      else if (!result.invalid || result.ok) failures.push(`${entry.id}: not an invalid result (ok=${result.ok}): ${shown}`);
      else if (!result.observation.startsWith('Error: '))
        failures.push(`${entry.id}: the observation does not say it is an error: ${shown}`);
      else if (entry.names !== undefined && !result.observation.includes(`invalid input for ${entry.tool}: ${entry.names}:`))
        failures.push(`${entry.id}: the observation does not name ${entry.names}: ${shown}`);
      else if (entry.observation !== undefined && !result.observation.includes(entry.observation))
        failures.push(`${entry.id}: the observation does not say ${JSON.stringify(entry.observation)}: ${shown}`);
      else if (result.observation.length > 1000)
        failures.push(`${entry.id}: the observation is ${result.observation.length} characters long`);
    }
    assert.deepEqual(failures, []);
    assert.deepEqual(executed, [], 'no tool ran for an invalid input');
    assert.deepEqual(requests, [], 'no request reached the web server');
    reportCount('tool inputs', cases.length, [...kinds].map(([kind, count]) => `${kind} ${count}`).join(', '));
  } finally {
    await built.close();
  }
});
