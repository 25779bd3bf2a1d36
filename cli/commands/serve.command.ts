import { once } from 'node:events';
import { config } from '../../infra/config.js';
import { createOnnxBackend } from '../../gpu/infer/onnx.backend.js';
import { createOpenAIServer } from '../../gpu/infer/openai-server.js';
import { openLocalPolicy } from '../../composition/policy-backend.js';
import { openServices } from '../../composition/services.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';

export const serveCommand: Command = {
  name: 'serve',
  summary: 'serve the local policy as an OpenAI-compatible endpoint (/v1/completions, /v1/chat/completions)',
  usage: `longhaul serve [--port N] [--host H] [--model-dir DIR] [--version N] [--name NAME]

  Serves the local ONNX policy: by default the latest registered policy version (LONGHAUL_POLICY_VERSION
  picks one), or a prepared folder with --model-dir / LONGHAUL_MODEL_DIR (no stack needed then).
  Prints "listening on http://H:N/v1" when ready; responses carry x-longhaul-policy-version.

  --port N      default 8000 (0: any free port)
  --host H      default 127.0.0.1
  --version N   the policy version --model-dir holds (default 0)
  --name NAME   model name reported to clients (default: the model's name)`,
  async run(args) {
    const { values } = parseFlags(args, {
      port: { type: 'string' },
      host: { type: 'string' },
      'model-dir': { type: 'string' },
      version: { type: 'string' },
      name: { type: 'string' },
    });
    const port = integerFlag(values.port, 'port', 8000, 0, 65535);
    const version = values.version === undefined ? undefined : integerFlag(values.version, 'version', 0, 0, 2 ** 31 - 1);
    const settings = config();
    const threads = settings.policy.threads;
    const executionProviders = settings.policy.executionProvider === 'cuda' ? (['cuda', 'cpu'] as const) : (['cpu'] as const);
    const modelDir = values['model-dir'] ?? settings.policy.modelDir;
    if (version !== undefined && !modelDir)
      throw new UsageError(
        '--version names the version a --model-dir holds; without --model-dir, LONGHAUL_POLICY_VERSION picks the registered version',
      );
    let backend;
    if (modelDir) {
      backend = await createOnnxBackend({
        modelDir,
        version: version ?? settings.policy.version ?? 0,
        threads,
        spinning: settings.policy.spinning,
        prefixCacheBytes: settings.policy.prefixCacheBytes,
        executionProviders,
      });
    } else {
      const services = openServices(settings, { poolSize: 1 });
      try {
        ({ backend } = await openLocalPolicy(settings, services));
      } finally {
        await services.close();
      }
    }
    const server = createOpenAIServer({ backend, modelName: values.name ?? backend.model.manifest.name });
    server.listen(port, values.host ?? '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    const bound = typeof address === 'object' && address ? address.port : port;
    console.log(
      `longhaul serve: ${backend.model.manifest.name} policy version ${await backend.currentVersion()} (${backend.model.executionProvider}) listening on http://${values.host ?? '127.0.0.1'}:${bound}/v1`,
    );
    const stop = async () => {
      server.close();
      await backend.close();
      process.exit(0);
    };
    process.once('SIGINT', () => void stop());
    process.once('SIGTERM', () => void stop());
    await new Promise(() => undefined);
    return 0;
  },
};
