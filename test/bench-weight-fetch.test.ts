/**
 * `longhaul bench weight-fetch` on the test stack: the tiny model published as a version, fetched both ways; the
 * ONNX backend's fetch leaves out the PyTorch weights, and the figures say so.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { weightFetchBenchmark } from '../cli/commands/bench-weight-fetch.command.js';
import { modelFiles } from '../gpu/infer/model-files.js';
import { publishPolicyVersion } from '../gpu/infer/policy-store.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { tinyModelDir } from './doubles/test-model.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

test(
  'bench weight-fetch times every file, the files the ONNX backend reads, and those on a thread, beside decoding generations',
  { timeout: 300_000 },
  async () => {
    const context = await openContext(uniquePrefix('weight-fetch'));
    const lines: string[] = [];
    const log = console.log;
    try {
      const dir = await tinyModelDir();
      const version = 3_000_000 + Math.floor(Math.random() * 1_000_000);
      await publishPolicyVersion({ blobs: context.blobs, versions: createPgPolicyVersionStore(context.pool), modelDir: dir, version });
      console.log = (line: string) => lines.push(line);
      assert.equal(await weightFetchBenchmark.run(['--version', String(version), '--reps', '2', '--decode', '2', '--json']), 0);
    } finally {
      console.log = log;
      await context.close();
    }
    const result = JSON.parse(lines.at(-1)!) as {
      version: number;
      all: { bytes: number; files: number; seconds: number[] };
      served: { bytes: number; files: number; seconds: number[] };
      served_thread: { bytes: number; files: number; seconds: number[] };
      ratio: number;
      thread_ratio: number;
      decode: number;
      decoded_tokens: number;
    };
    const files = modelFiles(await tinyModelDir());
    assert.equal(result.all.files, files.length);
    assert.equal(result.served.files, files.length - 1, 'model.safetensors left out');
    assert.ok(result.served.bytes < result.all.bytes);
    assert.equal(result.all.seconds.length, 2);
    assert.equal(result.served.seconds.length, 2);
    assert.ok(result.ratio > 0);
    assert.deepEqual(
      { files: result.served_thread.files, bytes: result.served_thread.bytes, reps: result.served_thread.seconds.length },
      { files: result.served.files, bytes: result.served.bytes, reps: 2 },
      'the thread fetches the same files',
    );
    assert.ok(result.thread_ratio > 0);
    assert.equal(result.decode, 2);
    assert.ok(result.decoded_tokens > 0, 'the generations decoded while the fetches ran');
  },
);
