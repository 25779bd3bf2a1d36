/**
 * Weight sync into an inference server over HTTP. Request and answer shapes, as read in the servers'
 * sources (sglang/srt/entrypoints/http_server.py + managers/io_struct.py; vllm/entrypoints/openai/
 * api_server.py + serving_models.py):
 *
 * - SGLang: POST <url>/update_weights_from_disk {"model_path": str, "load_format"?: str} (pydantic:
 *   model_path required, a wrong shape is FastAPI's 422 {"detail": [...]}). Answer {"success": bool,
 *   "message": str, "num_paused_requests"?: int}, 200 on success and 400 on failure in current
 *   versions; older ones answered 200 either way and v0.3's /update_weights sent success as "True" or
 *   "False". So the body's `success` decides, never the status alone.
 * - vLLM: POST <url>/v1/load_lora_adapter {"lora_name": str, "lora_path": str}, routed only when the
 *   server runs with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True (else FastAPI's 404 {"detail":"Not Found"}).
 *   200 with plain text "Success: LoRA adapter '<name>' added successfully."; errors are an
 *   ErrorResponse with the status: {"error": {"message", "type", "code"}} now, {"object": "error",
 *   "message", "type", "code"} before; a name already loaded is a 400 "… has already been loaded",
 *   which a repeated sync counts as done. POST /v1/unload_lora_adapter {"lora_name"} removes one
 *   (404 NotFoundError when it is not loaded).
 *
 * Plain node:http rather than fetch: loading a large model can take longer than undici's 5-minute
 * header timeout.
 */
import http from 'node:http';
import https from 'node:https';
import { z } from 'zod';
import { type WeightSync } from '../../activities/ports/weight-sync.port.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export interface ServerSyncOptions {
  /** Server base URL without /v1, e.g. http://127.0.0.1:30000. */
  readonly url: string;
  /** Local folder of a registered version's files, readable by the server. */
  readonly folderOf: (version: number) => Promise<string>;
  /** Runs after the server took the version (the worker's backend switches its version tag). */
  readonly afterUpdate?: (version: number) => Promise<void>;
  readonly apiKey?: string | null;
  /** Idle time limit of one request. @default 1800000 */
  readonly timeoutMs?: number;
}

/** The LoRA adapter name a version is loaded under in vLLM (and the model name requests then use). */
export const loraAdapterName = (version: number) => `longhaul-v${version}`;

interface Answer {
  readonly status: number;
  readonly text: string;
}

function post(url: string, body: object, options: ServerSyncOptions, signal?: AbortSignal): Promise<Answer> {
  const payload = JSON.stringify(body);
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  const timeoutMs = options.timeoutMs ?? 1_800_000;
  return new Promise((resolve, reject) => {
    const request = client.request(
      target,
      {
        method: 'POST',
        timeout: timeoutMs,
        ...(signal ? { signal } : {}),
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })));
    request.on('error', reject);
    request.end(payload);
  });
}

/** POST, with transport failures and 5xx as retryable errors; other answers are returned. */
async function call(url: string, body: object, options: ServerSyncOptions, server: string, signal?: AbortSignal): Promise<Answer> {
  let answer: Answer;
  try {
    answer = await post(url, body, options, signal);
  } catch (error) {
    if (signal?.aborted) throw error;
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new LonghaulError(
      errorTypes.unavailable,
      `${server} at ${url} is unreachable (${reason}); start it or fix LONGHAUL_WEIGHT_SYNC_URL`,
    );
  }
  if (answer.status >= 500)
    throw new LonghaulError(errorTypes.unavailable, `${server} at ${url} failed with HTTP ${answer.status}: ${serverMessage(answer.text)}`);
  return answer;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const errorBodySchema = z
  .object({
    error: z.object({ message: z.string().nullish() }).passthrough().nullish(),
    message: z.string().nullish(),
    detail: z
      .union([
        z.string(),
        z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])).nullish(), msg: z.string().nullish() }).passthrough()),
      ])
      .nullish(),
  })
  .passthrough();

/** The human part of an error body: OpenAI-style error, SGLang's message, FastAPI's detail, or the text. */
function serverMessage(text: string): string {
  const parsed = errorBodySchema.safeParse(parseJson(text));
  const body = parsed.success ? parsed.data : {};
  const detail = Array.isArray(body.detail)
    ? body.detail.map((item) => `${(item.loc ?? []).join('.')}: ${item.msg ?? 'invalid'}`).join('; ')
    : body.detail;
  return body.error?.message ?? body.message ?? detail ?? (text.trim().slice(0, 300) || '(empty answer)');
}

/** A server's sentence without its closing period, so ours can follow. */
const sentence = (message: string) => message.trim().replace(/\.+$/, '');

const isFastApiNotFound = (answer: Answer) => answer.status === 404 && serverMessage(answer.text) === 'Not Found';

const sglangAnswerSchema = z
  .object({
    success: z.union([z.boolean(), z.enum(['True', 'False', 'true', 'false']).transform((value) => value.toLowerCase() === 'true')]),
    message: z.string().nullish(),
  })
  .passthrough();

export function createSglangWeightSync(options: ServerSyncOptions & { readonly loadFormat?: string }): WeightSync {
  const endpoint = `${options.url.replace(/\/+$/, '')}/update_weights_from_disk`;
  return {
    kind: 'sglang',
    async sync(version, progress, signal) {
      progress('materializing');
      const folder = await options.folderOf(version);
      progress('updating server');
      const answer = await call(
        endpoint,
        { model_path: folder, ...(options.loadFormat ? { load_format: options.loadFormat } : {}) },
        options,
        'SGLang',
        signal,
      );
      const parsed = sglangAnswerSchema.safeParse(parseJson(answer.text));
      if (!parsed.success && isFastApiNotFound(answer)) {
        throw new LonghaulError(
          errorTypes.invalidInput,
          `${endpoint} does not exist (HTTP 404): that server has no update_weights_from_disk; upgrade SGLang, or set LONGHAUL_WEIGHT_SYNC to match the server`,
        );
      }
      if (!parsed.success || !parsed.data.success) {
        const message = parsed.success ? (parsed.data.message ?? '(no message)') : `HTTP ${answer.status}: ${serverMessage(answer.text)}`;
        throw new LonghaulError(
          errorTypes.invalidInput,
          `SGLang refused policy version ${version} from ${folder}: ${sentence(message)}. Fix: the folder must hold Hugging Face weights of the served architecture and be readable by the server (same machine or shared filesystem)`,
        );
      }
      progress('switching local backend');
      await options.afterUpdate?.(version);
    },
  };
}

export function createVllmWeightSync(
  options: ServerSyncOptions & { /** Adapters kept loaded (older ones unloaded). @default 2 */ readonly keepAdapters?: number },
): WeightSync {
  const base = options.url.replace(/\/+$/, '');
  const keep = Math.max(1, options.keepAdapters ?? 2);
  const loaded: string[] = [];
  return {
    kind: 'vllm',
    async sync(version, progress, signal) {
      progress('materializing');
      const folder = await options.folderOf(version);
      const name = loraAdapterName(version);
      progress('loading adapter');
      const endpoint = `${base}/v1/load_lora_adapter`;
      const answer = await call(endpoint, { lora_name: name, lora_path: folder }, options, 'vLLM', signal);
      const message = serverMessage(answer.text);
      if (isFastApiNotFound(answer)) {
        throw new LonghaulError(
          errorTypes.invalidInput,
          `${endpoint} is not routed (HTTP 404): start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora, or set LONGHAUL_WEIGHT_SYNC to match the server`,
        );
      }
      const repeated = answer.status === 400 && message.includes('has already been loaded');
      if (answer.status !== 200 && !repeated) {
        throw new LonghaulError(
          errorTypes.invalidInput,
          `vLLM refused LoRA adapter ${name} (policy version ${version}, ${folder}): HTTP ${answer.status}: ${sentence(message)}. Fix: the folder must hold a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors) of the served base model, readable by the server, within its --max-lora-rank`,
        );
      }
      progress('switching local backend');
      await options.afterUpdate?.(version);
      if (!loaded.includes(name)) loaded.push(name);
      // Generations still running on the previous adapter finish on it; older ones are unloaded.
      while (loaded.length > keep) {
        const old = loaded[0]!;
        progress(`unloading ${old}`);
        const unloaded = await call(`${base}/v1/unload_lora_adapter`, { lora_name: old }, options, 'vLLM', signal);
        if (unloaded.status !== 200 && unloaded.status !== 404)
          progress(`could not unload ${old}: HTTP ${unloaded.status}: ${serverMessage(unloaded.text)}`);
        loaded.shift();
      }
    },
  };
}
