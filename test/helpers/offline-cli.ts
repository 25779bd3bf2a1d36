/**
 * The `longhaul` CLI run as a process against a home that does not exist and ports nothing listens
 * on: a command that refuses its input exits 2 before anything starts; one that tried to reach or
 * start a service would create the home (run/, pid files, logs) or fail otherwise. For the
 * hostile-input corpus's CLI cases.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../infra/paths.js';
import { SHARED_CLUSTERS_DIR } from '../../infra/services/postgres.service.js';

const run = promisify(execFile);
const cli = path.join(repoRoot, 'dist', 'cli', 'main.js');
const runner = path.join(repoRoot, 'dist', 'test', 'fixtures', 'cli-cases.runner.js');

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface CliOutcome {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** The command created the home: it got past its checks and started something. */
  readonly started: boolean;
}

export interface OfflineCli {
  /** A scratch folder for input files, removed by close(). */
  readonly scratch: string;
  /** The LONGHAUL_HOME the commands get; it must never come to exist. */
  readonly home: string;
  run(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /**
   * Runs many command lines in one process (test/fixtures/cli-cases.runner.ts: each command's `run`, exit
   * codes as cli/main.ts gives them), results in order. Loading the CLI costs seconds of CPU a process.
   */
  runAll(argLists: readonly (readonly string[])[]): Promise<CliOutcome[]>;
  close(): Promise<void>;
}

export async function offlineCli(label: string): Promise<OfflineCli> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), `longhaul-${label}-`));
  const home = path.join(scratch, 'home-that-does-not-exist');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LONGHAUL_HOME: home,
    LONGHAUL_TEMPORAL_PORT: String(await freePort()),
    LONGHAUL_TEMPORAL_UI_PORT: String(await freePort()),
    LONGHAUL_PG_PORT: String(await freePort()),
    LONGHAUL_S3_PORT: String(await freePort()),
  };
  const runOne = async (args: readonly string[]) => {
    try {
      const { stdout, stderr } = await run(process.execPath, [cli, ...args], { env, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failure = error as { code: number | string; stdout: string; stderr: string };
      return { code: typeof failure.code === 'number' ? failure.code : -1, stdout: failure.stdout ?? '', stderr: failure.stderr ?? '' };
    }
  };
  return {
    scratch,
    home,
    run: runOne,
    async runAll(argLists) {
      const casesFile = path.join(scratch, `cases-${process.pid}-${Date.now()}.json`);
      const resultsFile = `${casesFile}.results`;
      fs.writeFileSync(casesFile, JSON.stringify(argLists));
      await run(process.execPath, [runner, casesFile, resultsFile], { env, timeout: 600_000, maxBuffer: 64 * 1024 * 1024 });
      return JSON.parse(fs.readFileSync(resultsFile, 'utf8')) as CliOutcome[];
    },
    async close() {
      // Were a check missing, a command would have started services under `home`: stop them first.
      if (fs.existsSync(home)) {
        await runOne(['down']).catch(() => undefined);
        // As root, the cluster of a home under a closed folder lives outside it (infra/services/postgres.service.ts).
        const id = createHash('sha256').update(fs.realpathSync(home)).digest('hex').slice(0, 16);
        fs.rmSync(path.join(SHARED_CLUSTERS_DIR, `postgres-${id}`), { recursive: true, force: true });
      }
      fs.rmSync(scratch, { recursive: true, force: true });
    },
  };
}
