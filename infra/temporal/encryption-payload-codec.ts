/**
 * AES-256-GCM payload codec (issue 14). Every payload is serialised (the Payload protobuf, metadata
 * included) and sealed with the newest key; the result carries the key's id, so keys rotate: add a
 * new key at the end of LONGHAUL_PAYLOAD_ENCRYPTION_KEYS and what was sealed with an older one still
 * opens while that one is listed. Composed before the blob claim-check codec (connection.ts), so
 * large payloads reach the bucket already sealed. A payload without the encrypted encoding passes
 * through, so histories written before encryption was turned on stay readable.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
const PayloadMessage = proto.temporal.api.common.v1.Payload;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface PayloadKey {
  readonly id: string;
  /** 32 bytes (AES-256). */
  readonly key: Uint8Array;
}

/** @param keys oldest first; the last one encrypts, all of them decrypt. */
export function createEncryptionPayloadCodec(keys: readonly PayloadKey[]): PayloadCodec {
  if (keys.length === 0) throw new Error('the encryption codec needs at least one key (LONGHAUL_PAYLOAD_ENCRYPTION_KEYS)');
  const byId = new Map(keys.map((entry) => [entry.id, entry.key]));
  const newest = keys.at(-1)!;
  const text = new TextEncoder();
  return {
    async encode(payloads: Payload[]): Promise<Payload[]> {
      return payloads.map((payload) => {
        const iv = randomBytes(IV_BYTES);
        const cipher = createCipheriv('aes-256-gcm', newest.key, iv);
        // The key id is authenticated too: a payload cannot be moved under another key's id.
        cipher.setAAD(text.encode(newest.id));
        const sealed = Buffer.concat([iv, cipher.update(PayloadMessage.encode(payload).finish()), cipher.final(), cipher.getAuthTag()]);
        return {
          metadata: { encoding: text.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: text.encode(newest.id) },
          data: new Uint8Array(sealed),
        };
      });
    },
    async decode(payloads: Payload[]): Promise<Payload[]> {
      return payloads.map((payload) => {
        const encoding = payload.metadata?.encoding;
        if (!encoding || new TextDecoder().decode(encoding) !== ENCRYPTED_ENCODING) return payload;
        const idBytes = payload.metadata?.[KEY_ID_METADATA];
        const id = idBytes ? new TextDecoder().decode(idBytes) : '';
        const key = byId.get(id);
        if (!key)
          throw new Error(
            `payload was encrypted with key "${id}", which is not in LONGHAUL_PAYLOAD_ENCRYPTION_KEYS (known: ${[...byId.keys()].join(', ')}). Add that key back to decrypt it.`,
          );
        const data = Buffer.from(payload.data ?? new Uint8Array());
        if (data.length < IV_BYTES + TAG_BYTES) throw new Error(`encrypted payload (key "${id}") is truncated`);
        const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
        decipher.setAAD(text.encode(id));
        decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
        let plain: Buffer;
        try {
          plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
        } catch {
          throw new Error(`encrypted payload (key "${id}") failed authentication: wrong key bytes for that id, or tampered data`);
        }
        return PayloadMessage.decode(plain) as Payload;
      });
    },
  };
}
