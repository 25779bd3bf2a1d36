/**
 * A policy version's files downloaded on a worker thread. The ONNX decoder (onnxruntime-node) runs each forward pass
 * synchronously on the event loop, so a download on the same loop advances only between passes: with 16–32 rollouts
 * decoding, a weight sync's 0.66 GB took 43–82 s where another process fetched it in 6 (docs/BENCHMARKS.md, session
 * 33). On its own thread the download has its own loop; only the CPU is shared.
 */
import { Worker } from 'node:worker_threads';
import type { Config } from '../infra/config.js';
import type { FileFetch, FileFetcher } from '../gpu/infer/policy-store.js';
import { LonghaulError, type ErrorType } from '../workflows/contracts/errors.js';

/** What the thread posts back: nothing on success, the error's code and message on failure. */
export type ThreadFetchReply = { readonly ok: true } | { readonly ok: false; readonly code: ErrorType | null; readonly message: string };

export interface ThreadFetchInput {
  readonly s3: Config['s3'];
  readonly files: readonly FileFetch[];
}

export function threadFileFetcher(config: Pick<Config, 's3'>): FileFetcher {
  return (files) =>
    files.length === 0
      ? Promise.resolve()
      : new Promise<void>((resolve, reject) => {
          const workerData: ThreadFetchInput = { s3: config.s3, files };
          const worker = new Worker(new URL('./fetch-files.thread.js', import.meta.url), { workerData });
          let replied = false;
          worker.once('message', (reply: ThreadFetchReply) => {
            replied = true;
            if (reply.ok) resolve();
            else reject(reply.code === null ? new Error(reply.message) : new LonghaulError(reply.code, reply.message));
          });
          worker.once('error', (error) => {
            replied = true;
            reject(error);
          });
          worker.once('exit', (code) => {
            if (!replied) reject(new Error(`the file-fetch thread exited with code ${code} before it replied`));
          });
        });
}
