/** Temporal clients and worker connections, all with the claim-check payload codec. */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config.js';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import { createBlobPayloadCodec } from './blob-payload-codec.js';
import { installWorkerRuntime } from './runtime.js';

export function dataConverter(config: Config, store: BlobStore): DataConverter {
  return { payloadCodecs: [createBlobPayloadCodec(store, config.payloadThresholdBytes)] };
}

export async function connectClient(config: Config, store: BlobStore): Promise<Client> {
  const connection = await Connection.connect({ address: config.temporal.address }).catch((error: Error) => {
    throw new Error(`cannot reach Temporal at ${config.temporal.address}: ${error.message}. Run ./longhaul up, or set TEMPORAL_ADDRESS.`);
  });
  return new Client({ connection, namespace: config.temporal.namespace, dataConverter: dataConverter(config, store) });
}

/** A worker connection; installs this process's worker runtime (logging at LONGHAUL_LOG_LEVEL) on first use. */
export async function connectWorker(config: Config): Promise<NativeConnection> {
  installWorkerRuntime(config.logLevel);
  return NativeConnection.connect({ address: config.temporal.address }).catch((error: Error) => {
    throw new Error(`cannot reach Temporal at ${config.temporal.address}: ${error.message}. Run ./longhaul up, or set TEMPORAL_ADDRESS.`);
  });
}
