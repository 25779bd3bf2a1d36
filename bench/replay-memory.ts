/**
 * The gpu-infer worker's memory under warm-start replay load: trajectories whose every turn is a
 * forced (gold) turn scored by the policy (`forcedText`: a prefill with the turn's logits, released,
 * never decoded), the transcript growing by the turn and a ~600-character observation, a few at a
 * time, through the onnx backend with the worker's prefix cache. Reports the process's RSS and
 * JavaScript array buffers after the load, the prefix cache's share, and the sequences the decoder
 * still holds (0 … the last prefill group's: more means scored sequences are kept). Session 29: before
 * the fix in batch-decoder.ts (a scored sequence stayed queued for a decode step that never came),
 * each scored turn kept its prompt's keys and values. Run: `longhaul bench replay-memory --json`.
 */
import { createOnnxBackend } from '../gpu/infer/onnx.backend.js';
import { megabytes } from './infer-benchmark.js';

export interface ReplayMemoryOptions {
  readonly modelDir: string;
  readonly trajectories: number;
  readonly turns: number;
  readonly concurrency: number;
  readonly prefixCacheBytes: number;
  readonly threads: number;
  readonly log?: (line: string) => void;
}

/** Deterministic filler text (the figures are about memory, not about what the text says). */
function filler(seed: number, characters: number): string {
  const words = ['country', 'capital', 'document', 'search', 'official', 'language', 'border', 'currency', 'city', 'river'];
  let state = seed;
  let text = '';
  while (text.length < characters) {
    state = (state * 1103515245 + 12345) % 2147483648;
    text += `${words[state % words.length]} ${state % 997} `;
  }
  return text.slice(0, characters);
}

export async function runReplayMemoryBenchmark(options: ReplayMemoryOptions) {
  const log = options.log ?? (() => undefined);
  const before = process.memoryUsage();
  const backend = await createOnnxBackend({
    modelDir: options.modelDir,
    version: 0,
    threads: options.threads,
    prefixCacheBytes: options.prefixCacheBytes,
  });
  try {
    const loaded = process.memoryUsage();
    const started = Date.now();
    let next = 0;
    let done = 0;
    let scoredTurns = 0;
    const trajectory = async (index: number) => {
      const messages: { role: 'system' | 'user' | 'assistant'; content: string }[] = [
        { role: 'system', content: filler(index, 1200) },
        { role: 'user', content: `Question ${index}: ${filler(index + 1, 150)}` },
      ];
      for (let turn = 0; turn < options.turns; turn += 1) {
        const forced = `<think>${filler(index * 31 + turn, 90)}</think>\n<search>${filler(turn, 20)}</search>`;
        await backend.generate({ prompt: '', messages, maxNewTokens: 48, temperature: 0, forcedText: forced });
        scoredTurns += 1;
        messages.push(
          { role: 'assistant', content: forced },
          { role: 'user', content: `<documents>${filler(index * 7 + turn, 600)}</documents>` },
        );
      }
    };
    const lane = async () => {
      while (next < options.trajectories) {
        await trajectory((next += 1) - 1);
        done += 1;
        log(`${done}/${options.trajectories} trajectories · RSS ${megabytes(process.memoryUsage().rss)} MiB`);
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, lane));
    const after = process.memoryUsage();
    return {
      trajectories: options.trajectories,
      turns: options.turns,
      concurrency: options.concurrency,
      scored_turns: scoredTurns,
      seconds: (Date.now() - started) / 1000,
      rss_mb: { before_load: megabytes(before.rss), after_load: megabytes(loaded.rss), after_replays: megabytes(after.rss) },
      array_buffers_mb: megabytes(after.arrayBuffers),
      prefix_cache_mb: megabytes(backend.decoder.prefixCacheState().bytes),
      prefix_cache_budget_mb: megabytes(options.prefixCacheBytes),
      held_sequences: backend.decoder.heldSequences(),
    };
  } finally {
    await backend.close();
  }
}
