/** Temporal clients and worker connections, all with the claim-check payload codec. */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { toClientOptions } from '@temporalio/envconfig';
import type { Config } from '../config.js';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';
import { createBlobPayloadCodec } from './blob-payload-codec.js';
import { createEncryptionPayloadCodec } from './encryption-payload-codec.js';
import { startedWorkflowTracker } from './started-workflows.js';
import { installWorkerRuntime } from './runtime.js';

/**
 * The payload codecs of every client and worker. With LONGHAUL_PAYLOAD_ENCRYPTION_KEYS, encryption
 * comes first: the SDK encodes through the codecs in order (and decodes in reverse), so a large
 * payload is sealed before the claim-check codec moves it to the bucket.
 */
export function payloadCodecs(config: Config, store: BlobStore): PayloadCodec[] {
  const blob = createBlobPayloadCodec(store, config.payloadThresholdBytes);
  return config.payloadKeys.length === 0 ? [blob] : [createEncryptionPayloadCodec(config.payloadKeys), blob];
}

export function dataConverter(config: Config, store: BlobStore): DataConverter {
  return { payloadCodecs: payloadCodecs(config, store) };
}

/**
 * Address, TLS (certificates read from their files), API key and gRPC headers, as envconfig turns a
 * profile into connection options: TLS is on when TLS settings or an API key are given.
 */
export function temporalConnectionOptions(config: Config): NativeConnectionOptions {
  const { address, apiKey, tls, grpcMetadata } = config.temporal;
  return toClientOptions({
    address,
    ...(apiKey === null ? {} : { apiKey }),
    ...(tls === null ? {} : { tls }),
    ...(Object.keys(grpcMetadata).length === 0 ? {} : { grpcMeta: { ...grpcMetadata } }),
  }).connectionOptions;
}

function unreachable(config: Config, error: Error): Error {
  const where = config.temporal.profile === null ? '' : ` (profile ${config.temporal.profile})`;
  return new Error(
    `cannot reach Temporal at ${config.temporal.address}${where}: ${error.message}. Run ./longhaul up, or set TEMPORAL_ADDRESS or TEMPORAL_PROFILE.`,
  );
}

export async function connectClient(config: Config, store: BlobStore): Promise<Client> {
  const connection = await Connection.connect(temporalConnectionOptions(config)).catch((error: Error) => {
    throw unreachable(config, error);
  });
  return new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverter(config, store),
    interceptors: { workflow: [startedWorkflowTracker] },
  });
}

/** A worker connection; installs this process's worker runtime (logging at LONGHAUL_LOG_LEVEL) on first use. */
export async function connectWorker(config: Config): Promise<NativeConnection> {
  installWorkerRuntime(config.logLevel);
  return NativeConnection.connect(temporalConnectionOptions(config)).catch((error: Error) => {
    throw unreachable(config, error);
  });
}
