/**
 * Encrypted payloads and secrets (issue 14): the AES-GCM codec rotates keys by id; with encryption on,
 * a real tools worker (its own process) runs a web_search whose API key is planted in its environment,
 * and the key appears nowhere in the Temporal history, the worker's logs, the bucket's blobs, the
 * tool tables or `longhaul config`; neither does the search text, except through the codec server,
 * which decrypts for the Web UI's origin with the key and refuses without it.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Worker } from '@temporalio/worker';
import proto from '@temporalio/proto';
import type { Payload } from '@temporalio/common';
import { createEncryptionPayloadCodec } from '../infra/temporal/encryption-payload-codec.js';
import { createCodecServer } from '../infra/temporal/codec-server.js';
import { connectWorker, dataConverter, payloadCodecs } from '../infra/temporal/connection.js';
import { repoRoot } from '../infra/paths.js';
import type { ToolsOnceResult } from './fixtures/tools-once.workflow.js';
import { openContext, spawnWorker, uniquePrefix } from './helpers/stack.js';

const toolsOnceFixture = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'tools-once.workflow.js');
const key = (id: string) => ({ id, key: new Uint8Array(randomBytes(32)) });
const keyText = (entry: { id: string; key: Uint8Array }) => `${entry.id}=${Buffer.from(entry.key).toString('base64')}`;
const payload = (text: string): Payload => ({
  metadata: { encoding: new TextEncoder().encode('json/plain') },
  data: new TextEncoder().encode(text),
});
const text = (value: Payload) => new TextDecoder().decode(value.data ?? new Uint8Array());

test('keys rotate: the newest encrypts, every listed key decrypts, a dropped key or a changed byte is refused by name', async () => {
  const [first, second] = [key('2026-01'), key('2026-06')];
  const old = createEncryptionPayloadCodec([first]);
  const rotated = createEncryptionPayloadCodec([first, second]);
  const [sealedOld] = await old.encode([payload('{"question":"old"}')]);
  const [sealedNew] = await rotated.encode([payload('{"question":"new"}')]);
  assert.equal(new TextDecoder().decode(sealedNew!.metadata!['encryption-key-id']), '2026-06');
  assert.ok(!Buffer.from(sealedNew!.data!).includes('question'), 'ciphertext, not text');
  const [openedOld, openedNew] = await rotated.decode([sealedOld!, sealedNew!]);
  assert.deepEqual([text(openedOld!), text(openedNew!)], ['{"question":"old"}', '{"question":"new"}']);
  await assert.rejects(
    createEncryptionPayloadCodec([second]).decode([sealedOld!]),
    /encrypted with key "2026-01", which is not in LONGHAUL_PAYLOAD_ENCRYPTION_KEYS/,
  );
  const tampered = { ...sealedNew!, data: Uint8Array.from(sealedNew!.data!, (byte, index) => (index === 20 ? byte ^ 1 : byte)) };
  await assert.rejects(rotated.decode([tampered]), /failed authentication/);
  const [plain] = await rotated.decode([payload('"written before encryption"')]);
  assert.equal(text(plain!), '"written before encryption"');
});

test(
  'with encryption on, a planted API key and the payload text are absent from history, logs, blobs and tables; the codec server decrypts',
  { timeout: 180_000 },
  async () => {
    const secret = `sk-planted-${randomUUID()}`;
    const marker = `marker-${randomUUID()}`;
    const keys = [key('old'), key('current')];
    const seen: string[] = [];
    // A Serper-compatible search API that answers only with the planted key, with a long snippet (so the result goes to the bucket).
    const api = http.createServer((request, response) => {
      seen.push(String(request.headers['x-api-key']));
      if (request.headers['x-api-key'] !== secret) return void response.writeHead(401).end();
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ organic: [{ title: `Result for ${marker}`, link: 'https://example.org/a', snippet: `${marker} `.repeat(200) }] }),
      );
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    const environment = {
      LONGHAUL_WEB_SEARCH_URL: `http://127.0.0.1:${(api.address() as AddressInfo).port}/search`,
      LONGHAUL_WEB_SEARCH_API: 'serper',
      LONGHAUL_WEB_SEARCH_API_KEY: secret,
      LONGHAUL_PAYLOAD_ENCRYPTION_KEYS: keys.map(keyText).join(','),
      LONGHAUL_PAYLOAD_THRESHOLD_BYTES: '1024',
      LONGHAUL_LOG_LEVEL: 'debug',
    };
    const prefix = uniquePrefix('secrets');
    const context = await openContext(prefix, environment);
    const worker = spawnWorker('tools', { ...environment, LONGHAUL_TASK_QUEUE_PREFIX: prefix });
    let logs = '';
    worker.stdout?.on('data', (chunk: Buffer) => (logs += chunk.toString()));
    worker.stderr?.on('data', (chunk: Buffer) => (logs += chunk.toString()));
    const workflows = await Worker.create({
      connection: await connectWorker(context.config),
      namespace: context.config.temporal.namespace,
      taskQueue: context.queue('agent'),
      workflowsPath: toolsOnceFixture,
      dataConverter: dataConverter(context.config, context.blobs),
    });
    const running = workflows.run();
    after(() => new Promise<void>((resolve) => api.close(() => resolve())));
    try {
      await worker.ready;
      const workflowId = `${prefix}search`;
      const turnKey = `secrets/${randomUUID()}`;
      const result = (await context.client.workflow.execute('toolsOnce', {
        taskQueue: context.queue('agent'),
        workflowId,
        args: [{ queue: context.queue('tools'), run: { key: turnKey, calls: [{ tool: 'web_search', input: { query: marker } }] } }],
      })) as ToolsOnceResult;
      assert.equal(result.results[0]!.ok, true, result.results[0]!.observation);
      assert.ok(result.results[0]!.observation.includes(marker));
      assert.ok(seen.includes(secret), 'the worker sent the planted key to the API');

      // History as the server stores it: every payload sealed, neither the key nor the text readable.
      const history = await context.client.workflow.getHandle(workflowId).fetchHistory();
      const raw = Buffer.from(proto.temporal.api.history.v1.History.encode(history).finish());
      assert.ok(!raw.includes(secret), 'the key is not in the history');
      assert.ok(!raw.includes(marker), 'the payload text is not readable in the history');
      const completed = history.events!.find((event) => event.workflowExecutionCompletedEventAttributes)!;
      const resultPayloads = completed.workflowExecutionCompletedEventAttributes!.result!.payloads! as Payload[];
      const encodings = resultPayloads.map((item) => new TextDecoder().decode(item.metadata!.encoding));
      assert.deepEqual(encodings, ['longhaul/blob-ref'], 'the large result went to the bucket (sealed first)');

      // The bucket: the payload blobs hold ciphertext only; no blob holds the key.
      const blobKeys = await context.blobs.list('payloads/');
      assert.ok(blobKeys.length > 0);
      for (const blobKey of blobKeys) {
        const body = await context.blobs.get(blobKey);
        assert.ok(!body.includes(secret), `${blobKey} holds the key`);
        assert.ok(!body.includes(marker), `${blobKey} holds readable payload text`);
      }

      // Worker logs (at debug level) and the tool tables never hold the key.
      assert.ok(logs.length > 0);
      assert.ok(!logs.includes(secret), 'the key is not in the worker log');
      const rows = await context.pool.query<{ text: string }>(
        `SELECT row_to_json(t)::text AS text FROM tool_calls t WHERE turn_key = $1
       UNION ALL SELECT row_to_json(c)::text FROM tool_cache c WHERE input_key LIKE $2`,
        [turnKey, `%${marker}%`],
      );
      assert.ok(rows.rows.length > 0);
      assert.ok(rows.rows.every((row) => !row.text.includes(secret)));
      const printed = await promisify(execFile)(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), 'config'], {
        env: { ...process.env, ...environment },
      });
      assert.ok(
        !printed.stdout.includes(secret) && !printed.stdout.includes(keyText(keys[1]!).split('=')[1]!),
        'longhaul config masks secrets',
      );

      // The codec server decrypts for the Web UI's origin with the key (blob reference included), and refuses without it.
      const origin = 'http://127.0.0.1:8233';
      const codec = createCodecServer(payloadCodecs(context.config, context.blobs), { origins: [origin] });
      await new Promise<void>((resolve) => codec.listen(0, '127.0.0.1', resolve));
      const endpoint = `http://127.0.0.1:${(codec.address() as AddressInfo).port}`;
      const body = JSON.stringify({
        payloads: resultPayloads.map((item) => ({
          metadata: Object.fromEntries(
            Object.entries(item.metadata!).map(([name, value]) => [name, Buffer.from(value!).toString('base64')]),
          ),
          data: Buffer.from(item.data!).toString('base64'),
        })),
      });
      const decoded = await fetch(`${endpoint}/default/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin },
        body,
      });
      assert.equal(decoded.status, 200);
      assert.equal(decoded.headers.get('access-control-allow-origin'), origin);
      const opened = (await decoded.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
      assert.equal(Buffer.from(opened.payloads[0]!.metadata.encoding!, 'base64').toString(), 'json/plain');
      assert.ok(Buffer.from(opened.payloads[0]!.data, 'base64').toString().includes(marker));
      const preflight = await fetch(`${endpoint}/decode`, { method: 'OPTIONS', headers: { origin: 'http://evil.example' } });
      assert.equal(preflight.headers.get('access-control-allow-origin'), null, 'another origin gets no CORS grant');
      codec.close();
      const keyless = createCodecServer(payloadCodecs({ ...context.config, payloadKeys: [key('other')] }, context.blobs), { origins: [] });
      await new Promise<void>((resolve) => keyless.listen(0, '127.0.0.1', resolve));
      const refused = await fetch(`http://127.0.0.1:${(keyless.address() as AddressInfo).port}/decode`, { method: 'POST', body });
      keyless.close();
      assert.equal(refused.status, 400);
      assert.match(
        ((await refused.json()) as { error: string }).error,
        /encrypted with key "current", which is not in LONGHAUL_PAYLOAD_ENCRYPTION_KEYS/,
      );
    } finally {
      worker.kill('SIGTERM');
      workflows.shutdown();
      await running;
      await context.close();
    }
  },
);
