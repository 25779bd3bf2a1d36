import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createSkeletonActivities } from '../activities/skeleton.activities.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
import { repoRoot } from '../infra/paths.js';
import { searchAttributeDefinitions } from '../workflows/contracts/search-attributes.js';
import { skeletonWorkflowType } from '../workflows/contracts/skeleton.contract.js';
import { inProcessWorker, openContext, uniquePrefix } from './helpers/stack.js';

const run = promisify(execFile);
const cli = path.join(repoRoot, 'dist', 'cli', 'main.js');

async function longhaul(args: string[], env: NodeJS.ProcessEnv) {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, timeout: 180_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

interface StatusJson {
  webUi: string;
  services: { name: string; running: boolean; pid?: number; embedded: boolean }[];
}

test('up twice is harmless, status --json reports every service, and down then up keeps workflows, rows and objects', async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-lifecycle-'));
  // Ports below Linux's ephemeral range (32768–60999): this stack goes down and up mid-run, and a port in that range
  // can be held at that moment as the local end of some other process's connection (SeaweedFS's volume port 37334 was,
  // in a test run beside an evaluation on the main stack). SeaweedFS takes S3, S3 + 1000…1003 and each + 10000 (gRPC):
  // 21333, 22333–22336, 31333, 32333–32336, clear of the shared test stack's (16333, 17333–17336, 26333, 27333–27336).
  const env = {
    LONGHAUL_HOME: home,
    LONGHAUL_TEMPORAL_PORT: '23233',
    LONGHAUL_TEMPORAL_UI_PORT: '24233',
    LONGHAUL_PG_PORT: '25434',
    LONGHAUL_S3_PORT: '21333',
  };
  try {
    const first = await longhaul(['up', '--no-workers', '--json'], env);
    assert.equal(first.code, 0, first.stderr);
    const before = JSON.parse(first.stdout) as StatusJson;
    const second = await longhaul(['up', '--no-workers', '--json'], env);
    assert.equal(second.code, 0, second.stderr);
    const after = JSON.parse(second.stdout) as StatusJson;
    const core = (status: StatusJson) => status.services.filter((service) => !service.name.startsWith('worker-'));
    assert.deepEqual(
      core(after).map((service) => [service.name, service.running, service.pid]),
      core(before).map((service) => [service.name, service.running, service.pid]),
      'the second up restarts nothing',
    );
    assert.deepEqual(
      core(after)
        .map((service) => service.name)
        .sort(),
      ['postgres', 's3', 'temporal'],
    );
    assert.ok(core(after).every((service) => service.running && service.embedded));
    assert.deepEqual(
      after.services
        .filter((service) => service.name.startsWith('worker-'))
        .map((service) => service.name)
        .sort(),
      ['worker-agent', 'worker-gpu-infer', 'worker-gpu-train', 'worker-tools'],
    );

    const ui = await fetch(after.webUi);
    assert.equal(ui.status, 200, 'the Web UI answers');
    const attributes = (await fetch(`${after.webUi}/api/v1/namespaces/default/search-attributes`).then((response) => response.json())) as {
      customAttributes: Record<string, string>;
    };
    for (const { name } of searchAttributeDefinitions)
      assert.ok(name in attributes.customAttributes, `Web UI knows search attribute ${name}`);

    const prefix = uniquePrefix('lifecycle');
    const workflowId = `${prefix}skeleton`;
    let context = await openContext(prefix, env);
    const worker = await inProcessWorker(
      context,
      'agent',
      createSkeletonActivities({ blobs: context.blobs, steps: createPgSkeletonStepStore(context.pool) }),
    );
    await worker.runUntil(
      context.client.workflow.execute(skeletonWorkflowType, { taskQueue: context.queue('agent'), workflowId, args: [{ steps: 5 }] }),
    );
    await context.close();

    assert.equal((await longhaul(['down'], env)).code, 0);
    const stopped = await longhaul(['status', '--json'], env);
    assert.equal(stopped.code, 1, 'status exits 1 when services are down');
    assert.ok((JSON.parse(stopped.stdout) as StatusJson).services.every((service) => !service.running));

    assert.equal((await longhaul(['up', '--no-workers'], env)).code, 0);
    context = await openContext(prefix, env);
    try {
      assert.equal((await context.client.workflow.getHandle(workflowId).describe()).status.name, 'COMPLETED');
      assert.equal((await createPgSkeletonStepStore(context.pool).list(workflowId)).length, 5);
      assert.equal((await context.blobs.list(`skeleton/${workflowId}/`)).length, 5);
    } finally {
      await context.close();
    }
  } finally {
    await longhaul(['down'], env);
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('up refuses a port that another process holds, saying which and how to fix it', async () => {
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as net.AddressInfo).port;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-port-'));
  const shared = await openContext(uniquePrefix('port'));
  try {
    const result = await longhaul(['up', '--no-workers'], {
      LONGHAUL_HOME: home,
      LONGHAUL_TEMPORAL_PORT: String(port),
      DATABASE_URL: shared.config.postgres.url,
      S3_ENDPOINT: shared.config.s3.endpoint,
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, new RegExp(`port ${port} \\(Temporal gRPC\\) is in use by another process`));
    assert.match(result.stderr, /fix: .*LONGHAUL_TEMPORAL_PORT/);
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  } finally {
    await shared.close();
    blocker.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
});
