import { once } from 'node:events';
import { config } from '../../infra/config.js';
import { createS3BlobStore } from '../../infra/blob/blob-store.s3.js';
import { createCodecServer } from '../../infra/temporal/codec-server.js';
import { payloadCodecs } from '../../infra/temporal/connection.js';
import { integerFlag, parseFlags } from '../arguments.js';
import { UsageError, type Command } from '../command.js';

export const codecServerCommand: Command = {
  name: 'codec-server',
  summary: 'serve the payload codecs (decryption, large payloads) to the Temporal Web UI and CLI',
  usage: `longhaul codec-server [--port N] [--host H] [--origin URL]...

  A Temporal codec server (POST /encode, POST /decode) with this configuration's payload codecs:
  AES-GCM decryption with LONGHAUL_PAYLOAD_ENCRYPTION_KEYS, and large payloads read back from the
  bucket. Point the Web UI at it (Settings → Codec Server, or the UI's codec endpoint setting) or
  the CLI (temporal workflow show --codec-endpoint http://H:N). Anyone who can reach it reads the
  decrypted payloads: keep it on loopback or behind your authentication (docs/DEPLOY.md).
  Prints "listening on http://H:N" when ready.

  --port N       default 8089 (0: any free port)
  --host H       default 127.0.0.1
  --origin URL   a browser origin allowed to call it (repeatable); default the embedded
                 Web UI, http://127.0.0.1:<LONGHAUL_TEMPORAL_UI_PORT> and http://localhost:<same>`,
  async run(args) {
    const { values } = parseFlags(args, {
      port: { type: 'string' },
      host: { type: 'string' },
      origin: { type: 'string', multiple: true },
    });
    const port = integerFlag(values.port, 'port', 8089, 0, 65535);
    const settings = config();
    const origins = (values.origin as string[] | undefined) ?? [
      `http://127.0.0.1:${settings.temporal.uiPort}`,
      `http://localhost:${settings.temporal.uiPort}`,
    ];
    for (const origin of origins)
      if (!/^https?:\/\/[^/\s]+$/.test(origin))
        throw new UsageError(`--origin "${origin}" should be a scheme and host without a path, e.g. http://127.0.0.1:8233`);
    const host = values.host ?? '127.0.0.1';
    const server = createCodecServer(payloadCodecs(settings, createS3BlobStore(settings)), {
      origins,
      log: (line) => console.error(line),
    });
    server.listen(port, host);
    await once(server, 'listening');
    const address = server.address();
    const bound = typeof address === 'object' && address ? address.port : port;
    const keys = settings.payloadKeys.map((entry) => entry.id);
    console.log(
      `longhaul codec-server: ${keys.length === 0 ? 'no encryption keys (large payloads only)' : `keys ${keys.join(', ')} (newest ${keys.at(-1)})`}, origins ${origins.join(' ')}; listening on http://${host}:${bound}`,
    );
    const stop = () => {
      server.close();
      process.exit(0);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    await new Promise(() => undefined);
    return 0;
  },
};
