import fs from 'node:fs';
import path from 'node:path';
import { config } from '../../infra/config.js';
import { runInferBenchmark } from '../../bench/infer-benchmark.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError } from '../command.js';
import { preparedModelDir } from './model.command.js';

/** `longhaul bench infer`: registered in bench.command.ts's table of benchmarks. */
export const inferBenchmark = {
  summary: 'policy inference: RSS with SmolLM2-135M loaded, prefill and decode tokens/s at 1 and 8 sequences',
  usage: `longhaul bench infer [--model-dir DIR] [--tiny] [--prompt-tokens N] [--decode-tokens N] [--concurrency 1,8] [--json]

  Uses the prepared SmolLM2-135M-Instruct (longhaul model prepare --no-publish builds it) unless --model-dir
  or --tiny. Threads and execution provider come from LONGHAUL_ONNX_THREADS / LONGHAUL_ONNX_EXECUTION_PROVIDER.

  --prompt-tokens N   prompt length per sequence (default 512)
  --decode-tokens N   greedy tokens decoded per sequence after the prompt (default 64)
  --concurrency LIST  concurrent sequences to measure (default 1,8)
  --json              last line: {"model","rss_mb":{"before_load","after_load","peak"},"concurrency":[{"sequences","prefill_tokens_per_s","decode_tokens_per_s","decode_ms_per_step_p50"}],…}`,
  async run(args: string[]): Promise<number> {
    const { values } = parseFlags(args, {
      'model-dir': { type: 'string' },
      tiny: { type: 'boolean' },
      'prompt-tokens': { type: 'string' },
      'decode-tokens': { type: 'string' },
      concurrency: { type: 'string' },
      json: { type: 'boolean' },
    });
    const settings = config();
    const modelDir = path.resolve(values['model-dir'] ?? preparedModelDir(settings.home, values.tiny === true));
    if (!fs.existsSync(modelDir))
      throw new UsageError(
        `--model-dir: "${modelDir}" does not exist (run longhaul model prepare${values.tiny ? ' --tiny' : ''} --no-publish)`,
      );
    const concurrency = (values.concurrency ?? '1,8').split(',').map((part) => integerFlag(part.trim(), 'concurrency', 1, 1, 256));
    const result = await runInferBenchmark({
      modelDir,
      concurrency,
      threads: settings.policy.threads,
      executionProvider: settings.policy.executionProvider,
      promptTokens: integerFlag(values['prompt-tokens'], 'prompt-tokens', 512, 1, 8192),
      decodeTokens: integerFlag(values['decode-tokens'], 'decode-tokens', 64, 1, 8192),
      log: (line) => console.error(line),
    });
    console.log(JSON.stringify(result));
    return 0;
  },
};
