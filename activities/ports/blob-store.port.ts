/** Port: an object store for blobs (turn texts, token ids, checkpoints, large Temporal payloads). */
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export interface BlobStore {
  /** Write (or overwrite) an object. Overwriting with the same bytes is how activities stay idempotent. */
  put(key: string, body: Uint8Array | string, contentType?: string): Promise<void>;
  /** Read an object; rejects with `blobNotFound(key)` when it does not exist. */
  get(key: string): Promise<Buffer>;
  exists(key: string): Promise<boolean>;
  /** Keys under a prefix, in lexical order. */
  list(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
}

/** What `get` rejects with for a missing key: a `LonghaulNotFound` error (retryable: the writer may not have finished). */
export function blobNotFound(key: string): LonghaulError {
  return new LonghaulError(errorTypes.notFound, `blob not found: ${key}`);
}
