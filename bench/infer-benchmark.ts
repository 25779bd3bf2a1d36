/**
 * Policy inference figures for docs/BENCHMARKS.md: the curve of total decode tokens/s, decode step
 * time (each sequence's time per token) and resident memory against the number of concurrent
 * sequences, with continuous batching (gpu/infer/batch-decoder.ts: one session run per decode step
 * for every sequence) and, with `unbatched`, the same run before batching (each sequence its own
 * session run per token, runs one at a time). Greedy decoding on the ONNX graph, each token chosen by the
 * policy's own sampler (sampling.ts: the argmax and its logprob, as the onnx policy records it); all sequences are
 * prefilled first, then decode together, so the decode figures are not mixed with prefill. With
 * `baselineModelDir`, a second prepared folder's batched curve is measured at each point beside it.
 * Run: `longhaul bench infer --json`.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { BatchDecoder, type RunReport } from '../gpu/infer/batch-decoder.js';
import { OnnxModel, type ExecutionProvider, type KeyValueCache } from '../gpu/infer/onnx-model.js';
import { readManifest, type ModelManifest } from '../gpu/infer/model-files.js';
import { chooseToken } from '../gpu/infer/sampling.js';
import { BpeTokenizer } from '../gpu/infer/tokenizer.js';

export interface InferBenchmarkOptions {
  readonly modelDir: string;
  readonly promptTokens: number;
  readonly decodeTokens: number;
  readonly concurrency: readonly number[];
  readonly threads: number;
  /** onnxruntime's intra-op threads spin between kernels (LONGHAUL_ONNX_SPINNING). */
  readonly spinning?: boolean;
  readonly executionProvider: ExecutionProvider;
  /** Also measure the curve without batching (the policy before continuous batching), in the same run. */
  readonly unbatched: boolean;
  /** Also measure the batched curve of a second prepared folder (e.g. an older export), point by point in the same run. */
  readonly baselineModelDir?: string;
  readonly log?: (line: string) => void;
}

export interface CurvePoint {
  readonly concurrency: number;
  /** Decode tokens of all sequences per second of the decode phase. */
  readonly decode_tokens_per_s: number;
  /** Median time of one decode step: a batched run, or one sequence's run unbatched (per-sequence latency is this × sequences unbatched). */
  readonly p50_step_ms: number;
  /** Median time between two tokens of one sequence. */
  readonly p50_token_interval_ms: number;
  /** Process CPU time (all threads) per decode token: the work a token costs, less sensitive to other load than wall time. */
  readonly decode_cpu_ms_per_token: number;
  /** Time the policy's sampler took per decode token (greedy choice and its logprob over the vocabulary), on the event loop between steps. */
  readonly sampling_ms_per_token: number;
  /** Prompt tokens of all sequences per second of the prefill phase. */
  readonly prefill_tokens_per_s: number;
  /** Peak resident memory of the process while this point was measured. */
  readonly rss_mb: number;
}

export const megabytes = (bytes: number) => Math.round(bytes / 1048576);
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** The policy's greedy choice (token and logprob, as onnx.backend.ts records them), timed. */
class Sampler {
  ms = 0;
  choose(row: Float32Array): number {
    const started = performance.now();
    const { tokenId } = chooseToken(row, { temperature: 0, topP: 1, random: Math.random });
    this.ms += performance.now() - started;
    return tokenId;
  }
}

/** A prompt of exactly `count` tokens (real text, repeated), distinct per sequence. */
function promptIds(tokenizer: BpeTokenizer, count: number, sequence: number): number[] {
  const text = `Document ${sequence}. The Temporal server keeps workflow histories durable while activities do all input and output. `;
  const ids: number[] = [];
  while (ids.length < count) ids.push(...tokenizer.encode(text));
  return ids.slice(0, count);
}

/** Peak RSS sampled every 20 ms between `start` and `stop`. */
class RssPeak {
  private peak = 0;
  private timer: NodeJS.Timeout | undefined;
  start(): void {
    this.peak = process.memoryUsage().rss;
    this.timer = setInterval(() => {
      this.peak = Math.max(this.peak, process.memoryUsage().rss);
    }, 20);
  }
  stop(): number {
    clearInterval(this.timer);
    return Math.max(this.peak, process.memoryUsage().rss);
  }
}

type PhaseFigures = Omit<CurvePoint, 'rss_mb' | 'concurrency' | 'p50_step_ms'>;

/** One sequence once prefilled: `next` decodes one token, `done` frees what it holds. */
interface PrefilledSequence {
  readonly next: () => Promise<void>;
  readonly done?: () => void;
}

/**
 * The schedule both modes share: every prompt prefilled (concurrently), then, once all are, `decodeTokens`
 * tokens per sequence; decode figures count from the end of the last prefill, so they are not mixed with it.
 */
async function measurePhases(
  prompts: number[][],
  decodeTokens: number,
  sampler: Sampler,
  prefill: (prompt: number[]) => Promise<PrefilledSequence>,
): Promise<PhaseFigures> {
  const intervals: number[] = [];
  let prefilled = 0;
  let releaseDecode!: () => void;
  const allPrefilled = new Promise<void>((resolve) => (releaseDecode = resolve));
  let prefillEnded = 0;
  let cpuAtDecode = process.cpuUsage();
  const started = performance.now();
  const sequence = async (prompt: number[]) => {
    const decoding = await prefill(prompt);
    prefilled += 1;
    if (prefilled === prompts.length) {
      prefillEnded = performance.now();
      cpuAtDecode = process.cpuUsage();
      sampler.ms = 0;
      releaseDecode();
    }
    await allPrefilled;
    let last = performance.now();
    for (let step = 0; step < decodeTokens; step += 1) {
      await decoding.next();
      const now = performance.now();
      intervals.push(now - last);
      last = now;
    }
    decoding.done?.();
  };
  await Promise.all(prompts.map(sequence));
  const ended = performance.now();
  const cpu = process.cpuUsage(cpuAtDecode);
  const prefillTokens = prompts.reduce((sum, prompt) => sum + prompt.length, 0);
  return {
    decode_tokens_per_s: round((prompts.length * decodeTokens) / ((ended - prefillEnded) / 1000)),
    p50_token_interval_ms: round(median(intervals)),
    decode_cpu_ms_per_token: round((cpu.user + cpu.system) / 1000 / (prompts.length * decodeTokens)),
    sampling_ms_per_token: round(sampler.ms / (prompts.length * decodeTokens), 2),
    prefill_tokens_per_s: round(prefillTokens / ((prefillEnded - started) / 1000)),
  };
}

/** `sequences` prompts prefilled together, then decoded together by the batch decoder. */
async function measureBatched(
  model: OnnxModel,
  prompts: number[][],
  decodeTokens: number,
): Promise<Omit<CurvePoint, 'rss_mb' | 'concurrency'>> {
  const runs: RunReport[] = [];
  const decoder = new BatchDecoder({ model, maxBatchSize: Math.max(32, prompts.length), onRun: (run) => runs.push(run) });
  const sampler = new Sampler();
  const figures = await measurePhases(prompts, decodeTokens, sampler, async (prompt) => {
    const { sequence: handle, logits } = await decoder.prefill(prompt);
    let token = sampler.choose(logits);
    return {
      next: async () => {
        token = sampler.choose(await decoder.decode(handle, token));
      },
      done: () => decoder.release(handle),
    };
  });
  await decoder.close();
  return { ...figures, p50_step_ms: round(median(runs.filter((run) => run.kind === 'decode').map((run) => run.ms))) };
}

/** Before batching: each sequence its own cache and its own session run per token (runs serialised in OnnxModel). */
async function measureUnbatched(
  model: OnnxModel,
  prompts: number[][],
  decodeTokens: number,
): Promise<Omit<CurvePoint, 'rss_mb' | 'concurrency'>> {
  const steps: number[] = [];
  let previousEnd = 0;
  const sampler = new Sampler();
  const figures = await measurePhases(prompts, decodeTokens, sampler, async (prompt) => {
    const prefill = await model.step(prompt, model.emptyCache());
    previousEnd = performance.now();
    let token = sampler.choose(model.row(prefill.logits, 0));
    let cache: KeyValueCache = prefill.cache;
    return {
      next: async () => {
        const stepStarted = performance.now();
        const next = await model.step([token], cache);
        const now = performance.now();
        // Runs are serialised: this one ran from when it was asked or the previous run ended, whichever is later.
        steps.push(now - Math.max(stepStarted, previousEnd));
        previousEnd = now;
        cache = next.cache;
        token = sampler.choose(model.row(next.logits, 0));
      },
    };
  });
  return { ...figures, p50_step_ms: round(median(steps)) };
}

type Mode = 'unbatched' | 'batched' | 'baseline';

export async function runInferBenchmark(options: InferBenchmarkOptions) {
  const log = options.log ?? (() => undefined);
  const manifest = readManifest(options.modelDir);
  const before = process.memoryUsage().rss;
  const tokenizer = BpeTokenizer.fromFile(path.join(options.modelDir, 'tokenizer.json'));
  const load = (modelDir: string, folderManifest: ModelManifest) =>
    OnnxModel.load({
      modelDir,
      manifest: folderManifest,
      threads: options.threads,
      spinning: options.spinning ?? false,
      executionProviders: [options.executionProvider],
    });
  const model = await load(options.modelDir, manifest);
  const baselineManifest = options.baselineModelDir === undefined ? undefined : readManifest(options.baselineModelDir);
  let baseline: OnnxModel | undefined;
  try {
    const loaded = process.memoryUsage().rss;
    log(`loaded ${manifest.name} (${model.executionProvider}); RSS ${megabytes(loaded)} MiB`);
    await model.step(promptIds(tokenizer, 16, 99), model.emptyCache()); // warm-up
    if (baselineManifest) {
      baseline = await load(options.baselineModelDir!, baselineManifest);
      await baseline.step(promptIds(tokenizer, 16, 99), baseline.emptyCache());
      log(`loaded the baseline ${options.baselineModelDir} (format ${baselineManifest.format})`);
    }
    const curves: Record<Mode, CurvePoint[]> = { batched: [], unbatched: [], baseline: [] };
    const modes: Mode[] = [...(options.unbatched ? (['unbatched'] as const) : []), ...(baseline ? (['baseline'] as const) : []), 'batched'];
    for (const sequences of options.concurrency) {
      const prompts = Array.from({ length: sequences }, (_, index) => promptIds(tokenizer, options.promptTokens, index));
      for (const mode of modes) {
        const rss = new RssPeak();
        rss.start();
        const figures =
          mode === 'unbatched'
            ? await measureUnbatched(model, prompts, options.decodeTokens)
            : await measureBatched(mode === 'baseline' ? baseline! : model, prompts, options.decodeTokens);
        const point: CurvePoint = { concurrency: sequences, ...figures, rss_mb: megabytes(rss.stop()) };
        curves[mode].push(point);
        log(`${mode} ${sequences} sequence(s): ${JSON.stringify(point)}`);
      }
    }
    const batched1 = curves.batched[0]?.decode_tokens_per_s ?? 0;
    return {
      model: manifest.name,
      model_format: manifest.format,
      parameters: manifest.parameters,
      execution_provider: model.executionProvider,
      threads: options.threads,
      spinning: options.spinning ?? false,
      prompt_tokens: options.promptTokens,
      decode_tokens: options.decodeTokens,
      load_average: await loadAverage(),
      rss_mb: { before_load: megabytes(before), after_load: megabytes(loaded) },
      curve: curves.batched,
      ...(options.unbatched ? { unbatched_curve: curves.unbatched } : {}),
      ...(baselineManifest
        ? { baseline: { model_dir: options.baselineModelDir, model_format: baselineManifest.format, curve: curves.baseline } }
        : {}),
      speedup_over_first: curves.batched.map((point) => ({
        concurrency: point.concurrency,
        times: batched1 > 0 ? round(point.decode_tokens_per_s / batched1, 2) : null,
      })),
    };
  } finally {
    await baseline?.close();
    await model.close();
  }
}

/** /proc/loadavg's three averages where there is one (the machine is shared: figures come with their load). */
async function loadAverage(): Promise<number[] | null> {
  try {
    return (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).map(Number);
  } catch {
    return null;
  }
}
