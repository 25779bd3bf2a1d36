/**
 * Helpers for tests against the real stack that infra/test.sh starts (its env names the ports).
 * Each test isolates itself with a unique task-queue prefix, so workers never steal each other's tasks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { loadConfig, type Config } from '../../infra/config.js';
import { createS3BlobStore } from '../../infra/blob/blob-store.s3.js';
import { createPool } from '../../infra/postgres/database.js';
import { connectClient, connectWorker, dataConverter } from '../../infra/temporal/connection.js';
import { repoRoot, workflowBundlePath } from '../../infra/paths.js';
import { taskQueueName, type QueueRole } from '../../workflows/contracts/queues.js';

export function uniquePrefix(label: string): string {
  return `test-${label}-${randomUUID().slice(0, 8)}-`;
}

export function testConfig(overrides: NodeJS.ProcessEnv = {}): Config {
  return loadConfig({ ...process.env, ...overrides });
}

export interface TestContext {
  readonly config: Config;
  readonly client: Client;
  readonly blobs: ReturnType<typeof createS3BlobStore>;
  readonly pool: ReturnType<typeof createPool>;
  readonly queue: (role: QueueRole) => string;
  close(): Promise<void>;
}

export async function openContext(prefix: string, overrides: NodeJS.ProcessEnv = {}): Promise<TestContext> {
  const config = testConfig({ ...overrides, LONGHAUL_TASK_QUEUE_PREFIX: prefix });
  const blobs = createS3BlobStore(config);
  const client = await connectClient(config, blobs);
  const pool = createPool(config.postgres.url, 4);
  return {
    config,
    client,
    blobs,
    pool,
    queue: (role) => taskQueueName(role, prefix),
    async close() {
      await pool.end();
      await client.connection.close();
    },
  };
}

/** A worker process of the real entry point (dist/workers/<role>.worker.js), killable with SIGKILL. */
export function spawnWorker(role: QueueRole, env: NodeJS.ProcessEnv): ChildProcess & { ready: Promise<void> } {
  const child = spawn(process.execPath, [path.join(repoRoot, 'dist', 'workers', `${role}.worker.js`)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }) as ChildProcess & { ready: Promise<void> };
  let output = '';
  child.ready = new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('polling task queue')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${role} worker exited with ${code} before it was ready:\n${output}`)));
  });
  return child;
}

/** An in-process worker over the prebuilt bundle, for tests that need no crash. */
export async function inProcessWorker(context: TestContext, role: QueueRole, activities: object, withWorkflows = true): Promise<Worker> {
  return Worker.create({
    connection: await connectWorker(context.config),
    namespace: context.config.temporal.namespace,
    taskQueue: context.queue(role),
    activities,
    dataConverter: dataConverter(context.config, context.blobs),
    ...(withWorkflows ? { workflowBundle: { codePath: workflowBundlePath } } : {}),
  });
}

export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** Whether something accepts TCP connections on a local port. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
