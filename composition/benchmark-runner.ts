/**
 * The scheduled benchmarks' runner: `longhaul bench <name> … --json` as a child process of the worker
 * (the very command a person runs), its progress lines passed on, its last stdout line the result.
 */
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import type { BenchmarkRunner } from '../activities/ports/benchmark-result-store.port.js';
import { repoRoot } from '../infra/paths.js';
import { invalidInput } from '../workflows/contracts/errors.js';

export const cliBenchmarkRunner: BenchmarkRunner = (benchmark, args, onLine) =>
  new Promise((resolve, reject) => {
    const startedAt = Date.now();
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), 'bench', benchmark, ...args, '--json'], {
      cwd: repoRoot,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-20_000);
      for (const line of chunk.toString().split('\n')) if (line.trim()) onLine(line);
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      const tail = stderr.trim().split('\n').slice(-5).join('\n');
      if (code === 2) return reject(invalidInput('args', `longhaul bench ${benchmark} refused its flags: ${tail}`));
      if (code !== 0) return reject(new Error(`longhaul bench ${benchmark} exited with ${code ?? signal}: ${tail}`));
      const last = stdout.trim().split('\n').pop() ?? '';
      try {
        resolve({ result: JSON.parse(last) as Record<string, unknown>, seconds: (Date.now() - startedAt) / 1000 });
      } catch {
        reject(new Error(`longhaul bench ${benchmark} printed no JSON line last: ${last.slice(0, 200)}`));
      }
    });
  });

/** The git commit of the code in the repository ('' when it is no git checkout). */
export function repositoryCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return '';
  }
}
