/**
 * Policy inference figures for docs/BENCHMARKS.md: resident memory with the model loaded and while
 * generating, prefill and decode tokens/s for 1 and N concurrent sequences (each its own KV cache,
 * greedy decoding on the ONNX graph). Run: `longhaul bench infer --json`.
 */
import { OnnxModel, type ExecutionProvider, type KeyValueCache } from '../gpu/infer/onnx-model.js';
import { readManifest } from '../gpu/infer/model-files.js';
import { BpeTokenizer } from '../gpu/infer/tokenizer.js';
import path from 'node:path';

export interface InferBenchmarkOptions {
  readonly modelDir: string;
  readonly promptTokens: number;
  readonly decodeTokens: number;
  readonly concurrency: readonly number[];
  readonly threads: number;
  readonly executionProvider: ExecutionProvider;
  readonly log?: (line: string) => void;
}

export interface ConcurrencyFigures {
  readonly sequences: number;
  readonly prefill_tokens_per_s: number;
  readonly decode_tokens_per_s: number;
  readonly decode_ms_per_step_p50: number;
}

const megabytes = (bytes: number) => Math.round(bytes / 1048576);
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

function argmax(row: Float32Array): number {
  let best = 0;
  for (let index = 1; index < row.length; index += 1) if (row[index]! > row[best]!) best = index;
  return best;
}

/** A prompt of exactly `count` tokens (real text, repeated), distinct per sequence. */
function promptIds(tokenizer: BpeTokenizer, count: number, sequence: number): number[] {
  const text = `Document ${sequence}. The Temporal server keeps workflow histories durable while activities do all input and output. `;
  const ids: number[] = [];
  while (ids.length < count) ids.push(...tokenizer.encode(text));
  return ids.slice(0, count);
}

async function runSequence(model: OnnxModel, prompt: number[], decode: number, steps: number[]): Promise<{ prefillMs: number }> {
  const started = performance.now();
  const prefill = await model.step(prompt, model.emptyCache());
  const prefillMs = performance.now() - started;
  let logits = prefill.logits;
  let token = argmax(model.row(logits, 0));
  let kv: KeyValueCache = prefill.cache;
  for (let step = 0; step < decode; step += 1) {
    const stepStarted = performance.now();
    ({ logits, cache: kv } = await model.step([token], kv));
    steps.push(performance.now() - stepStarted);
    token = argmax(model.row(logits, 0));
  }
  return { prefillMs };
}

async function measure(
  model: OnnxModel,
  tokenizer: BpeTokenizer,
  options: InferBenchmarkOptions,
  sequences: number,
): Promise<ConcurrencyFigures> {
  const prompts = Array.from({ length: sequences }, (_, index) => promptIds(tokenizer, options.promptTokens, index));
  // Prefill alone (all sequences at once), then prefill + decode; decode throughput from the difference.
  let started = performance.now();
  await Promise.all(prompts.map((prompt) => model.step(prompt, model.emptyCache())));
  const prefillSeconds = (performance.now() - started) / 1000;
  const steps: number[] = [];
  started = performance.now();
  await Promise.all(prompts.map((prompt) => runSequence(model, prompt, options.decodeTokens, steps)));
  const decodeSeconds = Math.max(1e-9, (performance.now() - started) / 1000 - prefillSeconds);
  steps.sort((a, b) => a - b);
  return {
    sequences,
    prefill_tokens_per_s: round((sequences * options.promptTokens) / prefillSeconds),
    decode_tokens_per_s: round((sequences * options.decodeTokens) / decodeSeconds),
    decode_ms_per_step_p50: round(steps[Math.floor(steps.length / 2)] ?? 0),
  };
}

export async function runInferBenchmark(options: InferBenchmarkOptions) {
  const log = options.log ?? (() => undefined);
  const manifest = readManifest(options.modelDir);
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  try {
    const tokenizer = BpeTokenizer.fromFile(path.join(options.modelDir, 'tokenizer.json'));
    const model = await OnnxModel.load({
      modelDir: options.modelDir,
      manifest,
      threads: options.threads,
      executionProviders: [options.executionProvider],
    });
    const loaded = process.memoryUsage().rss;
    log(`loaded ${manifest.name} (${model.executionProvider}); RSS ${megabytes(loaded)} MiB`);
    await model.step(promptIds(tokenizer, 16, 99), model.emptyCache());
    const figures: ConcurrencyFigures[] = [];
    for (const sequences of options.concurrency) {
      figures.push(await measure(model, tokenizer, options, sequences));
      log(`${sequences} sequence(s): ${JSON.stringify(figures[figures.length - 1])}`);
    }
    await model.close();
    return {
      model: manifest.name,
      parameters: manifest.parameters,
      execution_provider: model.executionProvider,
      threads: options.threads,
      prompt_tokens: options.promptTokens,
      decode_tokens: options.decodeTokens,
      rss_mb: { before_load: megabytes(before), after_load: megabytes(loaded), peak: megabytes(peak) },
      concurrency: figures,
    };
  } finally {
    clearInterval(sampler);
  }
}
