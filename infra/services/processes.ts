/**
 * Detached service processes with pid files, so `longhaul up` can return while the stack keeps
 * running and `longhaul down` / `status` find it again from another process.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

export interface ManagedProcess {
  /** Service name; names the pid and log files. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
}

/** A service would not start or answer: the message says what, `hint` how to fix it. */
export function serviceError(message: string, hint: string): LonghaulError {
  return new LonghaulError(errorTypes.unavailable, `${message}\n  fix: ${hint}`);
}

export function runDir(home: string): string {
  return path.join(home, 'run');
}
export function logDir(home: string): string {
  return path.join(home, 'logs');
}
export function logFile(home: string, name: string): string {
  return path.join(logDir(home), `${name}.log`);
}
function pidFile(home: string, name: string): string {
  return path.join(runDir(home), `${name}.pid`);
}

/** The pid recorded for `name`, if that process is still alive and is the one we started. */
export function runningPid(home: string, name: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(pidFile(home, name), 'utf8');
  } catch {
    return undefined;
  }
  const [pidText, startText] = text.trim().split(' ');
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
  } catch {
    return undefined;
  }
  // Guard against pid reuse: the kernel's start time of the process must match what we recorded.
  if (startText !== undefined && processStartTime(pid) !== startText) return undefined;
  return pid;
}

function processStartTime(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * True when `file` changed after the process `name` was started (its pid file was written): a worker
 * started before the last build runs the code of the build before. False when either is missing.
 */
export function changedSinceStart(home: string, name: string, file: string): boolean {
  try {
    return fs.statSync(file).mtimeMs > fs.statSync(pidFile(home, name)).mtimeMs;
  } catch {
    return false;
  }
}

/** Start `spec` detached, logging to <home>/logs/<name>.log; returns its pid. */
export function startDetached(home: string, spec: ManagedProcess): number {
  fs.mkdirSync(runDir(home), { recursive: true });
  fs.mkdirSync(logDir(home), { recursive: true });
  const out = fs.openSync(logFile(home, spec.name), 'a');
  fs.writeSync(out, `\n--- ${new Date().toISOString()} starting: ${spec.command} ${spec.args.join(' ')}\n`);
  const child = spawn(spec.command, [...spec.args], {
    cwd: spec.cwd,
    env: spec.env ?? process.env,
    detached: true,
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  if (child.pid === undefined)
    throw serviceError(`could not start ${spec.name} (${spec.command})`, 'check that the binary exists and is executable');
  child.unref();
  fs.writeFileSync(pidFile(home, spec.name), `${child.pid} ${processStartTime(child.pid) ?? ''}\n`);
  return child.pid;
}

/** Stop a detached process: SIGTERM, then SIGKILL after `graceMs`. Returns whether one was running. */
export async function stopProcess(home: string, name: string, graceMs = 10_000): Promise<boolean> {
  const pid = runningPid(home, name);
  fs.rmSync(pidFile(home, name), { force: true });
  if (pid === undefined) return false;
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return true;
    await sleep(100);
  }
  signalGroup(pid, 'SIGKILL');
  return true;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal); // detached => its own process group
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** True when nothing accepts TCP connections on host:port. */
export async function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return !(await canConnect(port, host));
}

export function canConnect(port: number, host = '127.0.0.1', timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Wait until `check` resolves true, or fail naming the service and its log. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, log?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(250);
  }
  throw serviceError(
    `${what} did not become ready within ${Math.round(timeoutMs / 1000)} s`,
    log ? `read ${log}` : 'check the service logs',
  );
}

/** Last lines of a log file, for error messages. */
export function tail(file: string, lines = 15): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
