import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Config } from '../config.js';
import { migrate } from '../postgres/migrate.js';
import { postgresBinDir } from './binaries.js';
import { serviceError, canConnect, logFile, tail } from './processes.js';
import type { Service, ServiceStatus, StartOutcome } from './service.js';

const run = promisify(execFile);
/** initdb and postgres refuse to run as root; as root we run the cluster as this system user. */
const CLUSTER_USER = 'longhaul';
/**
 * As root, when the cluster user cannot enter LONGHAUL_HOME (a checkout under a 0700 home such as
 * /root), the cluster lives here instead, one folder per LONGHAUL_HOME, owned by that user;
 * LONGHAUL_HOME/postgres/data and LONGHAUL_HOME/logs/postgres.log are symlinks to it.
 */
export const SHARED_CLUSTERS_DIR = '/var/lib/longhaul';

/** Where a cluster's files are: inside LONGHAUL_HOME, or in SHARED_CLUSTERS_DIR behind symlinks. */
interface ClusterLocation {
  readonly dataDir: string;
  readonly log: string;
  readonly shared: boolean;
}

/** A project-local PostgreSQL cluster under LONGHAUL_HOME, loopback only, on its own port. */
export function postgresService(config: Config): Service {
  /** In LONGHAUL_HOME: the data folder itself, or a symlink to the shared one. */
  const dataPointer = path.join(config.home, 'postgres', 'data');
  const logPointer = logFile(config.home, 'postgres');
  const isRoot = process.getuid?.() === 0;

  /** The location recorded under LONGHAUL_HOME (no side effects; `stop` and `status` use it). */
  function recordedLocation(): ClusterLocation {
    let target: string | undefined;
    try {
      target = fs.readlinkSync(dataPointer);
    } catch {
      target = undefined; // not a symlink (or absent): the cluster is inside LONGHAUL_HOME
    }
    if (target === undefined) return { dataDir: dataPointer, log: logPointer, shared: false };
    return { dataDir: target, log: path.join(path.dirname(target), 'postgres.log'), shared: true };
  }

  async function asClusterUser(command: string, args: string[], timeout = 120_000) {
    if (!isRoot) return run(command, args, { timeout });
    // cwd '/': the cluster user may not be allowed into ours (a 0700 home).
    return run('runuser', ['-u', CLUSTER_USER, '--', command, ...args], { timeout, cwd: '/' });
  }

  async function clusterUserCanEnter(dir: string): Promise<boolean> {
    try {
      await run('runuser', ['-u', CLUSTER_USER, '--', 'test', '-x', dir], { cwd: '/' });
      return true;
    } catch {
      return false;
    }
  }

  async function ensureClusterUser(): Promise<void> {
    try {
      await run('id', ['-u', CLUSTER_USER]);
    } catch {
      await run('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', CLUSTER_USER]).catch((error: Error) => {
        throw serviceError(
          `could not create the system user "${CLUSTER_USER}" that runs Postgres (initdb refuses root): ${error.message}`,
          'run longhaul as a non-root user, or set DATABASE_URL to an existing database',
        );
      });
    }
  }

  /**
   * A new cluster in SHARED_CLUSTERS_DIR for this LONGHAUL_HOME, recorded by symlinks. A folder left
   * there for the same home path whose symlink is gone (LONGHAUL_HOME was deleted) is stale: its
   * server is stopped and the folder replaced, as deleting LONGHAUL_HOME deletes an in-home cluster.
   */
  async function makeSharedLocation(bin: string): Promise<ClusterLocation> {
    const id = createHash('sha256').update(fs.realpathSync(config.home)).digest('hex').slice(0, 16);
    const root = path.join(SHARED_CLUSTERS_DIR, `postgres-${id}`);
    const location = { dataDir: path.join(root, 'data'), log: path.join(root, 'postgres.log'), shared: true };
    fs.mkdirSync(SHARED_CLUSTERS_DIR, { recursive: true, mode: 0o755 });
    fs.chmodSync(SHARED_CLUSTERS_DIR, fs.statSync(SHARED_CLUSTERS_DIR).mode | 0o005);
    if (fs.existsSync(path.join(location.dataDir, 'postmaster.pid'))) {
      await asClusterUser(path.join(bin, 'pg_ctl'), ['stop', '-D', location.dataDir, '-m', 'fast', '-w', '-t', '60']).catch(
        () => undefined,
      );
    }
    fs.rmSync(root, { recursive: true, force: true });
    fs.mkdirSync(root, { mode: 0o700 });
    fs.writeFileSync(location.log, '');
    await run('chown', ['-R', `${CLUSTER_USER}:${CLUSTER_USER}`, root]);
    fs.rmSync(dataPointer, { recursive: true, force: true }); // an empty or half-made in-home data folder
    fs.symlinkSync(location.dataDir, dataPointer);
    fs.rmSync(logPointer, { force: true });
    fs.symlinkSync(location.log, logPointer);
    return location;
  }

  /**
   * Where the cluster is, ready for its user: the recorded location; for a new cluster as root, the
   * shared folder when the cluster user cannot reach LONGHAUL_HOME (search permission on every folder above).
   */
  async function prepareLocation(bin: string): Promise<ClusterLocation> {
    fs.mkdirSync(path.dirname(dataPointer), { recursive: true });
    fs.mkdirSync(path.dirname(logPointer), { recursive: true });
    const recorded = recordedLocation();
    if (!isRoot) {
      if (!fs.existsSync(recorded.log)) fs.writeFileSync(recorded.log, '');
      return recorded;
    }
    await ensureClusterUser();
    const isNew = !fs.existsSync(path.join(recorded.dataDir, 'PG_VERSION'));
    const location =
      !recorded.shared && isNew && !(await clusterUserCanEnter(path.dirname(fs.realpathSync(config.home))))
        ? await makeSharedLocation(bin)
        : recorded;
    if (location.shared) {
      if (!fs.existsSync(path.dirname(location.dataDir))) {
        throw serviceError(
          `the Postgres cluster recorded in ${dataPointer} (${location.dataDir}) is gone`,
          `remove the symlink ${dataPointer} and run longhaul up again (a new, empty cluster)`,
        );
      }
      if (!fs.existsSync(location.log)) fs.writeFileSync(location.log, '');
      await run('chown', ['-R', `${CLUSTER_USER}:${CLUSTER_USER}`, path.dirname(location.dataDir)]);
      return location;
    }
    if (!fs.existsSync(location.log)) fs.writeFileSync(location.log, '');
    for (const target of [path.dirname(dataPointer), location.log]) {
      await run('chown', ['-R', `${CLUSTER_USER}:${CLUSTER_USER}`, target]);
    }
    // The cluster user must be able to traverse down to its folder. LONGHAUL_HOME is ours to open up
    // (search permission only). A closed folder above an existing in-home cluster is named.
    fs.chmodSync(config.home, fs.statSync(config.home).mode | 0o001);
    for (let dir = config.home; dir !== path.dirname(dir); dir = path.dirname(dir)) {
      if (!(await clusterUserCanEnter(dir))) {
        throw serviceError(
          `Postgres runs as user "${CLUSTER_USER}" (initdb refuses root), which cannot enter ${dir}`,
          `chmod o+x ${dir}, or set LONGHAUL_HOME to a folder outside it, or set DATABASE_URL to an existing database`,
        );
      }
    }
    return location;
  }

  async function connectable(database = 'postgres'): Promise<boolean> {
    const client = new pg.Client({ connectionString: withDatabase(config.postgres.url, database), connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  async function ensureDatabase(): Promise<void> {
    const name = new URL(config.postgres.url).pathname.slice(1) || 'longhaul';
    const client = new pg.Client({ connectionString: withDatabase(config.postgres.url, 'postgres') });
    await client.connect();
    try {
      const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (found.rowCount === 0) await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    } finally {
      await client.end();
    }
  }

  async function clusterRunning(bin: string, dataDir: string): Promise<boolean> {
    if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) return false;
    try {
      await asClusterUser(path.join(bin, 'pg_ctl'), ['status', '-D', dataDir], 10_000);
      return true;
    } catch {
      return false;
    }
  }

  async function stopCluster(bin: string, dataDir: string): Promise<void> {
    if (await clusterRunning(bin, dataDir))
      await asClusterUser(path.join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60']);
  }

  return {
    name: 'postgres',
    async start(): Promise<StartOutcome> {
      if (!config.postgres.embedded) {
        if (!(await connectable(new URL(config.postgres.url).pathname.slice(1)))) {
          throw serviceError('Postgres at DATABASE_URL is not reachable', 'check DATABASE_URL, or unset it to run the embedded cluster');
        }
        await migrate(config.postgres.url);
        return 'reused';
      }
      const bin = postgresBinDir();
      const { dataDir, log } = await prepareLocation(bin);
      if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
        fs.rmSync(dataDir, { recursive: true, force: true }); // a half-made cluster from an interrupted initdb
        await asClusterUser(path.join(bin, 'initdb'), [
          '-D',
          dataDir,
          '-U',
          'longhaul',
          '--auth=trust',
          '--encoding=UTF8',
          '--locale=C.UTF-8',
        ]).catch((error: Error & { stderr?: string }) => {
          throw serviceError(
            `initdb failed: ${error.stderr ?? error.message}`,
            `check that ${path.dirname(dataDir)} is writable and its parent folders are traversable by user ${CLUSTER_USER}`,
          );
        });
        fs.appendFileSync(
          path.join(dataDir, 'postgresql.conf'),
          "\n# Longhaul: loopback TCP only, no unix socket (paths under deep clones exceed its length limit)\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nmax_connections = 200\nfsync = on\n",
        );
      }
      if (await clusterRunning(bin, dataDir)) {
        await ensureDatabase();
        await migrate(config.postgres.url);
        return 'reused';
      }
      if (await canConnect(config.postgres.port)) {
        throw serviceError(
          `port ${config.postgres.port} (Postgres) is in use by another process`,
          'stop that process, or set LONGHAUL_PG_PORT to a free port, or DATABASE_URL to use that server',
        );
      }
      try {
        await asClusterUser(path.join(bin, 'pg_ctl'), [
          'start',
          '-D',
          dataDir,
          '-l',
          log,
          '-w',
          '-t',
          '60',
          '-o',
          `-p ${config.postgres.port}`,
        ]).catch((error: Error) => {
          throw serviceError(`Postgres did not start: ${error.message.split('\n')[0]}\n${tail(log)}`, `read ${log}`);
        });
        await ensureDatabase();
        await migrate(config.postgres.url);
      } catch (error) {
        await stopCluster(bin, dataDir).catch(() => undefined); // a failed start leaves nothing running
        throw error;
      }
      return 'launched';
    },
    async stop() {
      if (!config.postgres.embedded) return;
      await stopCluster(postgresBinDir(), recordedLocation().dataDir);
    },
    async status(): Promise<ServiceStatus> {
      const running = await connectable(new URL(config.postgres.url).pathname.slice(1));
      let pid: number | undefined;
      try {
        pid = Number(fs.readFileSync(path.join(recordedLocation().dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      } catch {
        pid = undefined;
      }
      const url = new URL(config.postgres.url);
      url.password = url.password ? '***' : '';
      return {
        name: 'postgres',
        embedded: config.postgres.embedded,
        running,
        address: url.toString(),
        ...(pid && config.postgres.embedded ? { pid } : {}),
      };
    },
  };
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
