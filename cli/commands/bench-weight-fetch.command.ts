/**
 * `longhaul bench weight-fetch`: the seconds a weight sync spends fetching a policy version from the blob store into
 * the local cache (the "files" phase of a step's sync), every file against the files the ONNX backend reads
 * (`servedFiles`), alternated in one run so that both meet the same machine load.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { config } from '../../infra/config.js';
import { openServices } from '../../composition/services.js';
import { fetchedFiles, materializePolicyVersion, servedFiles, versionBytes } from '../../gpu/infer/policy-store.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError } from '../command.js';
import type { Benchmark } from './bench.command.js';

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

export const weightFetchBenchmark: Benchmark = {
  summary: "a weight sync's fetch of a policy version: every file vs the files the ONNX backend reads",
  usage: `longhaul bench weight-fetch [--version N] [--reps R] [--json]

  Fetches version N from the blob store into a fresh temporary cache R times each way, alternating: every file
  (what a weight-sync server reads) and only the files the ONNX backend reads (servedFiles: not *.safetensors or
  *.pt). Each fetch checks every file's sha256, as a sync does. Needs the stack (longhaul up).
  --version N   a registered, unpruned version (default: the latest)
  --reps R      fetches each way (default 3)
  --json        last line: {"version","reps","all":{"bytes","files","seconds_median","seconds"},"served":{…},"ratio"}`,
  async run(args) {
    const { values } = parseFlags(args, { version: { type: 'string' }, reps: { type: 'string' }, json: { type: 'boolean' } });
    const reps = integerFlag(values.reps, 'reps', 3, 1, 100);
    const version = values.version === undefined ? undefined : integerFlag(values.version, 'version', 0, 0, 1_000_000_000);
    const settings = config();
    const services = openServices(settings, { poolSize: 2 });
    try {
      const row = version === undefined ? await services.versions.latest() : await services.versions.get(version);
      if (!row)
        throw new UsageError(
          `--version: ${version === undefined ? 'no version is registered (longhaul model prepare)' : `version ${version} is not registered`}`,
        );
      const ways = [
        { name: 'all', files: undefined },
        { name: 'served', files: servedFiles },
      ] as const;
      const seconds: Record<string, number[]> = { all: [], served: [] };
      for (let rep = 0; rep < reps; rep += 1)
        for (const way of rep % 2 ? [...ways].reverse() : ways) {
          const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-weight-fetch-'));
          try {
            const startedAt = performance.now();
            await materializePolicyVersion({
              blobs: services.blobs,
              versions: services.versions,
              cacheDir,
              version: row.version,
              ...(way.files ? { files: way.files } : {}),
            });
            seconds[way.name]!.push(Number(((performance.now() - startedAt) / 1000).toFixed(2)));
          } finally {
            fs.rmSync(cacheDir, { recursive: true, force: true });
          }
          console.error(`  v${row.version} ${way.name}: ${seconds[way.name]!.at(-1)} s`);
        }
      const figures = (name: 'all' | 'served') => {
        const files = fetchedFiles(row.files, name === 'all' ? undefined : servedFiles);
        return { bytes: versionBytes({ files }), files: files.length, seconds_median: median(seconds[name]!), seconds: seconds[name]! };
      };
      const result = {
        version: row.version,
        reps,
        all: figures('all'),
        served: figures('served'),
        ratio: Number((median(seconds.all!) / median(seconds.served!)).toFixed(2)),
      };
      if (!values.json)
        console.log(
          `v${row.version}: every file ${(result.all.bytes / 1e9).toFixed(2)} GB in ${result.all.seconds_median} s · the ONNX backend's ${(result.served.bytes / 1e9).toFixed(2)} GB in ${result.served.seconds_median} s (medians of ${reps}; ×${result.ratio})`,
        );
      console.log(JSON.stringify(result));
      return 0;
    } finally {
      await services.close();
    }
  },
};
