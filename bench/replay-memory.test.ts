import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runReplayMemoryBenchmark } from './replay-memory.js';
import { tinyModelDir } from '../test/doubles/test-model.js';

test('the replay-memory benchmark scores every turn and leaves the decoder holding no scored sequence (tiny model)', async () => {
  const result = await runReplayMemoryBenchmark({
    modelDir: await tinyModelDir(),
    trajectories: 6,
    turns: 3,
    concurrency: 3,
    prefixCacheBytes: 64 * 1024 * 1024,
    threads: 1,
  });
  assert.equal(result.scored_turns, 18);
  assert.ok(
    result.held_sequences <= 3,
    `${result.held_sequences} sequences held after 18 scored turns (at most the last prefill group's 3)`,
  );
  assert.ok(result.prefix_cache_mb <= result.prefix_cache_budget_mb);
  assert.ok(result.rss_mb.after_replays >= result.rss_mb.after_load - 64, 'RSS figures are read');
});
