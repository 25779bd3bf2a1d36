import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Payload } from '@temporalio/common';
import { blobNotFound, type BlobStore } from '../../activities/ports/blob-store.port.js';
import { BLOB_REFERENCE_ENCODING, createBlobPayloadCodec } from './blob-payload-codec.js';

function memoryStore(): BlobStore & { objects: Map<string, Buffer> } {
  const objects = new Map<string, Buffer>();
  return {
    objects,
    async put(key, body) {
      objects.set(key, Buffer.from(body));
    },
    async get(key) {
      const value = objects.get(key);
      if (!value) throw blobNotFound(key);
      return value;
    },
    async exists(key) {
      return objects.has(key);
    },
    async list(prefix) {
      return [...objects.keys()].filter((key) => key.startsWith(prefix)).sort();
    },
    async delete(key) {
      objects.delete(key);
    },
  };
}

const payload = (size: number): Payload => ({
  metadata: { encoding: new TextEncoder().encode('json/plain') },
  data: new Uint8Array(size).fill(7),
});

test('payloads at or under the threshold pass through untouched', async () => {
  const store = memoryStore();
  const codec = createBlobPayloadCodec(store, 1024);
  const small = payload(1024);
  assert.deepEqual(await codec.encode([small]), [small]);
  assert.equal(store.objects.size, 0);
});

test('a payload over the threshold becomes a reference and decodes back to identical bytes and metadata', async () => {
  const store = memoryStore();
  const codec = createBlobPayloadCodec(store, 1024);
  const large = payload(5000);
  const [encoded] = await codec.encode([large]);
  assert.equal(new TextDecoder().decode(encoded!.metadata!.encoding!), BLOB_REFERENCE_ENCODING);
  assert.ok(encoded!.data!.byteLength < 200);
  assert.equal(store.objects.size, 1);
  const [decoded] = await codec.decode([encoded!]);
  assert.deepEqual(Buffer.from(decoded!.data!), Buffer.from(large.data!));
  assert.equal(new TextDecoder().decode(decoded!.metadata!.encoding!), 'json/plain');
});

test('identical large payloads are stored once (content-addressed)', async () => {
  const store = memoryStore();
  const codec = createBlobPayloadCodec(store, 10);
  await codec.encode([payload(100), payload(100)]);
  assert.equal(store.objects.size, 1);
});

test('a corrupted blob is detected on decode instead of returning wrong data', async () => {
  const store = memoryStore();
  const codec = createBlobPayloadCodec(store, 10);
  const [encoded] = await codec.encode([payload(100)]);
  const [key] = [...store.objects.keys()];
  store.objects.set(key!, Buffer.from('tampered'));
  await assert.rejects(codec.decode([encoded!]), /is corrupt: sha256/);
});
