/** The worker thread of `threadFileFetcher`: fetches the files it is given through its own S3 client, then replies once. */
import { parentPort, workerData } from 'node:worker_threads';
import { createS3BlobStore } from '../infra/blob/blob-store.s3.js';
import { fetchCheckedFiles } from '../gpu/infer/policy-store.js';
import { LonghaulError } from '../workflows/contracts/errors.js';
import type { ThreadFetchInput, ThreadFetchReply } from './thread-file-fetcher.js';

const input = workerData as ThreadFetchInput;
let reply: ThreadFetchReply;
try {
  await fetchCheckedFiles(createS3BlobStore({ s3: input.s3 }), input.files);
  reply = { ok: true };
} catch (error) {
  reply = {
    ok: false,
    code: LonghaulError.is(error) ? error.code : null,
    message: error instanceof Error ? error.message : String(error),
  };
}
parentPort!.postMessage(reply);
