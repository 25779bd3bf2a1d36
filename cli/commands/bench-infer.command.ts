import fs from 'node:fs';
import path from 'node:path';
import { config } from '../../infra/config.js';
import { runInferBenchmark } from '../../bench/infer-benchmark.js';
import { runReplayMemoryBenchmark } from '../../bench/replay-memory.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError } from '../command.js';
import { preparedModelDir } from './model.command.js';
import { manifestFileName } from '../../gpu/infer/model-files.js';

/** `longhaul bench infer`: registered in bench.command.ts's table of benchmarks. */
export const inferBenchmark = {
  summary: 'policy inference: total decode tokens/s, step time and RSS against concurrent sequences (continuous batching)',
  usage: `longhaul bench infer [--model-dir DIR] [--tiny] [--prompt-tokens N] [--decode-tokens N] [--concurrency 1,2,4,8,16,32] [--unbatched]
                     [--baseline-model-dir DIR] [--json]

  Uses the prepared SmolLM2-135M-Instruct (longhaul model prepare --no-publish builds it) unless --model-dir
  or --tiny. Threads and execution provider come from LONGHAUL_ONNX_THREADS / LONGHAUL_ONNX_EXECUTION_PROVIDER.
  For each concurrency, that many sequences are prefilled together, then decode together with
  continuous batching (one session run per step for all of them).

  --prompt-tokens N   prompt length per sequence (default 512)
  --decode-tokens N   greedy tokens decoded per sequence after the prompt (default 64), each chosen by the
                      policy's sampler (argmax and its logprob; its time: "sampling_ms_per_token")
  --concurrency LIST  comma-separated numbers of concurrent sequences (default 1,2,4,8,16,32)
  --unbatched         also measure each point without batching (one session run per sequence and token,
                      as before continuous batching), side by side in the same run: "unbatched_curve"
  --baseline-model-dir DIR
                      also measure the batched curve of a second prepared folder (e.g. one prepared by an
                      older version, format 2), point by point in the same run: "baseline":{"curve":[…]}
  --json              last line: {"curve":[{"concurrency","decode_tokens_per_s","p50_step_ms","p50_token_interval_ms",
                      "decode_cpu_ms_per_token","sampling_ms_per_token","prefill_tokens_per_s","rss_mb"}],"unbatched_curve":[…],"load_average",…}`,
  async run(args: string[]): Promise<number> {
    const { values } = parseFlags(args, {
      'model-dir': { type: 'string' },
      tiny: { type: 'boolean' },
      'prompt-tokens': { type: 'string' },
      'decode-tokens': { type: 'string' },
      concurrency: { type: 'string' },
      unbatched: { type: 'boolean' },
      'baseline-model-dir': { type: 'string' },
      json: { type: 'boolean' },
    });
    const concurrency = (values.concurrency ?? '1,2,4,8,16,32')
      .split(',')
      .map((part) => integerFlag(part.trim(), 'concurrency', 1, 1, 256));
    const promptTokens = integerFlag(values['prompt-tokens'], 'prompt-tokens', 512, 1, 8192);
    const decodeTokens = integerFlag(values['decode-tokens'], 'decode-tokens', 64, 1, 8192);
    const settings = config();
    const modelDir = path.resolve(values['model-dir'] ?? preparedModelDir(settings.home, values.tiny === true));
    if (!fs.existsSync(modelDir))
      throw new UsageError(
        `--model-dir: "${modelDir}" does not exist (run longhaul model prepare${values.tiny ? ' --tiny' : ''} --no-publish)`,
      );
    const baselineModelDir = values['baseline-model-dir'] === undefined ? undefined : path.resolve(values['baseline-model-dir']);
    if (baselineModelDir !== undefined && !fs.existsSync(path.join(baselineModelDir, manifestFileName)))
      throw new UsageError(`--baseline-model-dir: "${baselineModelDir}" is not a prepared model folder (no ${manifestFileName})`);
    const result = await runInferBenchmark({
      modelDir,
      concurrency,
      threads: settings.policy.threads,
      spinning: settings.policy.spinning,
      executionProvider: settings.policy.executionProvider,
      promptTokens,
      decodeTokens,
      unbatched: values.unbatched === true,
      baselineModelDir,
      log: (line) => console.error(line),
    });
    console.log(JSON.stringify(result));
    return 0;
  },
};

/** `longhaul bench replay-memory`: registered in bench.command.ts's table of benchmarks. */
export const replayMemoryBenchmark = {
  summary: "the gpu-infer worker's memory under warm-start replay load (gold turns scored, nothing decoded)",
  usage: `longhaul bench replay-memory [--model-dir DIR] [--tiny] [--trajectories N] [--turns N] [--concurrency N] [--json]

  Replays N trajectories of T forced turns, each scored by the policy as a warm start's gold replay
  does (a prefill with the turn's logits, released, never decoded), the transcript growing by the turn
  and a 600-character observation, C at a time, through the onnx backend with the prefix cache of
  LONGHAUL_PREFIX_CACHE_MB. Memory held after the load should be the model, the prefix cache and little else.

  --trajectories N  (default 8)   --turns N  forced turns each (default 7)   --concurrency N  (default 4, the warm start's)
  --json            last line: {"scored_turns","seconds","rss_mb":{"before_load","after_load","after_replays"},
                    "array_buffers_mb","prefix_cache_mb","prefix_cache_budget_mb","held_sequences"}`,
  async run(args: string[]): Promise<number> {
    const { values } = parseFlags(args, {
      'model-dir': { type: 'string' },
      tiny: { type: 'boolean' },
      trajectories: { type: 'string' },
      turns: { type: 'string' },
      concurrency: { type: 'string' },
      json: { type: 'boolean' },
    });
    const trajectories = integerFlag(values.trajectories, 'trajectories', 8, 1, 10_000);
    const turns = integerFlag(values.turns, 'turns', 7, 1, 200);
    const concurrency = integerFlag(values.concurrency, 'concurrency', 4, 1, 256);
    const settings = config();
    const modelDir = path.resolve(values['model-dir'] ?? preparedModelDir(settings.home, values.tiny === true));
    if (!fs.existsSync(path.join(modelDir, manifestFileName)))
      throw new UsageError(
        `--model-dir: "${modelDir}" is not a prepared model folder (run longhaul model prepare${values.tiny ? ' --tiny' : ''} --no-publish)`,
      );
    const result = await runReplayMemoryBenchmark({
      modelDir,
      trajectories,
      turns,
      concurrency,
      prefixCacheBytes: settings.policy.prefixCacheBytes,
      threads: settings.policy.threads,
      log: (line) => console.error(line),
    });
    console.log(JSON.stringify(result));
    return 0;
  },
};
