/**
 * `longhaul bench weight-fetch`: the seconds a weight sync spends fetching a policy version from the blob store into
 * the local cache (the "files" phase of a step's sync): every file, the files the ONNX backend reads (`servedFiles`),
 * and those on a worker thread (`threadFileFetcher`), rotated in one run so that all meet the same machine load;
 * optionally with generations decoding in this process meanwhile (`--decode`), as in a rollout worker.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { config } from '../../infra/config.js';
import { openServices } from '../../composition/services.js';
import { fetchedFiles, materializePolicyVersion, servedFiles, versionBytes, type FileFetcher } from '../../gpu/infer/policy-store.js';
import type { OnnxBackend } from '../../gpu/infer/onnx.backend.js';
import { generatedTokenCount, type PolicyBackend } from '../../activities/ports/policy.port.js';
import { openLocalPolicy } from '../../composition/policy-backend.js';
import { threadFileFetcher } from '../../composition/thread-file-fetcher.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError } from '../command.js';
import type { Benchmark } from './bench.command.js';

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

type Way = 'all' | 'served' | 'served_thread';

/**
 * `count` generations at once on `backend`, each a loop of sampled 48-token answers, until `stop` is called: the
 * load of a rollout worker's decoder, whose forward passes hold the event loop.
 */
function keepDecoding(backend: PolicyBackend, count: number): { stop: () => Promise<number> } {
  let stopped = false;
  let tokens = 0;
  const loops = Array.from({ length: count }, async (_, index) => {
    for (let seed = index; !stopped; seed += count) {
      const result = await backend.generate({
        prompt: `Question: which country is city number ${seed} in?\nAnswer:`,
        maxNewTokens: 48,
        temperature: 0.7,
        seed,
      });
      tokens += generatedTokenCount(result);
    }
  });
  const finished = Promise.all(loops);
  // A failed generation surfaces from stop(), not as an unhandled rejection while the fetches run.
  finished.catch(() => undefined);
  return {
    stop: async () => {
      stopped = true;
      await finished;
      return tokens;
    },
  };
}

export const weightFetchBenchmark: Benchmark = {
  summary: "a weight sync's fetch of a policy version: every file vs the ONNX backend's, on the event loop vs a thread",
  usage: `longhaul bench weight-fetch [--version N] [--reps R] [--decode G] [--json]

  Fetches version N from the blob store into a fresh temporary cache R times each way, the ways rotated so that
  all meet the same machine load: every file (what a weight-sync server reads), only the files the ONNX backend
  reads (servedFiles: not *.safetensors or *.pt), and those on a worker thread (threadFileFetcher, what the ONNX
  backend's weight sync does). Each fetch checks every file's sha256, as a sync does. Needs the stack (longhaul up).
  --version N   a registered, unpruned version (default: the latest)
  --reps R      fetches each way (default 3)
  --decode G    keep G generations decoding on version N's ONNX policy in this process meanwhile, as a rollout
                worker does during a sync (default 0: idle). onnxruntime-node runs each forward pass on the event
                loop, so a fetch on that loop advances only between passes; one on a thread does not wait for them
  --json        last line: {"version","reps","decode","all":{"bytes","files","seconds_median","seconds"},"served":{…},
                "served_thread":{…},"ratio" (all ÷ served),"thread_ratio" (served ÷ served_thread),"decoded_tokens"}`,
  async run(args) {
    const { values } = parseFlags(args, {
      version: { type: 'string' },
      reps: { type: 'string' },
      decode: { type: 'string' },
      json: { type: 'boolean' },
    });
    const reps = integerFlag(values.reps, 'reps', 3, 1, 100);
    const version = values.version === undefined ? undefined : integerFlag(values.version, 'version', 0, 0, 1_000_000_000);
    const decode = integerFlag(values.decode, 'decode', 0, 0, 256);
    const settings = config();
    const services = openServices(settings, { poolSize: 2 });
    let policy: { backend: OnnxBackend } | null = null;
    let load: ReturnType<typeof keepDecoding> | null = null;
    try {
      const row = version === undefined ? await services.versions.latest() : await services.versions.get(version);
      if (!row)
        throw new UsageError(
          `--version: ${version === undefined ? 'no version is registered (longhaul model prepare)' : `version ${version} is not registered`}`,
        );
      const ways: readonly { name: Way; files?: (name: string) => boolean; fetchFiles?: FileFetcher }[] = [
        { name: 'all' },
        { name: 'served', files: servedFiles },
        { name: 'served_thread', files: servedFiles, fetchFiles: threadFileFetcher(settings) },
      ];
      if (decode > 0) {
        policy = await openLocalPolicy(settings, services, row.version);
        load = keepDecoding(policy.backend, decode);
      }
      const seconds: Record<Way, number[]> = { all: [], served: [], served_thread: [] };
      for (let rep = 0; rep < reps; rep += 1)
        for (const way of [...ways.slice(rep % ways.length), ...ways.slice(0, rep % ways.length)]) {
          const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-weight-fetch-'));
          try {
            const startedAt = performance.now();
            await materializePolicyVersion({
              blobs: services.blobs,
              versions: services.versions,
              cacheDir,
              version: row.version,
              ...(way.files ? { files: way.files } : {}),
              ...(way.fetchFiles ? { fetchFiles: way.fetchFiles } : {}),
            });
            seconds[way.name].push(Number(((performance.now() - startedAt) / 1000).toFixed(2)));
          } finally {
            fs.rmSync(cacheDir, { recursive: true, force: true });
          }
          console.error(`  v${row.version} ${way.name}: ${seconds[way.name].at(-1)} s${decode > 0 ? ` (${decode} decoding)` : ''}`);
        }
      const decodedTokens = load ? await load.stop() : 0;
      const figures = (name: Way) => {
        const files = fetchedFiles(row.files, name === 'all' ? undefined : servedFiles);
        return { bytes: versionBytes({ files }), files: files.length, seconds_median: median(seconds[name]), seconds: seconds[name] };
      };
      const result = {
        version: row.version,
        reps,
        decode,
        all: figures('all'),
        served: figures('served'),
        served_thread: figures('served_thread'),
        ratio: Number((median(seconds.all) / median(seconds.served)).toFixed(2)),
        thread_ratio: Number((median(seconds.served) / median(seconds.served_thread)).toFixed(2)),
        decoded_tokens: decodedTokens,
      };
      if (!values.json)
        console.log(
          `v${row.version}: every file ${(result.all.bytes / 1e9).toFixed(2)} GB in ${result.all.seconds_median} s · the ONNX backend's ${(result.served.bytes / 1e9).toFixed(2)} GB in ${result.served.seconds_median} s (×${result.ratio}), on a thread ${result.served_thread.seconds_median} s (×${result.thread_ratio})${decode > 0 ? `, ${decode} generations decoding meanwhile` : ''} (medians of ${reps})`,
        );
      console.log(JSON.stringify(result));
      return 0;
    } finally {
      // Stopped already on success; after a failed fetch the generations stop before their backend closes.
      await load?.stop().catch(() => undefined);
      await policy?.backend.close();
      await services.close();
    }
  },
};
