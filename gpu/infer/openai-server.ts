/**
 * An OpenAI-compatible HTTP server over a local policy (what `longhaul serve` runs):
 * GET /v1/models, POST /v1/completions, POST /v1/chat/completions, with logprobs, vLLM's
 * `return_tokens_as_token_ids`, and `token_ids` / `prompt_token_ids` on each choice. Every response
 * names the policy version in the `x-longhaul-policy-version` header. A client that disconnects
 * aborts its generation. `stream: true` answers with server-sent events as OpenAI does: one
 * `data: {chunk}` line per generated token (`chat.completion.chunk` or `text_completion` chunks,
 * with logprobs and `token_ids` when asked), a last chunk with the finish reason, a usage chunk
 * when `stream_options.include_usage` is set, then `data: [DONE]`.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { GenerateRequest, GenerateResult } from '../../activities/ports/policy.port.js';
import type { OnnxBackend, StreamedToken } from './onnx.backend.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

const common = {
  model: z.string().optional(),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  seed: z.number().int().min(0).nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  return_tokens_as_token_ids: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).passthrough().nullish(),
};
const completionSchema = z.object({ ...common, prompt: z.string(), logprobs: z.number().int().min(0).max(20).nullish() }).passthrough();
const chatSchema = z
  .object({
    ...common,
    messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() }).passthrough()).min(1),
    logprobs: z.boolean().nullish(),
  })
  .passthrough();

class BadRequest extends Error {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

export interface OpenAIServerOptions {
  readonly backend: OnnxBackend;
  /** Name reported by /v1/models and in responses. */
  readonly modelName: string;
  /** Default max_tokens when a request names none. @default 256 */
  readonly defaultMaxTokens?: number;
}

export function createOpenAIServer(options: OpenAIServerOptions): http.Server {
  return http.createServer((request, response) => {
    handle(options, request, response).catch((error: unknown) => {
      const status = error instanceof BadRequest || (error instanceof LonghaulError && error.code === errorTypes.invalidInput) ? 400 : 500;
      const param = error instanceof BadRequest ? error.param : null;
      send(response, status, {
        error: { message: (error as Error).message, type: status === 400 ? 'invalid_request_error' : 'server_error', param },
      });
    });
  });
}

function send(response: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (response.headersSent) return;
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

async function readBody(request: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).byteLength;
    if (size > 16 * 1024 * 1024) throw new BadRequest('request body exceeds 16 MiB', null);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new BadRequest('request body is not valid JSON', null);
  }
}

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new BadRequest(`${issue.path.join('.') || 'body'}: ${issue.message}`, issue.path.join('.') || null);
}

async function handle(options: OpenAIServerOptions, request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const version = await options.backend.currentVersion();
  const headers = { 'x-longhaul-policy-version': String(version) };
  if (request.method === 'GET' && url.pathname === '/v1/models') {
    send(
      response,
      200,
      { object: 'list', data: [{ id: options.modelName, object: 'model', owned_by: 'longhaul', policy_version: version }] },
      headers,
    );
    return;
  }
  if (request.method === 'GET' && url.pathname === '/health') {
    send(response, 200, { ok: true, model: options.modelName, policy_version: version }, headers);
    return;
  }
  const chat = url.pathname === '/v1/chat/completions';
  if (request.method !== 'POST' || (!chat && url.pathname !== '/v1/completions')) {
    send(response, 404, { error: { message: `no route ${request.method} ${url.pathname}`, type: 'invalid_request_error', param: null } });
    return;
  }
  const body = await readBody(request);
  const abort = new AbortController();
  response.on('close', () => {
    if (!response.writableEnded) abort.abort();
  });
  if (chat) {
    const input = parse(chatSchema, body);
    const generateRequest: GenerateRequest = {
      ...sampling(options, input),
      prompt: '',
      messages: input.messages.map(({ role, content }) => ({ role, content })),
    };
    if (input.stream === true) {
      await streamResponse(
        options,
        response,
        headers,
        {
          chat,
          logprobs: input.logprobs === true,
          asIds: input.return_tokens_as_token_ids === true,
          includeUsage: input.stream_options?.include_usage === true,
        },
        (onToken) => options.backend.generate(generateRequest, abort.signal, onToken),
      );
      return;
    }
    const result = await options.backend.generate(generateRequest, abort.signal);
    send(response, 200, chatResponse(options, result, input.logprobs === true, input.return_tokens_as_token_ids === true), headers);
  } else {
    const input = parse(completionSchema, body);
    const generateRequest: GenerateRequest = { ...sampling(options, input), prompt: input.prompt };
    if (input.stream === true) {
      await streamResponse(
        options,
        response,
        headers,
        {
          chat,
          logprobs: (input.logprobs ?? null) !== null,
          asIds: input.return_tokens_as_token_ids === true,
          includeUsage: input.stream_options?.include_usage === true,
        },
        (onToken) => options.backend.generate(generateRequest, abort.signal, onToken),
      );
      return;
    }
    const result = await options.backend.generate(generateRequest, abort.signal);
    send(response, 200, completionResponse(options, result, input.logprobs ?? null, input.return_tokens_as_token_ids === true), headers);
  }
}

interface StreamKind {
  readonly chat: boolean;
  readonly logprobs: boolean;
  readonly asIds: boolean;
  readonly includeUsage: boolean;
}

/** Server-sent events: a chunk per token as the policy samples it, the finish reason, usage when asked, `[DONE]`. */
async function streamResponse(
  options: OpenAIServerOptions,
  response: http.ServerResponse,
  headers: Record<string, string>,
  kind: StreamKind,
  generate: (onToken: (token: StreamedToken) => void) => Promise<GenerateResult>,
): Promise<void> {
  const id = `${kind.chat ? 'chatcmpl' : 'cmpl'}-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const write = (data: string) => {
    if (!response.writableEnded && !response.destroyed) response.write(`data: ${data}\n\n`);
  };
  const event = (choices: unknown[], extra: object = {}) =>
    write(
      JSON.stringify({
        id,
        object: kind.chat ? 'chat.completion.chunk' : 'text_completion',
        created,
        model: options.modelName,
        choices,
        ...extra,
      }),
    );
  const tokenString = (tokenId: number) =>
    kind.asIds ? `token_id:${tokenId}` : options.backend.tokenizer.tokenBytes(tokenId).toString('utf8');
  const choice = (text: string, token: StreamedToken | null, finish: string | null) => {
    const ids = token ? { token_ids: [token.tokenId] } : {};
    if (kind.chat) {
      const logprobs =
        kind.logprobs && token ? { content: [{ token: tokenString(token.tokenId), logprob: token.logprob, top_logprobs: [] }] } : null;
      return { index: 0, delta: finish !== null && text === '' ? {} : { content: text }, logprobs, finish_reason: finish, ...ids };
    }
    const logprobs =
      kind.logprobs && token
        ? { tokens: [tokenString(token.tokenId)], token_logprobs: [token.logprob], top_logprobs: null, text_offset: [] }
        : null;
    return { index: 0, text, logprobs, finish_reason: finish, ...ids };
  };
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...headers });
  if (kind.chat) event([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
  let sent = '';
  try {
    const result = await generate((token) => {
      sent += token.text;
      event([choice(token.text, token, null)]);
    });
    // Whatever the final decode adds beyond the token-by-token text (a character completed at the end).
    event([choice(result.text.startsWith(sent) ? result.text.slice(sent.length) : '', null, finishReason(result))]);
    if (kind.includeUsage) event([], { usage: usage(result) });
  } catch (error) {
    write(JSON.stringify({ error: { message: (error as Error).message, type: 'server_error', param: null } }));
  }
  write('[DONE]');
  if (!response.destroyed) response.end();
}

type CommonInput = z.infer<z.ZodObject<typeof common>>;

function sampling(options: OpenAIServerOptions, input: CommonInput): Omit<GenerateRequest, 'prompt'> {
  return {
    maxNewTokens: input.max_tokens ?? input.max_completion_tokens ?? options.defaultMaxTokens ?? 256,
    temperature: input.temperature ?? 1,
    topP: input.top_p ?? 1,
    ...(input.seed !== null && input.seed !== undefined ? { seed: input.seed } : {}),
    ...(input.stop ? { stop: typeof input.stop === 'string' ? [input.stop] : input.stop } : {}),
  };
}

function tokenStrings(options: OpenAIServerOptions, result: GenerateResult, asIds: boolean): string[] {
  return result.tokenIds.map((id) => (asIds ? `token_id:${id}` : options.backend.tokenizer.tokenBytes(id).toString('utf8')));
}

function finishReason(result: GenerateResult): string {
  return result.finishReason === 'length' ? 'length' : 'stop';
}

function usage(result: GenerateResult) {
  return {
    prompt_tokens: result.promptTokenIds.length,
    completion_tokens: result.tokenIds.length,
    total_tokens: result.promptTokenIds.length + result.tokenIds.length,
  };
}

function completionResponse(options: OpenAIServerOptions, result: GenerateResult, logprobs: number | null, asIds: boolean) {
  return {
    id: `cmpl-${randomUUID()}`,
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: options.modelName,
    choices: [
      {
        index: 0,
        text: result.text,
        finish_reason: finishReason(result),
        logprobs:
          logprobs === null
            ? null
            : { tokens: tokenStrings(options, result, asIds), token_logprobs: result.logprobs, top_logprobs: null, text_offset: [] },
        token_ids: result.tokenIds,
        prompt_token_ids: result.promptTokenIds,
      },
    ],
    usage: usage(result),
  };
}

function chatResponse(options: OpenAIServerOptions, result: GenerateResult, logprobs: boolean, asIds: boolean) {
  const tokens = tokenStrings(options, result, asIds);
  return {
    id: `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: options.modelName,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: result.text },
        finish_reason: finishReason(result),
        logprobs: logprobs
          ? { content: tokens.map((token, index) => ({ token, logprob: result.logprobs[index] ?? null, top_logprobs: [] })) }
          : null,
        token_ids: result.tokenIds,
        prompt_token_ids: result.promptTokenIds,
      },
    ],
    usage: usage(result),
  };
}
