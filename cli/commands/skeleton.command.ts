import fs from 'node:fs';
import path from 'node:path';
import { config } from '../../infra/config.js';
import { stackUp } from '../../infra/services/stack.js';
import { openServices } from '../../composition/services.js';
import { taskQueueName } from '../../workflows/contracts/queues.js';
import {
  skeletonStateQuery,
  skeletonWorkflowType,
  payloadRoundTripWorkflowType,
  type SkeletonResult,
  type SkeletonState,
  type PayloadRoundTripResult,
} from '../../workflows/contracts/skeleton.contract.js';
import { integerFlag, parseFlags } from '../arguments.js';
import type { Command } from '../command.js';
import { followWorkflow } from '../follow-workflow.js';
import { progressBar } from '../progress.js';

export const skeletonCommand: Command = {
  name: 'skeleton',
  summary: 'the durable skeleton end to end: N steps, each one blob and one row, plus a 5 MiB payload',
  usage: `longhaul skeleton [--steps N] [--step-delay-ms MS]

Starts the stack, then runs the durable skeleton trajectory (N steps, each writing one blob and one
Postgres row) and a 5 MiB payload round trip, checks that every step left exactly one row and one
object, and writes a report to LONGHAUL_HOME/reports/. Watch it in the Web UI while it runs.
A quick check that the stack is durable and healthy.

  --steps N           steps of the skeleton trajectory (default 50)
  --step-delay-ms MS  simulated work per step (default 100)`,
  async run(args) {
    const { values } = parseFlags(args, { steps: { type: 'string' }, 'step-delay-ms': { type: 'string' } });
    const steps = integerFlag(values.steps, 'steps', 50, 1, 100_000);
    const stepDelayMs = integerFlag(values['step-delay-ms'], 'step-delay-ms', 100, 0, 60_000);
    const settings = config();
    console.error('starting the stack…');
    await stackUp(settings, { workers: true, onStarted: (name) => console.error(`  ✓ ${name}`) });
    if (settings.temporal.embedded)
      console.error(`Web UI: http://127.0.0.1:${settings.temporal.uiPort}/namespaces/${settings.temporal.namespace}/workflows`);

    const services = openServices(settings);
    try {
      const { blobs } = services;
      const client = await services.client();
      const taskQueue = taskQueueName('agent', settings.taskQueuePrefix);
      const workflowId = `demo-skeleton-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      const handle = await client.workflow.start(skeletonWorkflowType, {
        taskQueue,
        workflowId,
        args: [{ steps, stepDelayMs, label: 'demo' }],
      });
      const bar = progressBar('skeleton trajectory', steps);
      const startedAt = Date.now();
      const result = await followWorkflow<SkeletonResult, SkeletonState>(handle, {
        query: skeletonStateQuery,
        intervalMs: 300,
        onState: (state) => bar.update(state.completedSteps),
      });
      bar.finish();
      const seconds = (Date.now() - startedAt) / 1000;

      const rows = await services.skeletonSteps.list(workflowId);
      const objects = await blobs.list(`skeleton/${workflowId}/`);

      const payload = (await client.workflow.execute(payloadRoundTripWorkflowType, {
        taskQueue,
        workflowId: `${workflowId}-payload`,
        args: [{ bytes: 5 * 1024 * 1024 }],
      })) as PayloadRoundTripResult;
      const report = {
        workflowId,
        steps: result.steps,
        rows: rows.length,
        objects: objects.length,
        seconds,
        largePayload: { bytes: payload.bytes, sha256: payload.sha256 },
        ok: rows.length === steps && objects.length === steps && payload.bytes === 5 * 1024 * 1024,
      };
      const reportDir = path.join(settings.home, 'reports');
      fs.mkdirSync(reportDir, { recursive: true });
      const reportPath = path.join(reportDir, `${workflowId}.json`);
      fs.writeFileSync(reportPath, JSON.stringify(report, null, 2));
      console.log(
        `skeleton: ${result.steps} steps in ${seconds.toFixed(1)} s → ${rows.length} rows, ${objects.length} objects; 5 MiB payload round trip ok (sha256 ${payload.sha256.slice(0, 12)}…)`,
      );
      console.log(`report: ${reportPath}`);
      return report.ok ? 0 : 1;
    } finally {
      await services.close();
    }
  },
};
