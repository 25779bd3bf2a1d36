/**
 * Test support: the tiny random Llama (SmolLM2 tokenizer) prepared once per tools folder, so test
 * runs that wipe LONGHAUL_HOME do not rebuild it; and a way to run Python against it for reference values.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../infra/config.js';
import { repoRoot } from '../../infra/paths.js';
import { enginePython } from '../../infra/services/binaries.js';
import { ensurePreparedModel } from '../../gpu/infer/model-files.js';

const run = promisify(execFile);

export function testPython(): string {
  return enginePython(loadConfig().toolsDir);
}

/** The GGUF download cache shared by every preparation on this machine. */
export function modelCacheDir(toolsDir = loadConfig().toolsDir): string {
  return path.join(toolsDir, 'models', 'cache');
}

let prepared: Promise<string> | undefined;

/** Folder of the tiny test model, prepared on first use (≈ 20 s; the GGUF is downloaded once per machine). */
export function tinyModelDir(): Promise<string> {
  prepared ??= (async () => {
    const toolsDir = loadConfig().toolsDir;
    const out = path.join(toolsDir, 'models', 'tiny-test');
    await ensurePreparedModel({ python: enginePython(toolsDir), out, tiny: true, cacheDir: modelCacheDir(toolsDir) });
    return out;
  })();
  return prepared;
}

/** Run a Python snippet in the engine's venv with a JSON argument; returns its last stdout line parsed as JSON. */
export async function pythonJson(script: string, argument: unknown): Promise<unknown> {
  const { stdout } = await run(testPython(), ['-c', script, JSON.stringify(argument)], {
    cwd: path.join(repoRoot, 'gpu', 'engine'),
    maxBuffer: 64 * 1024 * 1024,
    timeout: 300_000,
  });
  return JSON.parse(stdout.trim().split('\n').pop() ?? 'null') as unknown;
}
