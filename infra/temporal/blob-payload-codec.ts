/**
 * Claim-check codec: any Temporal payload larger than a threshold is stored in the blob store,
 * content-addressed by SHA-256, and replaced in history by a small reference. Workflows hold
 * references, never transcripts, so histories stay far below Temporal's limits (2 MiB per payload,
 * 4 MiB per gRPC message, 50 MiB per history).
 */
import { createHash } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { BlobStore } from '../../activities/ports/blob-store.port.js';

export const BLOB_REFERENCE_ENCODING = 'longhaul/blob-ref';
const PayloadMessage = proto.temporal.api.common.v1.Payload;

interface BlobReference {
  key: string;
  bytes: number;
  sha256: string;
}

export function createBlobPayloadCodec(store: BlobStore, thresholdBytes: number, prefix = 'payloads/'): PayloadCodec {
  return {
    async encode(payloads: Payload[]): Promise<Payload[]> {
      return Promise.all(
        payloads.map(async (payload) => {
          if ((payload.data?.byteLength ?? 0) <= thresholdBytes) return payload;
          const bytes = PayloadMessage.encode(payload).finish();
          const sha256 = createHash('sha256').update(bytes).digest('hex');
          const key = `${prefix}${sha256.slice(0, 2)}/${sha256}`;
          if (!(await store.exists(key))) await store.put(key, bytes);
          const reference: BlobReference = { key, bytes: bytes.byteLength, sha256 };
          return {
            metadata: { encoding: new TextEncoder().encode(BLOB_REFERENCE_ENCODING) },
            data: new TextEncoder().encode(JSON.stringify(reference)),
          };
        }),
      );
    },
    async decode(payloads: Payload[]): Promise<Payload[]> {
      return Promise.all(
        payloads.map(async (payload) => {
          const encoding = payload.metadata?.encoding;
          if (!encoding || new TextDecoder().decode(encoding) !== BLOB_REFERENCE_ENCODING) return payload;
          const reference = parseReference(payload.data);
          const bytes = await store.get(reference.key);
          const sha256 = createHash('sha256').update(bytes).digest('hex');
          if (sha256 !== reference.sha256)
            throw new Error(`payload blob ${reference.key} is corrupt: sha256 ${sha256} != ${reference.sha256}`);
          return PayloadMessage.decode(bytes) as Payload;
        }),
      );
    },
  };
}

function parseReference(data: Uint8Array | null | undefined): BlobReference {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(data ?? new Uint8Array()));
  } catch {
    throw new Error('malformed blob reference payload: not JSON');
  }
  const candidate = value as Partial<BlobReference>;
  if (typeof candidate.key !== 'string' || typeof candidate.sha256 !== 'string' || typeof candidate.bytes !== 'number') {
    throw new Error('malformed blob reference payload: needs key, sha256, bytes');
  }
  return candidate as BlobReference;
}
