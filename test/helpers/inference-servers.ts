/**
 * Local HTTP servers (plain node:http) that speak the weight-update protocols of SGLang and vLLM as
 * their sources define them (see infra/inference/weight-sync.http.ts): request shapes validated the
 * way FastAPI/pydantic and the servers' own checks do, the same status codes and bodies, every call
 * recorded. "Loading" checks the folder the way the servers would find it: SGLang needs Hugging Face
 * weights (config.json + *.safetensors), vLLM a PEFT LoRA adapter (adapter_config.json).
 * Also: an OpenAI-compatible server without token ids (as llama.cpp's llama-server answers), and
 * `longhaul serve` itself as a child process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { repoRoot } from '../../infra/paths.js';

export interface RecordedCall {
  readonly method: string;
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: unknown;
  readonly status: number;
}

export interface ProtocolServer {
  readonly url: string;
  readonly calls: RecordedCall[];
  /** Answer the next `count` requests with 503 (an overloaded or restarting server). */
  failNext(count: number): void;
  close(): Promise<void>;
}

interface Reply {
  readonly status: number;
  readonly body: unknown;
  readonly text?: boolean;
}
type Handler = (method: string, route: string, body: unknown, contentType: string | undefined) => Reply;

const notFound: Reply = { status: 404, body: { detail: 'Not Found' } };

async function serve(handler: Handler, port = 0): Promise<ProtocolServer> {
  const calls: RecordedCall[] = [];
  let outage = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = raw === '' ? undefined : (JSON.parse(raw) as unknown);
      } catch {
        body = { unparsable: raw };
      }
      const contentType = request.headers['content-type'];
      const reply =
        outage > 0
          ? ((outage -= 1), { status: 503, body: { detail: 'Service Unavailable' } })
          : handler(request.method ?? 'GET', request.url ?? '/', body, contentType);
      calls.push({ method: request.method ?? 'GET', path: request.url ?? '/', contentType, body, status: reply.status });
      response.writeHead(reply.status, { 'content-type': reply.text ? 'text/plain; charset=utf-8' : 'application/json' });
      response.end(reply.text ? String(reply.body) : JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    failNext: (count) => {
      outage = count;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** pydantic's complaint about a body field, as FastAPI returns it (422 {"detail": [...]}). */
function fieldErrors(body: unknown, fields: Record<string, 'required' | 'optional'>): { loc: string[]; msg: string; type: string }[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return [{ loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type' }];
  const record = body as Record<string, unknown>;
  const errors: { loc: string[]; msg: string; type: string }[] = [];
  for (const [field, presence] of Object.entries(fields)) {
    const value = record[field];
    if (value === undefined) {
      if (presence === 'required') errors.push({ loc: ['body', field], msg: 'Field required', type: 'missing' });
    } else if (typeof value !== 'string' && !(presence === 'optional' && value === null)) {
      errors.push({ loc: ['body', field], msg: 'Input should be a valid string', type: 'string_type' });
    }
  }
  return errors;
}

export interface SglangServerOptions {
  /** Answer a failed update with HTTP 200 (older SGLang) instead of 400. @default false */
  readonly legacyStatus?: boolean;
}

/** SGLang's POST /update_weights_from_disk. */
export function startSglangServer(options: SglangServerOptions = {}): Promise<ProtocolServer> {
  return serve((method, route, body) => {
    if (route !== '/update_weights_from_disk') return notFound;
    if (method !== 'POST') return { status: 405, body: { detail: 'Method Not Allowed' } };
    const errors = fieldErrors(body, { model_path: 'required', load_format: 'optional' });
    if (errors.length > 0) return { status: 422, body: { detail: errors } };
    const folder = (body as { model_path: string }).model_path;
    const files = fs.existsSync(folder) && fs.statSync(folder).isDirectory() ? fs.readdirSync(folder) : [];
    const usable = files.includes('config.json') && files.some((name) => name.endsWith('.safetensors'));
    const failedStatus = options.legacyStatus ? 200 : 400;
    if (!usable) {
      return {
        status: failedStatus,
        body: {
          success: false,
          message: `Failed to get weights iterator: ${folder} has no config.json and *.safetensors weights.`,
          num_paused_requests: 0,
        },
      };
    }
    return { status: 200, body: { success: true, message: 'Succeeded to update model weights.', num_paused_requests: 0 } };
  });
}

export interface VllmServerOptions {
  /** Whether the server runs with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True (else the routes do not exist). @default true */
  readonly runtimeLoraUpdating?: boolean;
  /** Error bodies as vLLM before 0.9 ({"object":"error",…}) instead of {"error":{…}}. @default false */
  readonly legacyErrors?: boolean;
  /** --max-lora-rank. @default 16 */
  readonly maxLoraRank?: number;
}

export interface VllmServer extends ProtocolServer {
  /** Adapter names loaded now, in load order. */
  readonly loaded: string[];
}

/** vLLM's POST /v1/load_lora_adapter and /v1/unload_lora_adapter. */
export async function startVllmServer(options: VllmServerOptions = {}): Promise<VllmServer> {
  const loaded = new Map<string, string>();
  const error = (status: number, type: string, message: string): Reply => ({
    status,
    body: options.legacyErrors
      ? { object: 'error', message, type, param: null, code: status }
      : { error: { message, type, param: null, code: status } },
  });
  const load = (name: string, folder: string): Reply => {
    if (!name || !folder) return error(400, 'InvalidUserInput', "Both 'lora_name' and 'lora_path' must be provided.");
    if (loaded.has(name)) return error(400, 'InvalidUserInput', `The lora adapter '${name}' has already been loaded.`);
    const config = path.join(folder, 'adapter_config.json');
    if (!fs.existsSync(config)) return error(404, 'NotFoundError', `Loading lora ${name} failed: No adapter found for ${folder}`);
    const adapter = JSON.parse(fs.readFileSync(config, 'utf8')) as { peft_type?: string; r?: number };
    if (adapter.peft_type !== 'LORA')
      return error(
        400,
        'BadRequestError',
        `Loading lora ${name} failed: ${config} is not a LoRA adapter (peft_type ${String(adapter.peft_type)})`,
      );
    if ((adapter.r ?? 0) > (options.maxLoraRank ?? 16))
      return error(400, 'BadRequestError', `LoRA rank ${adapter.r} is greater than max_lora_rank ${options.maxLoraRank ?? 16}.`);
    loaded.set(name, folder);
    return { status: 200, body: `Success: LoRA adapter '${name}' added successfully.`, text: true };
  };
  const server = await serve((method, route, body, contentType) => {
    const routes = ['/v1/load_lora_adapter', '/v1/unload_lora_adapter'];
    if (!routes.includes(route) || options.runtimeLoraUpdating === false) return notFound;
    if (method !== 'POST') return { status: 405, body: { detail: 'Method Not Allowed' } };
    if (!contentType?.startsWith('application/json'))
      return { status: 415, body: { detail: "Unsupported Media Type: Only 'application/json' is allowed" } };
    const loading = route === routes[0];
    const errors = fieldErrors(body, loading ? { lora_name: 'required', lora_path: 'required' } : { lora_name: 'required' });
    // vLLM turns pydantic's validation errors into a 400 ErrorResponse.
    if (errors.length > 0) return error(400, 'BadRequestError', JSON.stringify(errors));
    const { lora_name: name, lora_path: folder } = body as { lora_name: string; lora_path?: string };
    if (loading) return load(name, folder ?? '');
    if (!name) return error(400, 'InvalidUserInput', "'lora_name' needs to be provided to unload a LoRA adapter.");
    if (!loaded.delete(name)) return error(404, 'NotFoundError', `The lora adapter '${name}' cannot be found.`);
    return { status: 200, body: `Success: LoRA adapter '${name}' removed successfully.`, text: true };
  });
  return {
    ...server,
    get loaded() {
      return [...loaded.keys()];
    },
  };
}

/** A minimal OpenAI-compatible /v1/completions (vLLM's token-id convention) that reports each request's `model`. */
export function startOpenAIServer(onModel: (model: string) => void): Promise<ProtocolServer> {
  return serve((method, route, body) => {
    if (method !== 'POST' || route !== '/v1/completions') return notFound;
    const { model, max_tokens: maxTokens } = body as { model: string; max_tokens: number };
    onModel(model);
    const tokens = Array.from({ length: maxTokens }, (_, index) => `token_id:${100 + index}`);
    return {
      status: 200,
      body: {
        choices: [{ text: 'x'.repeat(maxTokens), finish_reason: 'length', logprobs: { tokens, token_logprobs: tokens.map(() => -0.5) } }],
      },
    };
  });
}

export interface TokenlessServerOptions {
  /** The generated text for a request body (completions: `prompt`; chat: `messages`). */
  readonly reply: (body: { prompt?: string; messages?: { role: string; content: string }[] }) => string;
  /** `usage.completion_tokens` for a reply; null: the response has no `usage` at all. */
  readonly completionTokens: ((text: string) => number) | null;
  /** Listen on this port (to come up where a client already points). @default any free port */
  readonly port?: number;
}

/**
 * An OpenAI-compatible /v1/completions and /v1/chat/completions that, like llama.cpp's llama-server,
 * ignores vLLM's `return_tokens_as_token_ids`: no token ids, no logprobs, and `usage` only if asked.
 */
export function startTokenlessServer(options: TokenlessServerOptions): Promise<ProtocolServer> {
  return serve((method, route, body) => {
    if (method !== 'POST' || (route !== '/v1/completions' && route !== '/v1/chat/completions')) return notFound;
    const request = body as { prompt?: string; messages?: { role: string; content: string }[]; model?: string };
    const text = options.reply(request);
    const chat = route === '/v1/chat/completions';
    const choice = chat
      ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }
      : { index: 0, text, logprobs: null, finish_reason: 'stop' };
    const usage =
      options.completionTokens === null
        ? {}
        : {
            usage: {
              prompt_tokens: 12,
              completion_tokens: options.completionTokens(text),
              total_tokens: 12 + options.completionTokens(text),
            },
          };
    return {
      status: 200,
      body: {
        id: 'cmpl-local',
        object: chat ? 'chat.completion' : 'text_completion',
        created: 0,
        model: request.model ?? 'local',
        choices: [choice],
        ...usage,
      },
    };
  }, options.port);
}

/** `longhaul serve` (dist/cli/main.js) on a prepared model folder, as a child process; resolves with its /v1 base URL. */
export async function startLonghaulServe(modelDir: string, version: number): Promise<{ child: ChildProcess; baseUrl: string }> {
  const child = spawn(
    process.execPath,
    [path.join(repoRoot, 'dist', 'cli', 'main.js'), 'serve', '--port', '0', '--model-dir', modelDir, '--version', String(version)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LONGHAUL_ONNX_THREADS: '1' },
    },
  );
  let output = '';
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+\/v1)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`longhaul serve exited with ${code}:\n${output}`)));
  });
  return { child, baseUrl };
}
