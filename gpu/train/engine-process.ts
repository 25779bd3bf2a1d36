/**
 * Runs one engine command (`python -m longhaul_engine.train|sft --manifest …`) as a child process:
 * its stdout JSON lines become events, `done` resolves with the metrics, an `error` line (exit 2)
 * rejects with a non-retryable LonghaulError of the engine's stable type, anything else with a retryable one
 * carrying the end of stderr. Aborting the signal terminates the child (SIGTERM, then SIGKILL).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { z } from 'zod';
import { repoRoot } from '../../infra/paths.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

/** The engine refused the batch (LonghaulInvalidInput) or found a corrupt checkpoint (LonghaulCorrupt): never retried. */
function engineRefusal(type: unknown, message: unknown): LonghaulError {
  return new LonghaulError(
    type === errorTypes.corrupt ? errorTypes.corrupt : errorTypes.invalidInput,
    `engine refused: ${String(message ?? 'engine refused the batch')}`,
  );
}

const eventSchema = z.object({ event: z.string() }).passthrough();
export type EngineEvent = z.infer<typeof eventSchema>;

export interface EngineRunOptions {
  readonly python: string;
  readonly kind: 'rl' | 'sft';
  readonly manifestPath: string;
  /** auto: export model.onnx into the version when the exporter is importable. */
  readonly onnx: 'auto' | 'skip';
  /** torch CPU threads; 0 = torch's default. */
  readonly threads: number;
  readonly signal: AbortSignal;
  readonly onEvent: (event: EngineEvent) => void;
  /** Grace period between SIGTERM and SIGKILL on abort. @default 5000 */
  readonly killGraceMs?: number;
}

function parseLine(line: string): EngineEvent | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = eventSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Run the engine to completion; resolves with the `done` event's metrics. */
export function runEngine(options: EngineRunOptions): Promise<Record<string, unknown>> {
  const module = options.kind === 'rl' ? 'longhaul_engine.train' : 'longhaul_engine.sft';
  const args = ['-m', module, '--manifest', options.manifestPath, '--onnx', options.onnx, '--threads', String(options.threads)];
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) {
      reject(options.signal.reason instanceof Error ? options.signal.reason : new Error('aborted'));
      return;
    }
    const child = spawn(options.python, args, { cwd: path.join(repoRoot, 'gpu', 'engine'), stdio: ['ignore', 'pipe', 'pipe'] });
    let done: EngineEvent | undefined;
    let refusal: EngineEvent | undefined;
    let stderr = '';
    let killTimer: NodeJS.Timeout | undefined;
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const event = parseLine(line.trim());
      if (!event) return;
      if (event.event === 'done') done = event;
      else if (event.event === 'error') refusal = event;
      options.onEvent(event);
    });
    const abort = () => {
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), options.killGraceMs ?? 5000);
    };
    options.signal.addEventListener('abort', abort, { once: true });
    child.once('error', (error) =>
      reject(new LonghaulError(errorTypes.unavailable, `engine could not start (${options.python}): ${error.message}`)),
    );
    child.once('close', (code, signalName) => {
      options.signal.removeEventListener('abort', abort);
      clearTimeout(killTimer);
      if (options.signal.aborted) reject(options.signal.reason instanceof Error ? options.signal.reason : new Error('aborted'));
      else if (code === 0 && done) resolve(z.record(z.string(), z.unknown()).catch({}).parse(done.metrics));
      else if (refusal) reject(engineRefusal(refusal.type, refusal.message));
      else
        reject(
          new LonghaulError(
            errorTypes.unavailable,
            `engine exited with ${signalName ?? `code ${code}`} before finishing:\n${stderr.trim().split('\n').slice(-12).join('\n')}`,
          ),
        );
    });
  });
}
