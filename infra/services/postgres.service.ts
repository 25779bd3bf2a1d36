import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Config } from '../config.js';
import { migrate } from '../postgres/migrate.js';
import { postgresBinDir } from './binaries.js';
import { serviceError, canConnect, logFile, tail } from './processes.js';
import type { Service, ServiceStatus } from './service.js';

const run = promisify(execFile);
/** initdb and postgres refuse to run as root; as root we run the cluster as this system user. */
const CLUSTER_USER = 'longhaul';

/** A project-local PostgreSQL cluster under LONGHAUL_HOME, loopback only, on its own port. */
export function postgresService(config: Config): Service {
  const dataDir = path.join(config.home, 'postgres', 'data');
  const log = logFile(config.home, 'postgres');
  const isRoot = process.getuid?.() === 0;

  async function asClusterUser(command: string, args: string[], timeout = 120_000) {
    if (!isRoot) return run(command, args, { timeout });
    return run('runuser', ['-u', CLUSTER_USER, '--', command, ...args], { timeout });
  }

  async function ensureClusterUser(): Promise<void> {
    if (!isRoot) return;
    try {
      await run('id', ['-u', CLUSTER_USER]);
    } catch {
      await run('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', CLUSTER_USER]).catch((error: Error) => {
        throw serviceError(`could not create the system user "${CLUSTER_USER}" that runs Postgres (initdb refuses root): ${error.message}`,
          'run longhaul as a non-root user, or set DATABASE_URL to an existing database');
      });
    }
    for (const target of [path.join(config.home, 'postgres'), log]) {
      await run('chown', ['-R', `${CLUSTER_USER}:${CLUSTER_USER}`, target]);
    }
    // The cluster user must be able to traverse down to its folder. LONGHAUL_HOME is ours to open up
    // (search permission only); a closed folder above it is the user's to fix, so we name it.
    fs.chmodSync(config.home, fs.statSync(config.home).mode | 0o001);
    for (let dir = config.home; dir !== path.dirname(dir); dir = path.dirname(dir)) {
      try {
        await run('runuser', ['-u', CLUSTER_USER, '--', 'test', '-x', dir]);
      } catch {
        throw serviceError(`Postgres runs as user "${CLUSTER_USER}" (initdb refuses root), which cannot enter ${dir}`,
          `chmod o+x ${dir}, or set LONGHAUL_HOME to a folder outside it, or set DATABASE_URL to an existing database`);
      }
    }
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

  async function clusterRunning(bin: string): Promise<boolean> {
    if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) return false;
    try {
      await asClusterUser(path.join(bin, 'pg_ctl'), ['status', '-D', dataDir], 10_000);
      return true;
    } catch {
      return false;
    }
  }

  return {
    name: 'postgres',
    async start() {
      if (!config.postgres.embedded) {
        if (!(await connectable(new URL(config.postgres.url).pathname.slice(1)))) {
          throw serviceError('Postgres at DATABASE_URL is not reachable', 'check DATABASE_URL, or unset it to run the embedded cluster');
        }
        await migrate(config.postgres.url);
        return;
      }
      const bin = postgresBinDir();
      fs.mkdirSync(path.dirname(dataDir), { recursive: true });
      fs.mkdirSync(path.dirname(log), { recursive: true });
      if (!fs.existsSync(log)) fs.writeFileSync(log, '');
      await ensureClusterUser();
      if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
        fs.rmSync(dataDir, { recursive: true, force: true }); // a half-made cluster from an interrupted initdb
        await asClusterUser(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'longhaul', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8'])
          .catch((error: Error & { stderr?: string }) => {
            throw serviceError(`initdb failed: ${error.stderr ?? error.message}`, `check that ${path.dirname(dataDir)} is writable and its parent folders are traversable by user ${CLUSTER_USER}`);
          });
        fs.appendFileSync(path.join(dataDir, 'postgresql.conf'),
          "\n# Longhaul: loopback TCP only, no unix socket (paths under deep clones exceed its length limit)\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nmax_connections = 200\nfsync = on\n");
      }
      if (!(await clusterRunning(bin))) {
        if (await canConnect(config.postgres.port)) {
          throw serviceError(`port ${config.postgres.port} (Postgres) is in use by another process`, 'stop that process, or set LONGHAUL_PG_PORT to a free port, or DATABASE_URL to use that server');
        }
        await asClusterUser(path.join(bin, 'pg_ctl'), ['start', '-D', dataDir, '-l', log, '-w', '-t', '60', '-o', `-p ${config.postgres.port}`])
          .catch((error: Error) => {
            throw serviceError(`Postgres did not start: ${error.message.split('\n')[0]}\n${tail(log)}`, `read ${log}`);
          });
      }
      await ensureDatabase();
      await migrate(config.postgres.url);
    },
    async stop() {
      if (!config.postgres.embedded) return;
      const bin = postgresBinDir();
      if (await clusterRunning(bin)) await asClusterUser(path.join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60']);
    },
    async status(): Promise<ServiceStatus> {
      const running = await connectable(new URL(config.postgres.url).pathname.slice(1));
      let pid: number | undefined;
      try {
        pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      } catch {
        pid = undefined;
      }
      const url = new URL(config.postgres.url);
      url.password = url.password ? '***' : '';
      return { name: 'postgres', embedded: config.postgres.embedded, running, address: url.toString(), ...(pid && config.postgres.embedded ? { pid } : {}) };
    },
  };
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
