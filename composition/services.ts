/**
 * The stores and clients a command or a benchmark needs, built from the configuration in one place
 * (the CLI used to wire adapters itself in each command). Each is created on first use, so a command
 * that only reads the blob store never opens a Postgres pool; `close()` ends whatever was opened.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { BlobStore } from '../activities/ports/blob-store.port.js';
import type { TrajectoryBuffer } from '../activities/ports/buffer.port.js';
import type { PolicyVersionStore } from '../activities/ports/policy-version-store.port.js';
import type { SkeletonStepStore } from '../activities/ports/skeleton-step-store.port.js';
import type { ToolCallStore } from '../activities/ports/tool-call-store.port.js';
import type { TrajectoryStore } from '../activities/ports/trajectory-store.port.js';
import { createS3BlobStore } from '../infra/blob/blob-store.s3.js';
import type { Config } from '../infra/config.js';
import { createPgTrajectoryBuffer } from '../infra/postgres/buffer.pg.js';
import { createPool } from '../infra/postgres/database.js';
import { createPgPolicyVersionStore } from '../infra/postgres/policy-version-store.pg.js';
import { createPgSkeletonStepStore } from '../infra/postgres/skeleton-step-store.pg.js';
import { createPgTrajectoryStore } from '../infra/postgres/trajectory-store.pg.js';
import { createPgToolCallStore } from '../infra/search/tool-call-store.pg.js';
import { connectClient } from '../infra/temporal/connection.js';

export interface Services {
  readonly settings: Config;
  readonly blobs: BlobStore;
  readonly pool: pg.Pool;
  readonly versions: PolicyVersionStore;
  readonly trajectories: TrajectoryStore;
  readonly buffer: TrajectoryBuffer;
  readonly toolCalls: ToolCallStore;
  readonly skeletonSteps: SkeletonStepStore;
  /** A Temporal client with the payload codec over `blobs`, connected once. */
  client(): Promise<Client>;
  /** Close the Temporal connection and the pool, if they were opened. */
  close(): Promise<void>;
}

export interface ServicesOptions {
  /** Connections in the Postgres pool. @default 2 */
  readonly poolSize?: number;
}

export function openServices(settings: Config, options: ServicesOptions = {}): Services {
  let pool: pg.Pool | undefined;
  let blobs: BlobStore | undefined;
  let client: Promise<Client> | undefined;
  const poolOnce = () => (pool ??= createPool(settings.postgres.url, options.poolSize ?? 2));
  const blobsOnce = () => (blobs ??= createS3BlobStore(settings));
  return {
    settings,
    get blobs() {
      return blobsOnce();
    },
    get pool() {
      return poolOnce();
    },
    get versions() {
      return createPgPolicyVersionStore(poolOnce());
    },
    get trajectories() {
      return createPgTrajectoryStore(poolOnce());
    },
    get buffer() {
      return createPgTrajectoryBuffer(poolOnce());
    },
    get toolCalls() {
      return createPgToolCallStore(poolOnce());
    },
    get skeletonSteps() {
      return createPgSkeletonStepStore(poolOnce());
    },
    client: () => (client ??= connectClient(settings, blobsOnce())),
    async close() {
      const opened = client;
      client = undefined;
      if (opened) await (await opened.catch(() => undefined))?.connection.close();
      const openedPool = pool;
      pool = undefined;
      await openedPool?.end();
    },
  };
}
