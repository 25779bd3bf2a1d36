/**
 * The `onnx` policy backend: the local model in this process (onnxruntime-node), prefill then
 * key/value-cache decoding with continuous batching (batch-decoder.ts: concurrent generations share
 * one session run per decode step), greedy or seeded sampling per sequence, stop tokens and stop
 * strings, behaviour logprobs and a policy version on every token. An aborted signal ends the generation with
 * finishReason "interrupted" and the tokens so far; `prefixTokenIds` resumes after them.
 * `forcedText` scores a given output instead of sampling one (teacher forcing).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { GenerateRequest, GenerateResult, PolicyBackend } from '../../activities/ports/policy.port.js';
import { parseGenerateRequest } from '../../activities/ports/policy-request.schema.js';
import { renderChat } from './chat-template.js';
import { BatchDecoder, PrefillAbortedError, type RunReport } from './batch-decoder.js';
import { readManifest } from './model-files.js';
import { OnnxModel, type ExecutionProvider } from './onnx-model.js';
import { chooseToken, seededRandom, tokenLogprob } from './sampling.js';
import { BpeTokenizer } from './tokenizer.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export interface OnnxBackendOptions {
  /** A folder prepared by `longhaul model prepare`. */
  readonly modelDir: string;
  /** The policy version these weights are. */
  readonly version: number;
  /** @default ['cpu'] */
  readonly executionProviders?: readonly ExecutionProvider[];
  /** Intra-op threads; 0 lets onnxruntime choose. @default 0 */
  readonly threads?: number;
  /** Intra-op threads spin between kernels (LONGHAUL_ONNX_SPINNING). @default false */
  readonly spinning?: boolean;
  /** Most sequences decoded in one session run (1: each sequence alone, as before batching). @default 32 */
  readonly maxBatchSize?: number;
  /** Hears every session run (benchmarks and tests: batch sizes, step times). */
  readonly onRun?: (run: RunReport) => void;
  /** Bytes of finished generations' keys and values kept for prompts that extend them (BatchDecoderOptions.prefixCacheBytes). @default 0 */
  readonly prefixCacheBytes?: number;
  /** The decoder keeps the batch's cache and fetches only new columns (BatchDecoderOptions.keepOwnCache). @default where the graph allows */
  readonly keepOwnCache?: boolean;
}

/** One generated token as it is sampled: its id, behaviour logprob and the text it adds (may be '' mid-character; stop tokens are not reported). */
export interface StreamedToken {
  readonly tokenId: number;
  readonly logprob: number;
  readonly text: string;
}

export interface OnnxBackend extends PolicyBackend {
  readonly name: 'onnx';
  /** As PolicyBackend's, and `onToken` hears each sampled token as it comes (`longhaul serve`'s streaming). */
  generate(request: GenerateRequest, signal?: AbortSignal, onToken?: (token: StreamedToken) => void): Promise<GenerateResult>;
  readonly tokenizer: BpeTokenizer;
  readonly model: OnnxModel;
  readonly decoder: BatchDecoder;
  /** Positions the model can attend over (config.json max_position_embeddings); null when the folder does not say. */
  readonly contextWindow: number | null;
  /** Token ids of a request's prompt (chat template applied when `messages` is set). */
  promptTokenIds(request: GenerateRequest): number[];
  close(): Promise<void>;
}

export async function createOnnxBackend(options: OnnxBackendOptions): Promise<OnnxBackend> {
  const manifest = readManifest(options.modelDir);
  const tokenizer = BpeTokenizer.fromFile(path.join(options.modelDir, 'tokenizer.json'));
  const model = await OnnxModel.load({
    modelDir: options.modelDir,
    manifest,
    executionProviders: options.executionProviders ?? ['cpu'],
    threads: options.threads ?? 0,
    spinning: options.spinning ?? false,
  });
  const decoder = new BatchDecoder({
    model,
    maxBatchSize: options.maxBatchSize ?? 32,
    ...(options.onRun ? { onRun: options.onRun } : {}),
    ...(options.keepOwnCache !== undefined ? { keepOwnCache: options.keepOwnCache } : {}),
    ...(options.prefixCacheBytes !== undefined ? { prefixCacheBytes: options.prefixCacheBytes } : {}),
  });
  const contextWindow = readContextWindow(options.modelDir);
  const stopTokenIds = new Set(manifest.stopTokenIds);
  const promptTokenIds = (request: GenerateRequest) => tokenizer.encode(request.messages ? renderChat(request.messages) : request.prompt);
  return {
    name: 'onnx',
    tokenizer,
    model,
    decoder,
    contextWindow,
    promptTokenIds,
    currentVersion: async () => options.version,
    capabilities: async () => ({ tokenIds: true, logprobs: true, detail: `local ONNX policy ${options.modelDir}` }),
    close: async () => {
      await decoder.close();
      await model.close();
    },
    async generate(rawRequest, signal, onToken) {
      const request = parseGenerateRequest(rawRequest);
      for (const id of request.prefixTokenIds ?? []) {
        if (id >= manifest.vocabSize)
          throw new LonghaulError(
            errorTypes.invalidInput,
            `prefixTokenIds: token id ${id} is outside the vocabulary (0..${manifest.vocabSize - 1})`,
          );
      }
      const prompt = promptTokenIds(request);
      if (prompt.length === 0)
        throw new LonghaulError(errorTypes.invalidInput, 'prompt: encodes to no tokens (the model needs at least one prompt token)');
      if (contextWindow !== null) checkContextWindow(request, prompt.length, contextWindow, tokenizer);
      const generator = { model, decoder, tokenizer, stopTokenIds, version: options.version };
      return request.forcedText === undefined
        ? generate(generator, request, prompt, signal, onToken)
        : score(generator, request, request.forcedText, prompt);
    },
  };
}

/** The prepared folder's context window (config.json max_position_embeddings), or null. */
function readContextWindow(modelDir: string): number | null {
  try {
    const config = JSON.parse(fs.readFileSync(path.join(modelDir, 'config.json'), 'utf8')) as { max_position_embeddings?: unknown };
    return typeof config.max_position_embeddings === 'number' ? config.max_position_embeddings : null;
  } catch {
    return null;
  }
}

/** A request whose prompt and output cannot fit the context window fails alone, before it joins the batch. */
function checkContextWindow(request: GenerateRequest, promptLength: number, window: number, tokenizer: BpeTokenizer): void {
  const prefix = request.prefixTokenIds?.length ?? 0;
  if (promptLength + prefix >= window)
    throw new LonghaulError(
      errorTypes.invalidInput,
      `prompt: ${promptLength} prompt tokens${prefix > 0 ? ` + ${prefix} prefixTokenIds` : ''} leave no room in the model's context window of ${window} tokens; shorten the prompt`,
    );
  const output = request.forcedText === undefined ? Math.max(request.maxNewTokens, prefix) : tokenizer.encode(request.forcedText).length;
  if (promptLength + output > window) {
    const field = request.forcedText === undefined ? 'maxNewTokens' : 'forcedText';
    throw new LonghaulError(
      errorTypes.invalidInput,
      `${field}: ${promptLength} prompt tokens + ${output} ${request.forcedText === undefined ? 'new' : 'forced'} tokens exceed the model's context window of ${window} tokens; at most ${window - promptLength} fit after this prompt`,
    );
  }
}

interface Generator {
  readonly model: OnnxModel;
  readonly decoder: BatchDecoder;
  readonly tokenizer: BpeTokenizer;
  readonly stopTokenIds: ReadonlySet<number>;
  readonly version: number;
}

async function generate(
  generator: Generator,
  request: GenerateRequest,
  promptTokenIds: number[],
  signal?: AbortSignal,
  onToken?: (token: StreamedToken) => void,
): Promise<GenerateResult> {
  const { model, decoder, version } = generator;
  const temperature = request.temperature ?? 0;
  const prefix = [...(request.prefixTokenIds ?? [])];
  const tokenIds = [...prefix];
  const logprobs: number[] = request.prefixLogprobs ? [...request.prefixLogprobs] : [];
  const tokenVersions: number[] = request.prefixTokenVersions ? [...request.prefixTokenVersions] : prefix.map(() => version);
  const random = seededRandom(((request.seed ?? 0) + Math.imul(prefix.length, 0x9e3779b1)) >>> 0);
  const text = new TextTracker(generator, request.stop ?? []);
  const result = (finishReason: GenerateResult['finishReason']): GenerateResult => ({
    text: text.value,
    promptTokenIds,
    tokenIds,
    logprobs,
    tokenVersions,
    policyVersion: version,
    finishReason,
  });

  if (signal?.aborted) return result('interrupted');
  const context = [...promptTokenIds, ...prefix];
  // Logits from the last prompt position on when the prefix's logprobs must be recomputed, else the last only.
  const logitsFrom = request.prefixLogprobs ? context.length - 1 : Math.max(0, promptTokenIds.length - 1);
  let prefilled: Awaited<ReturnType<BatchDecoder['prefill']>>;
  try {
    prefilled = await decoder.prefill(context, logitsFrom, signal);
  } catch (error) {
    if (error instanceof PrefillAbortedError) return result('interrupted');
    throw error;
  }
  const { sequence, logits } = prefilled;
  try {
    if (!request.prefixLogprobs) {
      for (let index = 0; index < prefix.length; index += 1) {
        logprobs.push(tokenLogprob(model.row(logits, promptTokenIds.length - 1 + index - logitsFrom), prefix[index]!, temperature));
      }
    }
    for (const id of prefix) if (text.push(id)) return result('stop');
    let last = model.row(logits, context.length - 1 - logitsFrom);
    let shown = text.visible.length;
    while (tokenIds.length < request.maxNewTokens) {
      if (signal?.aborted) return result('interrupted');
      const choice = chooseToken(last, { temperature, topP: request.topP ?? 1, random });
      tokenIds.push(choice.tokenId);
      logprobs.push(choice.logprob);
      tokenVersions.push(version);
      const stopped = text.push(choice.tokenId);
      if (onToken && !generator.stopTokenIds.has(choice.tokenId)) {
        onToken({ tokenId: choice.tokenId, logprob: choice.logprob, text: text.visible.slice(shown) });
        shown = text.visible.length;
      }
      if (stopped) return result('stop');
      if (tokenIds.length >= request.maxNewTokens) break;
      // Resolves after the next batched decode step, together with every other active sequence.
      last = await decoder.decode(sequence, choice.tokenId);
    }
    return result('length');
  } finally {
    decoder.release(sequence); // leaves the batch at the next step boundary
  }
}

/** Teacher forcing: the forced text's tokens with their logprobs under this version, in one forward pass. */
async function score(
  generator: Generator,
  request: GenerateRequest,
  forcedText: string,
  promptTokenIds: number[],
): Promise<GenerateResult> {
  const { model, decoder, version } = generator;
  const tokenIds = generator.tokenizer.encode(forcedText);
  if (tokenIds.length === 0) throw new LonghaulError(errorTypes.invalidInput, 'forcedText: encodes to no tokens');
  const from = promptTokenIds.length - 1;
  // The last forced token's logits are not needed: the forced tokens after the prompt are what is scored.
  const { sequence, logits } = await decoder.prefill([...promptTokenIds, ...tokenIds], from);
  decoder.release(sequence);
  const logprobs = tokenIds.map((tokenId, index) => tokenLogprob(model.row(logits, index), tokenId, request.temperature ?? 0));
  return {
    text: forcedText,
    promptTokenIds,
    tokenIds,
    logprobs,
    tokenVersions: tokenIds.map(() => version),
    policyVersion: version,
    finishReason: 'stop',
  };
}

/**
 * The generated text so far (stop tokens not shown), decoded incrementally, and whether a stop token
 * or stop string has ended it. A stop string cuts the text right after it.
 */
class TextTracker {
  private readonly ids: number[] = [];
  private readonly decoder = new TextDecoder('utf-8');
  private streamed = '';
  private stoppedAt: number | undefined;

  constructor(
    private readonly generator: Generator,
    private readonly stop: readonly string[],
  ) {}

  get value(): string {
    return this.stoppedAt === undefined ? this.generator.tokenizer.decode(this.ids) : this.streamed.slice(0, this.stoppedAt);
  }

  /** The text decoded so far, token by token (a stop string ends it). */
  get visible(): string {
    return this.stoppedAt === undefined ? this.streamed : this.streamed.slice(0, this.stoppedAt);
  }

  push(tokenId: number): boolean {
    if (this.generator.stopTokenIds.has(tokenId)) return true;
    const before = this.streamed.length;
    this.ids.push(tokenId);
    this.streamed += this.decoder.decode(this.generator.tokenizer.tokenBytes(tokenId), { stream: true });
    for (const stop of this.stop) {
      const found = this.streamed.indexOf(stop, Math.max(0, before - stop.length + 1));
      if (found >= 0) {
        this.stoppedAt = found + stop.length;
        return true;
      }
    }
    return false;
  }
}
