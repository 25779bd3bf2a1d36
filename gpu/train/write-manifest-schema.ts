/**
 * Writes gpu/engine/manifest.schema.json from the zod schema in manifest.ts (the engine validates
 * manifests with that file). Run after changing the manifest schema:
 *   npx tsc -p tsconfig.json && node dist/gpu/train/write-manifest-schema.js
 * `--check` writes nothing and exits 1 when the committed file differs (manifest.test.ts checks the same).
 */
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../infra/paths.js';
import { manifestJsonSchemaPath, manifestJsonSchemaText } from './manifest.js';

const file = path.join(repoRoot, manifestJsonSchemaPath);
const text = manifestJsonSchemaText();
const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
if (current === text) {
  console.error(`${manifestJsonSchemaPath} is up to date`);
} else if (process.argv.includes('--check')) {
  console.error(`${manifestJsonSchemaPath} differs from gpu/train/manifest.ts: run node dist/gpu/train/write-manifest-schema.js`);
  process.exit(1);
} else {
  fs.writeFileSync(file, text);
  console.error(`wrote ${manifestJsonSchemaPath}`);
}
