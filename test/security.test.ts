/**
 * Security (issue 14): DNS rebinding and redirects to private targets refused by web fetches (a real
 * DNS server stub on UDP), and the read-only `sql` tool enforced by a database role.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createSqlTool } from '../activities/tools/sql.tool.js';
import { loadConfig } from '../infra/config.js';
import { createPgReadOnlySql } from '../infra/search/read-only-sql.pg.js';
import { createHttpPageFetcher, WebFetchError } from '../infra/search/web-fetch.http.js';
import { startDnsStub, type DnsStub } from './helpers/dns-stub.js';
import { testConfig } from './helpers/stack.js';

// Two servers on one port: 127.0.0.2 plays a public site (allowed below), 127.0.0.1 an internal service.
let publicSite: http.Server;
let internal: http.Server;
let port = 0;
const internalRequests: string[] = [];
let dns: DnsStub;

before(async () => {
  publicSite = http.createServer((request, response) => {
    if (request.url === '/to-internal-name') response.writeHead(302, { location: `http://inside.test:${port}/secret` }).end();
    else if (request.url === '/to-internal-ip') response.writeHead(301, { location: `http://127.0.0.1:${port}/secret` }).end();
    else if (request.url === '/to-metadata') response.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    else response.writeHead(200, { 'content-type': 'text/plain' }).end('public page');
  });
  await new Promise<void>((resolve) => publicSite.listen(0, '127.0.0.2', resolve));
  port = (publicSite.address() as AddressInfo).port;
  internal = http.createServer((request, response) => {
    internalRequests.push(request.url ?? '');
    response.writeHead(200, { 'content-type': 'text/plain' }).end('internal secret');
  });
  await new Promise<void>((resolve) => internal.listen(port, '127.0.0.1', resolve));
  dns = await startDnsStub({
    // Public on the first look-up, private on every later one: a rebinding attack.
    'rebind.test': ['127.0.0.2', '127.0.0.1'],
    'inside.test': ['127.0.0.1'],
    'site.test': ['127.0.0.2'],
  });
});
after(async () => {
  await dns.close();
  for (const server of [publicSite, internal]) await new Promise<void>((resolve) => server.close(() => resolve()));
});

function fetcher() {
  const settings = loadConfig({ LONGHAUL_WEB_FETCH_ALLOW: '127.0.0.2', LONGHAUL_WEB_FETCH_DNS_SERVERS: dns.address });
  return createHttpPageFetcher(settings.tools.webFetch);
}

async function refusal(promise: Promise<unknown>): Promise<WebFetchError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof WebFetchError, `expected a refusal, got ${String(error)}`);
  return error;
}

test('DNS rebinding: the connection goes to the address that was checked, and the next look-up (private) is refused', async () => {
  const pages = fetcher();
  const first = await pages.fetch(`http://rebind.test:${port}/page`);
  assert.equal(first.text, 'public page');
  assert.equal(dns.lookups.get('rebind.test'), 1, 'one look-up per fetch: the connection did not resolve the name again');
  const second = await refusal(pages.fetch(`http://rebind.test:${port}/page`));
  assert.equal(second.code, 'REFUSED');
  assert.match(second.message, /rebind\.test resolves to 127\.0\.0\.1, a private, loopback or link-local address/);
  assert.deepEqual(internalRequests, [], 'the internal service never saw a request');
});

test('redirects to a private name, a private IP or cloud metadata are refused before any request reaches them', async () => {
  const pages = fetcher();
  for (const [path, target] of [
    ['/to-internal-name', 'inside.test resolves to 127.0.0.1'],
    ['/to-internal-ip', '127.0.0.1 resolves to 127.0.0.1'],
    ['/to-metadata', '169.254.169.254 resolves to 169.254.169.254'],
  ] as const) {
    const error = await refusal(pages.fetch(`http://site.test:${port}${path}`));
    assert.equal(error.code, 'REFUSED', path);
    assert.ok(error.message.includes(target), `${path}: ${error.message}`);
    assert.equal(error.transient, false, 'a refusal is never retried');
  }
  assert.deepEqual(internalRequests, []);
});

test('the sql tool is read-only because its database role is: writes fail at the database, other schemas are closed', async () => {
  const owner = new pg.Pool({ connectionString: testConfig().postgres.url, max: 1 });
  const readerUrl = new URL(testConfig().postgres.url);
  readerUrl.username = 'longhaul_sql_reader';
  const reader = new pg.Pool({ connectionString: readerUrl.toString(), max: 1 });
  const table = `facts_${randomUUID().slice(0, 8)}`;
  try {
    await owner.query(`CREATE TABLE sql_tool.${table} (name text, value int)`);
    await owner.query(`INSERT INTO sql_tool.${table} VALUES ('answer', 42)`);
    const tool = createSqlTool(createPgReadOnlySql(reader));
    const read = await tool.execute({ query: `SELECT name, value FROM ${table}` });
    assert.equal(read.observation, '1 rows\nname | value\nanswer | 42');
    // The role, not the transaction mode: a READ WRITE transaction as the role still cannot write.
    const denied = async (sql: string) => {
      const client = await reader.connect();
      try {
        await client.query('BEGIN READ WRITE');
        return await client.query(sql).then(
          () => 'allowed',
          (error: Error) => error.message,
        );
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
    };
    assert.equal(await denied(`INSERT INTO sql_tool.${table} VALUES ('x', 1)`), `permission denied for table ${table}`);
    assert.equal(await denied(`UPDATE sql_tool.${table} SET value = 0`), `permission denied for table ${table}`);
    assert.equal(await denied(`CREATE TABLE sql_tool.evil_${table} (x int)`), 'permission denied for schema sql_tool');
    assert.equal(await denied('CREATE TABLE public.evil (x int)'), 'permission denied for schema public');
    assert.equal(await denied('SELECT count(*) FROM public.tool_calls'), 'permission denied for table tool_calls');
    // A role that could write is refused by the adapter before any query runs.
    const refused = await createSqlTool(createPgReadOnlySql(owner))
      .execute({ query: 'SELECT 1' })
      .then(
        () => '',
        (error: Error) => error.message,
      );
    assert.match(refused, /LONGHAUL_SQL_TOOL_URL connects as role "longhaul", which is a superuser; the sql tool needs a read-only role/);
  } finally {
    await owner.query(`DROP TABLE IF EXISTS sql_tool.${table}`);
    await owner.end();
    await reader.end();
  }
});
