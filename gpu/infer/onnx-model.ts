/**
 * The exported Llama graph in onnxruntime-node: one `step` runs new tokens against a key/value
 * cache and returns the logits of every new position plus the grown cache. A cache of length 0 is
 * the prefill. CPU execution provider by default; `cuda` where the machine has the CUDA build.
 */
import path from 'node:path';
import ort from 'onnxruntime-node';
import type { ModelManifest } from './model-files.js';

export type ExecutionProvider = 'cpu' | 'cuda';

export interface OnnxModelOptions {
  readonly modelDir: string;
  readonly manifest: ModelManifest;
  /** Execution providers in order of preference. @default ['cpu'] */
  readonly executionProviders?: readonly ExecutionProvider[];
  /** Intra-op threads (0: onnxruntime's default, one per core). @default 0 */
  readonly threads?: number;
  /** Intra-op threads spin between kernels (faster on idle cores, slower on shared ones). @default false */
  readonly spinning?: boolean;
}

/** The key/value cache of one sequence: 2 × layers tensors of [1, kvHeads, length, headDim]. */
export interface KeyValueCache {
  readonly length: number;
  readonly tensors: readonly ort.Tensor[];
}

export interface StepResult {
  /** Logits of the kept new positions (`logitsFrom`..end), [kept × vocab] row-major. */
  readonly logits: Float32Array;
  readonly cache: KeyValueCache;
}

/**
 * One batched run: `rows` sequences, each `newTokens` new positions (left-padded where a row has
 * fewer), after a shared past of `pastLength` columns. Masks and ids are row-major; the past is
 * 2 × layers tensors of [rows, kvHeads, pastLength, headDim] (key, value per layer).
 */
export interface BatchInput {
  readonly rows: number;
  readonly newTokens: number;
  readonly pastLength: number;
  /** [rows × newTokens] */
  readonly tokenIds: BigInt64Array;
  /** [rows × (pastLength + newTokens)]: 1 for a real column, 0 for padding. */
  readonly attentionMask: BigInt64Array;
  /** [rows × newTokens] */
  readonly positionIds: BigInt64Array;
  /** New positions (0..newTokens-1, shared by all rows) that get a logits row. */
  readonly logitsPositions: readonly number[];
  readonly past: readonly Float32Array[];
  /** Fetch the new positions' keys and values instead of the grown cache (needs `keepsOwnCache`). */
  readonly newOnly?: boolean;
}

export interface BatchOutput {
  /** [rows × kept × vocab] */
  readonly logits: Float32Array;
  /**
   * `present`: 2 × layers tensors of [rows, kvHeads, pastLength + newTokens, headDim] (the whole grown cache);
   * `new`: the new positions' keys and values alone, [rows, kvHeads, newTokens, headDim] (`newOnly`).
   */
  readonly cache: { readonly kind: 'present' | 'new'; readonly tensors: Float32Array[] };
}

export class OnnxModel {
  /** Runs go one at a time: concurrent runs on a few cores only oversubscribe the thread pool (measured: slower in total). */
  private tail: Promise<unknown> = Promise.resolve();

  /**
   * The graph also outputs the new positions' keys and values (`new.{i}.{key,value}`, exports since session 21),
   * so a caller can keep the cache itself and fetch only those: onnxruntime-node copies every fetched output
   * into a fresh buffer, and the grown cache is 29 MB a step at 8 rows × 81 columns.
   */
  readonly keepsOwnCache: boolean;

  private constructor(
    private readonly session: ort.InferenceSession,
    readonly manifest: ModelManifest,
    readonly executionProvider: ExecutionProvider,
  ) {
    this.keepsOwnCache = session.outputNames.includes('new.0.key');
  }

  static async load(options: OnnxModelOptions): Promise<OnnxModel> {
    const wanted = options.executionProviders ?? ['cpu'];
    const file = path.join(options.modelDir, options.manifest.onnx.file);
    let lastError: unknown;
    for (const provider of wanted) {
      try {
        const session = await ort.InferenceSession.create(file, {
          executionProviders: [provider],
          graphOptimizationLevel: 'all',
          ...(options.threads ? { intraOpNumThreads: options.threads, interOpNumThreads: 1 } : {}),
          // Spinning threads halve throughput when the cores are shared (other workers, the trainer): off unless asked.
          extra: { session: { intra_op: { allow_spinning: options.spinning ? '1' : '0' }, inter_op: { allow_spinning: '0' } } },
        });
        return new OnnxModel(session, options.manifest, provider);
      } catch (error) {
        lastError = error;
      }
    }
    throw new Error(`cannot load ${file} with execution providers ${wanted.join(', ')}: ${(lastError as Error).message}`);
  }

  emptyCache(): KeyValueCache {
    const { layers, kvHeads, headDim } = this.manifest;
    const tensors: ort.Tensor[] = [];
    for (let index = 0; index < 2 * layers; index += 1)
      tensors.push(new ort.Tensor('float32', new Float32Array(0), [1, kvHeads, 0, headDim]));
    return { length: 0, tensors };
  }

  /**
   * Run `tokenIds` after `cache` (one sequence). Logits come back for new positions
   * `logitsFrom`..end only (default: the last), so a long prefill does not pay for a logits row per token.
   */
  async step(tokenIds: readonly number[], cache: KeyValueCache, logitsFrom = tokenIds.length - 1): Promise<StepResult> {
    const total = cache.length + tokenIds.length;
    const kept = tokenIds.length - logitsFrom;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from(tokenIds, (id) => BigInt(id)),
        [1, tokenIds.length],
      ),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(total).fill(1n), [1, total]),
      position_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from(tokenIds, (_, index) => BigInt(cache.length + index)),
        [1, tokenIds.length],
      ),
      logits_positions: new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: kept }, (_, index) => BigInt(logitsFrom + index)),
        [kept],
      ),
    };
    for (let layer = 0; layer < this.manifest.layers; layer += 1) {
      feeds[`past_key_values.${layer}.key`] = cache.tensors[2 * layer]!;
      feeds[`past_key_values.${layer}.value`] = cache.tensors[2 * layer + 1]!;
    }
    const run = this.tail.then(() => this.session.run(feeds));
    this.tail = run.catch(() => undefined);
    const outputs = await run;
    const tensors: ort.Tensor[] = [];
    for (let layer = 0; layer < this.manifest.layers; layer += 1) {
      tensors.push(outputs[`present.${layer}.key`]!, outputs[`present.${layer}.value`]!);
    }
    return { logits: outputs.logits!.data as Float32Array, cache: { length: total, tensors } };
  }

  /** Run a padded batch (continuous batching: batch-decoder.ts builds these). */
  async runBatch(input: BatchInput): Promise<BatchOutput> {
    const { layers, kvHeads, headDim } = this.manifest;
    const { rows, newTokens, pastLength } = input;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', input.tokenIds, [rows, newTokens]),
      attention_mask: new ort.Tensor('int64', input.attentionMask, [rows, pastLength + newTokens]),
      position_ids: new ort.Tensor('int64', input.positionIds, [rows, newTokens]),
      logits_positions: new ort.Tensor('int64', BigInt64Array.from(input.logitsPositions, BigInt), [input.logitsPositions.length]),
    };
    for (let layer = 0; layer < layers; layer += 1) {
      for (const [offset, kind] of [
        [0, 'key'],
        [1, 'value'],
      ] as const) {
        feeds[`past_key_values.${layer}.${kind}`] = new ort.Tensor('float32', input.past[2 * layer + offset]!, [
          rows,
          kvHeads,
          pastLength,
          headDim,
        ]);
      }
    }
    const kind = input.newOnly ? 'new' : 'present';
    if (kind === 'new' && !this.keepsOwnCache) throw new Error('this model graph has no new.* outputs: re-run `longhaul model prepare`');
    const names = ['logits'];
    for (let layer = 0; layer < layers; layer += 1) names.push(`${kind}.${layer}.key`, `${kind}.${layer}.value`);
    const run = this.tail.then(() => this.session.run(feeds, names));
    this.tail = run.catch(() => undefined);
    const outputs = await run;
    return {
      logits: outputs.logits!.data as Float32Array,
      cache: { kind, tensors: names.slice(1).map((name) => outputs[name]!.data as Float32Array) },
    };
  }

  /** Row `index` (0 = the first kept position) of a [kept × vocab] logits block. */
  row(logits: Float32Array, index: number): Float32Array {
    const vocab = this.manifest.vocabSize;
    return logits.subarray(index * vocab, (index + 1) * vocab);
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}
