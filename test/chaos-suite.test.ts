import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runChaos } from '../bench/chaos/chaos-suite.js';
import { testConfig } from './helpers/stack.js';

// The bounded form of `longhaul chaos`: each fault kind once (four worker kills, three server
// restarts, one disk fill), on a stack of its own (its servers are restarted, so not the shared test stack).
test(
  'chaos, bounded: a learner run survives a kill of every worker kind, restarts of every server and a full disk, with no violation',
  { timeout: 900_000 },
  async () => {
    const seed = Number(process.env.LONGHAUL_CHAOS_SEED ?? 14);
    const lines: string[] = [];
    const summary = await runChaos({
      faults: 8,
      seed,
      // Beside the test stack's own ports (Temporal's + 60, clear of the other tests' extra stacks).
      portBase: testConfig().temporal.port + 60,
      toolsDir: testConfig().toolsDir,
      pauseSeconds: [1, 3],
      log: (line) => {
        lines.push(line);
        console.error(`[chaos] ${line}`);
      },
    });
    const kinds = new Set(summary.faults.map((fault) => fault.kind));
    assert.equal(summary.faults.length, 8, `all eight faults ran (seed ${seed}): ${summary.notes.join('; ')}`);
    assert.equal(kinds.size, 8, 'every fault kind once');
    assert.equal(summary.kills, 4);
    assert.equal(summary.server_restarts, 3);
    assert.deepEqual(summary.violationDetails, [], `seed ${seed}`);
    assert.ok(summary.completed > 0 && summary.steps > 0, 'work was done under the faults');
  },
);
