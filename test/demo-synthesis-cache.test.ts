/**
 * The demo's synthesized-dataset cache against the real blob store: a second run with the same key
 * reuses the first run's dataset (and says which run made it), another seed or corpus version does
 * not, --fresh-synthesis makes a new one and the entry then points at it, and an entry whose dataset
 * blob is gone or was changed is not used.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { demoPlan } from '../cli/demo/plan.js';
import { synthesisCacheKey, synthesizeOrReuse } from '../cli/demo/synthesis-cache.js';
import type { SynthesizedSet } from '../cli/demo/stages.js';
import { openContext, uniquePrefix } from './helpers/stack.js';

test(
  'a demo run reuses the dataset an earlier run synthesized with the same corpus, policy, settings and seed',
  { timeout: 60_000 },
  async () => {
    const prefix = uniquePrefix('demo-cache');
    const context = await openContext(prefix);
    try {
      const plan = demoPlan({});
      const corpusVersion = `corpus-test-${prefix}`;
      const key = synthesisCacheKey({ corpusVersion, policyFiles: 'policies/v000000/', synthesis: plan.synthesis });
      let made = 0;
      // Stands in for the synthesisRun workflow: publishes a dataset blob of the run and returns its set.
      const makeFor = (runId: string) => async (): Promise<SynthesizedSet[]> => {
        made += 1;
        const datasetId = `${prefix}${runId}-synth-h1`;
        const blobKey = `synthesis/${datasetId}/dataset.jsonl`;
        await context.blobs.put(blobKey, `{"id":"q-${runId}","question":"Which?","answers":["a"]}\n`, 'application/x-ndjson');
        return [{ hops: 1, datasetId, blobKey, candidates: 3, accepted: 1, rejectionsByReason: {}, wallSeconds: 1 }];
      };
      const run = async (runId: string, options: { key?: string; fresh?: boolean } = {}) => {
        const lines: string[] = [];
        const sets = await synthesizeOrReuse(
          context.blobs,
          { key: options.key ?? key, runId, fresh: options.fresh ?? false, log: (line) => lines.push(line) },
          makeFor(runId),
        );
        return { sets, lines };
      };

      const first = await run('first');
      assert.equal(made, 1);
      assert.equal(first.sets[0]!.reusedFrom, undefined);
      assert.match(first.lines[0]!, /nothing to reuse \(no earlier run with these settings\)/);

      const second = await run('second');
      assert.equal(made, 1, 'the second run did not synthesize');
      assert.equal(second.sets[0]!.datasetId, first.sets[0]!.datasetId);
      assert.equal(second.sets[0]!.reusedFrom, 'first');
      assert.equal(
        second.lines[0],
        `synthesis: reused dataset ${first.sets[0]!.datasetId} (made by run first); --fresh-synthesis makes a new one`,
      );

      // Anything that decides the dataset gives another key: seed, settings, corpus, policy weights.
      const keys = new Set([
        key,
        synthesisCacheKey({ corpusVersion, policyFiles: 'policies/v000000/', synthesis: demoPlan({ seed: '14' }).synthesis }),
        synthesisCacheKey({
          corpusVersion,
          policyFiles: 'policies/v000000/',
          synthesis: demoPlan({ 'difficulty-samples': '8' }).synthesis,
        }),
        synthesisCacheKey({ corpusVersion: `${corpusVersion}-changed`, policyFiles: 'policies/v000000/', synthesis: plan.synthesis }),
        synthesisCacheKey({ corpusVersion, policyFiles: 'policies/run/v000001/', synthesis: plan.synthesis }),
      ]);
      assert.equal(keys.size, 5);
      assert.equal(
        synthesisCacheKey({ corpusVersion, policyFiles: 'policies/v000000/', synthesis: demoPlan({ 'fresh-synthesis': true }).synthesis }),
        key,
        '--fresh-synthesis is not part of the key: the new dataset replaces the entry',
      );
      const otherSeed = await run('other-seed', { key: [...keys][1]! });
      assert.equal(made, 2);
      assert.equal(otherSeed.sets[0]!.reusedFrom, undefined);

      const fresh = await run('fresh', { fresh: true });
      assert.equal(made, 3, '--fresh-synthesis synthesizes');
      assert.match(fresh.lines[0]!, /--fresh-synthesis/);
      const afterFresh = await run('after-fresh');
      assert.equal(made, 3);
      assert.equal(afterFresh.sets[0]!.reusedFrom, 'fresh', 'the entry points at the newest dataset');

      // A dataset blob that changed, or is gone, is not reused.
      await context.blobs.put(fresh.sets[0]!.blobKey, '{"id":"tampered","question":"?","answers":["b"]}\n');
      const changed = await run('changed');
      assert.equal(made, 4);
      assert.match(changed.lines[0]!, /changed since it was published/);
      await context.blobs.delete(changed.sets[0]!.blobKey);
      const gone = await run('gone');
      assert.equal(made, 5);
      assert.match(gone.lines[0]!, /is gone/);
    } finally {
      await context.close();
    }
  },
);
