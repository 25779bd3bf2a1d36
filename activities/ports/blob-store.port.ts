/** Port: an object store for blobs (turn texts, token ids, checkpoints, large Temporal payloads). */
export interface BlobStore {
  /** Write (or overwrite) an object. Overwriting with the same bytes is how activities stay idempotent. */
  put(key: string, body: Uint8Array | string, contentType?: string): Promise<void>;
  /** Read an object; rejects with BlobNotFoundError when it does not exist. */
  get(key: string): Promise<Buffer>;
  exists(key: string): Promise<boolean>;
  /** Keys under a prefix, in lexical order. */
  list(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
}

export class BlobNotFoundError extends Error {
  readonly code = 'BLOB_NOT_FOUND';
  constructor(readonly key: string) {
    super(`blob not found: ${key}`);
    this.name = 'BlobNotFoundError';
  }
}
