/**
 * The `openai` policy backend: any OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama,
 * `longhaul serve`). Text completion (/v1/completions) or chat (/v1/chat/completions); behaviour
 * logprobs and token ids when the server returns them (vLLM's `return_tokens_as_token_ids`
 * convention, or `token_ids` / `prompt_token_ids` fields). A server that sends no token ids
 * (llama.cpp, Ollama, hosted APIs) still has its tokens counted, from `usage.completion_tokens`
 * (else estimated from the text), and the result says what is missing (`untrainable`).
 * Network errors and 5xx are retried with exponential backoff, a 429 waits for its Retry-After;
 * responses are parsed leniently.
 */
import type { ChatModels } from '../../activities/ports/chat-model.port.js';
import type { Judge } from '../../activities/ports/judge.port.js';
import type { GenerateRequest, GenerateResult, PolicyBackend, PolicyCapabilities } from '../../activities/ports/policy.port.js';
import type { Config } from '../config.js';
import { parseGenerateRequest } from '../../activities/ports/policy-request.schema.js';
import { completionResponseSchema, chatResponseSchema, parseTokens, type Completion } from './openai.responses.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export interface OpenAIBackendOptions {
  /** Base URL ending in /v1, e.g. http://127.0.0.1:8000/v1. */
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey?: string | null;
  /** Endpoint for plain prompts (requests with messages always use chat). @default 'completions' */
  readonly api?: 'completions' | 'chat';
  /** Policy version reported when the server does not send `x-longhaul-policy-version`. @default 0 */
  readonly version?: number;
  /** Attempts for one request (network errors, 5xx, 429). @default 5 */
  readonly maxAttempts?: number;
  /** First backoff; doubles per attempt, capped by maxBackoffMs. @default 500 */
  readonly initialBackoffMs?: number;
  /** @default 20000 */
  readonly maxBackoffMs?: number;
  /** Per-request time limit. @default 600000 */
  readonly timeoutMs?: number;
  /** Ask for token ids with vLLM's `return_tokens_as_token_ids` extension. @default true */
  readonly requestTokenIds?: boolean;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/** Seconds or an HTTP date, as RFC 9110 allows; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

export function createOpenAIBackend(options: OpenAIBackendOptions): PolicyBackend {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const maxAttempts = options.maxAttempts ?? 5;
  let lastVersion = options.version ?? 0;

  async function post(path: string, body: object, signal?: AbortSignal): Promise<{ json: unknown; version: number } | 'aborted'> {
    let failure = '';
    for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
      if (signal?.aborted) return 'aborted';
      let wait = Math.min(options.maxBackoffMs ?? 20_000, (options.initialBackoffMs ?? 500) * 2 ** (attempt - 1));
      try {
        const response = await fetch(`${baseUrl}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
          body: JSON.stringify(body),
          signal: signal
            ? AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs ?? 600_000)])
            : AbortSignal.timeout(options.timeoutMs ?? 600_000),
        });
        const text = await response.text();
        if (response.ok) {
          const header = Number(response.headers.get('x-longhaul-policy-version'));
          return {
            json: parseJson(text, path),
            version: Number.isInteger(header) && response.headers.has('x-longhaul-policy-version') ? header : lastVersion,
          };
        }
        failure = `HTTP ${response.status}: ${serverMessage(text)}`;
        if (response.status === 429) wait = retryAfterMs(response.headers.get('retry-after')) ?? wait;
        else if (response.status < 500)
          throw new LonghaulError(errorTypes.invalidInput, `${baseUrl}${path} rejected the request: ${failure}`);
      } catch (error) {
        if (LonghaulError.is(error)) throw error;
        if (signal?.aborted) return 'aborted';
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        failure = cause?.code ?? cause?.message ?? (error as Error).message;
      }
      if (attempt < maxAttempts) await sleep(wait, signal);
    }
    throw new LonghaulError(
      errorTypes.unavailable,
      `OpenAI-compatible server at ${baseUrl} is unreachable or failing (${failure}) after ${maxAttempts} attempts`,
    );
  }

  const backend: PolicyBackend = {
    name: 'openai',
    currentVersion: async () => lastVersion,
    async generate(rawRequest: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> {
      const request = parseGenerateRequest(rawRequest);
      if ((request.prefixTokenIds?.length ?? 0) > 0)
        throw new LonghaulError(errorTypes.invalidInput, 'prefixTokenIds: the openai backend cannot resume a generation from token ids');
      if (request.forcedText !== undefined)
        throw new LonghaulError(
          errorTypes.invalidInput,
          'forcedText: the openai backend cannot score forced text; run warm-start trajectories on the onnx backend',
        );
      const chat = request.messages !== undefined || options.api === 'chat';
      const common = {
        model: options.model,
        max_tokens: request.maxNewTokens,
        temperature: request.temperature ?? 0,
        top_p: request.topP ?? 1,
        ...(request.seed !== undefined ? { seed: request.seed } : {}),
        ...(request.stop?.length ? { stop: request.stop } : {}),
        ...((options.requestTokenIds ?? true) ? { return_tokens_as_token_ids: true } : {}),
      };
      const body = chat
        ? { ...common, messages: request.messages ?? [{ role: 'user', content: request.prompt }], logprobs: true }
        : { ...common, prompt: request.prompt, logprobs: 1 };
      const answer = await post(chat ? '/chat/completions' : '/completions', body, signal);
      if (answer === 'aborted')
        return {
          text: '',
          promptTokenIds: [],
          tokenIds: [],
          logprobs: [],
          tokenVersions: [],
          policyVersion: lastVersion,
          finishReason: 'interrupted',
        };
      lastVersion = answer.version;
      const completion = chat ? fromChat(answer.json) : fromCompletion(answer.json);
      const untrainable = missingTokenData(completion);
      return {
        text: completion.text,
        promptTokenIds: completion.promptTokenIds,
        tokenIds: completion.tokenIds,
        logprobs: completion.logprobs,
        tokenVersions: completion.tokenIds.map(() => answer.version),
        policyVersion: answer.version,
        finishReason: completion.finishReason === 'length' ? 'length' : 'stop',
        ...(untrainable ? { untrainable } : {}),
        ...(completion.completionTokens !== undefined || completion.promptTokens !== undefined
          ? {
              usage: {
                promptTokens: completion.promptTokens ?? completion.promptTokenIds.length,
                completionTokens: completion.completionTokens ?? completion.tokenIds.length,
              },
            }
          : {}),
      };
    },
    /** Asks the server for a few tokens the way trajectories do and looks for token ids and logprobs in the answer. */
    async capabilities(): Promise<PolicyCapabilities> {
      const probe = await backend.generate({ prompt: 'The capital of France is', maxNewTokens: 4, temperature: 0 });
      const where = `${baseUrl}${options.api === 'chat' ? '/chat/completions' : '/completions'} (model ${JSON.stringify(options.model)})`;
      if (probe.finishReason === 'interrupted' || (probe.text === '' && probe.tokenIds.length === 0)) {
        return {
          tokenIds: false,
          logprobs: false,
          detail: `probed ${where}: it generated nothing, so token ids and logprobs could not be seen`,
        };
      }
      const missing = probe.untrainable?.missing ?? [];
      return {
        tokenIds: !missing.includes('tokenIds'),
        logprobs: !missing.includes('logprobs'),
        detail: `probed ${where}: ${missing.length === 0 ? 'token ids and logprobs present' : `no ${missing.map((field) => (field === 'tokenIds' ? 'token ids' : 'logprobs')).join(' and no ')} in the response`}`,
      };
    },
  };
  return backend;
}

/**
 * The LLM judge (rewardMetric "judge") over the configured OpenAI-compatible chat endpoint, or
 * undefined when none is configured. Two attempts of one minute at most per call: finishTrajectory
 * retries an unreachable judge itself, with Temporal's backoff.
 */
export function configuredJudge(settings: Config['judge']): Judge | undefined {
  if (settings.baseUrl === null) return undefined;
  const backend = createOpenAIBackend({
    baseUrl: settings.baseUrl,
    model: settings.model,
    apiKey: settings.apiKey,
    api: 'chat',
    requestTokenIds: false,
    maxAttempts: 2,
    timeoutMs: 60_000,
  });
  return { backend, model: settings.model, baseUrl: settings.baseUrl };
}

/**
 * The LLM synthesizer's chat models: the configured endpoint as the default, any endpoint a run names
 * with the configured key and time limit. One attempt per request (the synthesizer bounds its own
 * retries, and a hang ends at the time limit), backends cached per endpoint.
 */
export function configuredChatModels(settings: Config['synthesisLlm']): ChatModels {
  const backends = new Map<string, PolicyBackend>();
  return {
    defaults: { baseUrl: settings.baseUrl, model: settings.model },
    open(endpoint) {
      const key = `${endpoint.baseUrl}\u0000${endpoint.model}`;
      let backend = backends.get(key);
      if (!backend) {
        backend = createOpenAIBackend({
          baseUrl: endpoint.baseUrl,
          model: endpoint.model,
          apiKey: settings.apiKey,
          api: 'chat',
          requestTokenIds: false,
          maxAttempts: 1,
          timeoutMs: settings.timeoutMs,
        });
        backends.set(key, backend);
      }
      return backend;
    },
  };
}

/** What a completion lacks for training, with its token count from the best source there is; undefined when complete. */
export function missingTokenData(completion: Completion): GenerateResult['untrainable'] {
  const { tokenIds, logprobs, text, completionTokens } = completion;
  const count = tokenIds.length > 0 ? tokenIds.length : (completionTokens ?? (text === '' ? 0 : Math.ceil(text.length / 4)));
  const missing: ('tokenIds' | 'logprobs')[] = [];
  if (tokenIds.length === 0 && count > 0) missing.push('tokenIds');
  if (logprobs.length < count) missing.push('logprobs');
  if (missing.length === 0) return undefined;
  return {
    missing,
    generatedTokens: count,
    countedFrom: tokenIds.length > 0 ? 'tokenIds' : completionTokens !== undefined ? 'usage' : 'estimate',
  };
}

function parseJson(text: string, path: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new LonghaulError(errorTypes.invalidInput, `${path} answered with something that is not JSON: ${text.slice(0, 200)}`);
  }
}

function serverMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } | string; message?: string };
    const message = typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message);
    if (message) return message.slice(0, 500);
  } catch {
    /* not JSON */
  }
  return text.slice(0, 500) || '(empty body)';
}

function fromCompletion(json: unknown): Completion {
  const parsed = completionResponseSchema.safeParse(json);
  if (!parsed.success)
    throw new LonghaulError(
      errorTypes.invalidInput,
      `/completions response: ${parsed.error.issues[0]!.path.join('.')}: ${parsed.error.issues[0]!.message}`,
    );
  const choice = parsed.data.choices[0]!;
  const tokens = parseTokens(choice.logprobs?.tokens ?? [], choice.token_ids);
  const logprobs = (choice.logprobs?.token_logprobs ?? []).filter((value): value is number => typeof value === 'number');
  return {
    text: choice.text ?? '',
    finishReason: choice.finish_reason ?? 'stop',
    tokenIds: tokens,
    logprobs,
    promptTokenIds: choice.prompt_token_ids ?? parsed.data.prompt_token_ids ?? [],
    ...completionTokensOf(parsed.data.usage),
  };
}

function fromChat(json: unknown): Completion {
  const parsed = chatResponseSchema.safeParse(json);
  if (!parsed.success)
    throw new LonghaulError(
      errorTypes.invalidInput,
      `/chat/completions response: ${parsed.error.issues[0]!.path.join('.')}: ${parsed.error.issues[0]!.message}`,
    );
  const choice = parsed.data.choices[0]!;
  const content = choice.logprobs?.content ?? [];
  return {
    text: choice.message?.content ?? '',
    finishReason: choice.finish_reason ?? 'stop',
    tokenIds: parseTokens(
      content.map((entry) => entry.token ?? ''),
      choice.token_ids,
    ),
    logprobs: content.map((entry) => entry.logprob).filter((value): value is number => typeof value === 'number'),
    promptTokenIds: choice.prompt_token_ids ?? parsed.data.prompt_token_ids ?? [],
    ...completionTokensOf(parsed.data.usage),
  };
}

function completionTokensOf(usage: { prompt_tokens?: number | null; completion_tokens?: number | null } | null | undefined): {
  completionTokens?: number;
  promptTokens?: number;
} {
  return {
    ...(typeof usage?.completion_tokens === 'number' ? { completionTokens: usage.completion_tokens } : {}),
    ...(typeof usage?.prompt_tokens === 'number' ? { promptTokens: usage.prompt_tokens } : {}),
  };
}
