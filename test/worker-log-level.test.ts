/** LONGHAUL_LOG_LEVEL reaches the Temporal SDK's logger in worker processes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { spawnWorker, uniquePrefix } from './helpers/stack.js';

/** Everything a tools worker prints from its start until it has stopped after SIGTERM. */
async function workerOutput(logLevel: string): Promise<string> {
  const worker = spawnWorker('tools', { LONGHAUL_TASK_QUEUE_PREFIX: uniquePrefix(`log-${logLevel}`), LONGHAUL_LOG_LEVEL: logLevel });
  let output = '';
  worker.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  worker.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = once(worker, 'exit');
  try {
    await worker.ready;
  } finally {
    worker.kill('SIGTERM');
    await exited;
  }
  return output;
}

test("LONGHAUL_LOG_LEVEL=debug shows the SDK's debug logs, =warn silences its info lines", async () => {
  const debug = await workerOutput('debug');
  const warn = await workerOutput('warn');
  assert.match(debug, /\[DEBUG\] Creating worker/, debug);
  assert.match(debug, /\[INFO\] Worker state changed/, debug);
  assert.match(debug, /DEBUG.*temporalio_sdk_core/, "SDK Core's own debug lines");
  assert.doesNotMatch(warn, /\[(DEBUG|INFO)\]/, warn);
  assert.doesNotMatch(warn, /temporalio_sdk_core/, warn);
  assert.match(warn, /polling task queue/, 'the worker started');
  assert.match(warn, /\[WARN\] No workflows registered/, 'warnings still print');
});
