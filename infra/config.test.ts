import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadConfig } from './config.js';
import { repoRoot } from './paths.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

test('an empty environment gives the embedded defaults', () => {
  const config = loadConfig({});
  assert.equal(config.temporal.address, '127.0.0.1:7233');
  assert.equal(config.temporal.embedded, true);
  assert.equal(config.postgres.url, 'postgres://longhaul@127.0.0.1:55432/longhaul');
  assert.equal(config.s3.endpoint, 'http://127.0.0.1:8333');
  assert.equal(config.s3.bucket, 'longhaul');
  assert.equal(config.payloadThresholdBytes, 131072);
  assert.equal(config.home, path.join(repoRoot, '.longhaul'));
});

test('user-provided services are respected and marked external', () => {
  const config = loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', DATABASE_URL: 'postgres://u:p@db:5432/x', S3_ENDPOINT: 'https://s3.example.com' });
  assert.equal(config.temporal.embedded, false);
  assert.equal(config.temporal.address, 'temporal.internal:7233');
  assert.equal(config.postgres.embedded, false);
  assert.equal(config.s3.embedded, false);
});

test('a wrong value stops with a message naming the variable and the fix', () => {
  assert.throws(() => loadConfig({ LONGHAUL_PG_PORT: '70000' }), (error: unknown) => {
    assert.ok((error instanceof LonghaulError && error.code === errorTypes.invalidInput));
    assert.match(error.message, /^LONGHAUL_PG_PORT="70000" is invalid: .*Fix or unset LONGHAUL_PG_PORT/);
    return true;
  });
  assert.throws(() => loadConfig({ TEMPORAL_ADDRESS: 'no-port' }), /TEMPORAL_ADDRESS="no-port" is invalid: expected host:port/);
  assert.throws(() => loadConfig({ S3_BUCKET: 'Bad_Bucket' }), /S3_BUCKET="Bad_Bucket" is invalid/);
});

test('the config is immutable', () => {
  const config = loadConfig({});
  assert.throws(() => { (config.temporal as { address: string }).address = 'x'; }, TypeError);
});
