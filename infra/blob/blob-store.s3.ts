/** BlobStore over any S3-compatible server (SeaweedFS here; MinIO or AWS S3 in production), via the minio client. */
import { Client } from 'minio';
import type { Config } from '../config.js';
import { blobNotFound, type BlobStore } from '../../activities/ports/blob-store.port.js';

export function createS3Client(config: Pick<Config, 's3'>): Client {
  const url = new URL(config.s3.endpoint);
  return new Client({
    endPoint: url.hostname,
    port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
    useSSL: url.protocol === 'https:',
    accessKey: config.s3.accessKey,
    secretKey: config.s3.secretKey,
    region: config.s3.region,
    pathStyle: true,
  });
}

export async function ensureBucket(client: Client, bucket: string): Promise<void> {
  if (!(await client.bucketExists(bucket))) await client.makeBucket(bucket);
}

export function createS3BlobStore(config: Pick<Config, 's3'>): BlobStore {
  const client = createS3Client(config);
  const bucket = config.s3.bucket;
  return {
    async put(key, body, contentType = 'application/octet-stream') {
      const buffer = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
      await client.putObject(bucket, key, buffer, buffer.byteLength, { 'Content-Type': contentType });
    },
    async get(key) {
      try {
        const stream = await client.getObject(bucket, key);
        const chunks: Buffer[] = [];
        for await (const chunk of stream) chunks.push(chunk as Buffer);
        return Buffer.concat(chunks);
      } catch (error) {
        if (isNotFound(error)) throw blobNotFound(key);
        throw error;
      }
    },
    async exists(key) {
      try {
        await client.statObject(bucket, key);
        return true;
      } catch (error) {
        if (isNotFound(error)) return false;
        throw error;
      }
    },
    async list(prefix) {
      const keys: string[] = [];
      for await (const item of client.listObjectsV2(bucket, prefix, true)) {
        if (item.name) keys.push(item.name);
      }
      return keys.sort();
    },
    async delete(key) {
      await client.removeObject(bucket, key);
    },
  };
}

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'NoSuchKey' || code === 'NotFound' || code === 'NoSuchObject';
}
