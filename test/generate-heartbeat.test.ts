/**
 * A turn's generation heartbeats from its first moment to its last, while its blob reads and writes
 * wait (bench concurrency at 1,000 in flight: reads queued past the 15 s heartbeat timeout and every
 * generation was retried). The real blob store of the test stack, its reads and writes held at a gate.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import { createTurnGenerator } from '../activities/agent/agent-turn.activities.js';
import { createS3BlobStore } from '../infra/blob/blob-store.s3.js';
import { createScriptedPolicy } from './doubles/scripted-policy.js';
import { testConfig } from './helpers/stack.js';

function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (check()) resolve();
      else if (Date.now() > deadline) reject(new Error(`timed out waiting until ${what}`));
      else setTimeout(poll, 20);
    };
    poll();
  });
}

test('generateTurn heartbeats while its blob reads and writes wait, and stops when it returns', { timeout: 60_000 }, async () => {
  const store = createS3BlobStore(testConfig());
  let open = false;
  let waiting = 0;
  const gate = async () => {
    waiting += 1;
    await until('the gate opens', () => open);
    waiting -= 1;
  };
  const slowBlobs: BlobStore = {
    put: async (...args) => (await gate(), store.put(...args)),
    get: async (key) => (await gate(), store.get(key)),
    exists: async (key) => (await gate(), store.exists(key)),
    list: (prefix) => store.list(prefix),
    delete: (key) => store.delete(key),
  };
  const generate = createTurnGenerator({ blobs: slowBlobs, backend: createScriptedPolicy() });
  const beats: number[] = [];
  const running = generate(
    {
      trajectoryId: `test-heartbeat-${randomUUID().slice(0, 8)}`,
      turn: 0,
      question: 'script:{"turns":1,"answer":"a"}',
      prompt: { protocol: 'tags', contextMode: 'full', recentChars: 25_000, tools: ['search', 'access', 'answer'], template: 'chatml' },
      maxNewTokens: 64,
      maxCallsPerTurn: 1,
      temperature: 0,
      seed: 0,
      policyVersion: 0,
    },
    { heartbeat: () => beats.push(Date.now()) },
  );
  // Held at its first blob read, it heartbeats every second all the same.
  await until('the first read waits at the gate', () => waiting > 0);
  await until('two heartbeats while the first read waits', () => beats.length >= 2, 5_000);
  assert.ok(waiting > 0, 'the read was released early: the test proves nothing');
  open = true;
  const result = await running;
  assert.equal(result.action.kind, 'answer');
  const after = beats.length;
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.equal(beats.length, after, 'heartbeats went on after the generation returned');
});
