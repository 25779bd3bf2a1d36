/**
 * A prepared policy folder (written by gpu/engine's `longhaul_engine.prepare`): safetensors +
 * tokenizer.json for the trainer, model.onnx for inference, and `longhaul-model.json` describing it.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { repoRoot } from '../../infra/paths.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

const run = promisify(execFile);

export const manifestFileName = 'longhaul-model.json';

/** The prepared-folder layout `longhaul model prepare` writes (longhaul_engine.prepare FORMAT_VERSION). */
export const modelFormat = 4;

/** Layouts this code still serves: format 2 has the same graph inputs and outputs as 3, with attention that
 * copies the key/value cache once per query-head group (slower); format 3 lacks 4's `new.*` outputs, so the
 * batch decoder takes the grown cache back from onnxruntime every run (slower at wide batches). A local
 * folder of an older format is re-prepared. */
export const readableModelFormats = [2, 3, modelFormat] as const;

export const modelManifestSchema = z.object({
  format: z.literal(
    readableModelFormats,
    `expected format ${readableModelFormats.join(' or ')}: re-run \`longhaul model prepare\` (older folders lack the logits_positions input)`,
  ),
  name: z.string().min(1),
  tiny: z.boolean(),
  source: z.string(),
  architecture: z.literal('llama'),
  layers: z.number().int().min(1),
  kvHeads: z.number().int().min(1),
  headDim: z.number().int().min(1),
  vocabSize: z.number().int().min(1),
  bosTokenId: z.number().int().nullish(),
  stopTokenIds: z.array(z.number().int().min(0)),
  chatTemplate: z.string().nullish(),
  onnx: z.object({ file: z.string().min(1), maxLogitDifference: z.number(), opset: z.number().int() }).passthrough(),
  parameters: z.number().int(),
  prepareSeconds: z.number().optional(),
});

export type ModelManifest = z.infer<typeof modelManifestSchema>;

/** Read and validate a prepared folder's manifest; names the folder and field when it is wrong. */
export function readManifest(modelDir: string): ModelManifest {
  const file = path.join(modelDir, manifestFileName);
  if (!fs.existsSync(file))
    throw new LonghaulError(
      errorTypes.invalidInput,
      `${modelDir} is not a prepared model folder (no ${manifestFileName}); run \`longhaul model prepare\``,
    );
  const parsed = modelManifestSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')) as unknown);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new LonghaulError(errorTypes.invalidInput, `${file}: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}

/** Files of a prepared folder, relative names, sorted (what gets uploaded as a policy version). */
export function modelFiles(modelDir: string): string[] {
  return fs
    .readdirSync(modelDir)
    .filter((name) => fs.statSync(path.join(modelDir, name)).isFile())
    .sort();
}

export interface PrepareOptions {
  /** The engine's Python (infra/services/binaries.ts enginePython). */
  readonly python: string;
  readonly out: string;
  readonly tiny: boolean;
  /** Where the downloaded GGUF is kept between preparations. */
  readonly cacheDir: string;
  /** Progress lines from the engine (stderr). */
  readonly onLog?: (line: string) => void;
}

/** Run the engine's preparation unless `out` already holds a valid prepared model; returns its manifest. */
export async function ensurePreparedModel(options: PrepareOptions): Promise<{ manifest: ModelManifest; built: boolean }> {
  const existing = path.join(options.out, manifestFileName);
  if (fs.existsSync(existing) && (JSON.parse(fs.readFileSync(existing, 'utf8')) as { format?: unknown }).format === modelFormat) {
    return { manifest: readManifest(options.out), built: false };
  }
  const args = ['-m', 'longhaul_engine.prepare', '--out', options.out, '--cache', options.cacheDir, ...(options.tiny ? ['--tiny'] : [])];
  try {
    const child = run(options.python, args, {
      cwd: path.join(repoRoot, 'gpu', 'engine'),
      timeout: 30 * 60_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    child.child.stderr?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.startsWith('[prepare]')) options.onLog?.(line);
    });
    await child;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new LonghaulError(
      errorTypes.invalidInput,
      `model preparation failed: ${(error as Error).message.split('\n')[0]}\n${stderr.split('\n').slice(-15).join('\n')}`,
    );
  }
  return { manifest: readManifest(options.out), built: true };
}
