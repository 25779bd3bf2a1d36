/**
 * Question sets from files: `loadQuestionSet` reads one file in any known layout
 * (activities/question-sets/question-set.ts parses it), `listEvaluationSets` finds the sets under a
 * data root (LONGHAUL_DATA_ROOT, default ../shared/data), and `loadContaminationIndex` builds the
 * contamination index over all of them. The CLI, benchmarks and workers call these; activities reach
 * the index through the ContaminationCheck port.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  parseQuestionSet,
  sniffQuestionSetLayout,
  type ParseOptions,
  type QuestionSet,
  type QuestionSetLayout,
} from '../activities/question-sets/question-set.js';
import { ContaminationIndex, type ContaminationOptions } from '../activities/question-sets/contamination.js';
import { config } from '../infra/config.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

/** Bytes read from each file to tell a question set from anything else. */
const sniffBytes = 1 << 20;

/** Read and parse one question set; a missing or unreadable file is a LonghaulInvalidInput error naming it. */
export async function loadQuestionSet(file: string, options: ParseOptions = {}): Promise<QuestionSet> {
  let bytes: Buffer;
  try {
    bytes = await fs.promises.readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const detail = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a folder, not a file' : (error as Error).message;
    throw new LonghaulError(errorTypes.invalidInput, `${detail}; give the path of a question-set file (.jsonl or .json)`, { field: file });
  }
  return parseQuestionSet(bytes.toString('utf8'), file, options, bytes);
}

export interface EvaluationSetEntry {
  /** Absolute path of the file. */
  readonly path: string;
  /** Path relative to the data root, with forward slashes (e.g. `r1searcher_eval_set/bamboogle.jsonl`): the set's name in reports and verdicts. */
  readonly set: string;
  readonly layout: QuestionSetLayout;
  readonly bytes: number;
}

/** Every question set (.json / .jsonl whose first row has a known layout) under the data root, sorted by path. Corpora are left out. */
export async function listEvaluationSets(dataRoot: string = config().dataRoot): Promise<EvaluationSetEntry[]> {
  const root = path.resolve(dataRoot);
  const stat = await fs.promises.stat(root).catch(() => null);
  if (stat === null || !stat.isDirectory())
    throw new LonghaulError(
      errorTypes.invalidInput,
      `no such folder "${root}"; set LONGHAUL_DATA_ROOT (or --data-root) to the folder of QA sets`,
      {
        field: 'dataRoot',
      },
    );
  const entries: EvaluationSetEntry[] = [];
  for (const file of await walk(root)) {
    if (!/\.jsonl?$/i.test(file)) continue;
    const handle = await fs.promises.open(file, 'r');
    let prefix: string;
    let bytes: number;
    try {
      bytes = (await handle.stat()).size;
      const buffer = Buffer.alloc(Math.min(sniffBytes, bytes));
      await handle.read(buffer, 0, buffer.length, 0);
      prefix = buffer.toString('utf8');
    } finally {
      await handle.close();
    }
    const layout = sniffQuestionSetLayout(prefix);
    if (layout !== null) entries.push({ path: file, set: path.relative(root, file).split(path.sep).join('/'), layout, bytes });
  }
  return entries;
}

/** Load every set `listEvaluationSets` finds (bad rows skipped and reported in each set's `skipped`). */
export async function loadEvaluationSets(dataRoot: string = config().dataRoot): Promise<(QuestionSet & { set: string })[]> {
  const sets: (QuestionSet & { set: string })[] = [];
  for (const entry of await listEvaluationSets(dataRoot))
    sets.push({ ...(await loadQuestionSet(entry.path, { layout: entry.layout })), set: entry.set });
  return sets;
}

/** A contamination index over every evaluation set under the data root, plus any further sets (e.g. registered evaluation datasets). */
export async function loadContaminationIndex(
  dataRoot: string = config().dataRoot,
  options: ContaminationOptions & { extra?: readonly { set: string; items: QuestionSet['items'] }[] } = {},
): Promise<ContaminationIndex> {
  const index = new ContaminationIndex(options);
  for (const set of await loadEvaluationSets(dataRoot)) index.add(set.set, set.items);
  for (const set of options.extra ?? []) index.add(set.set, set.items);
  return index;
}

async function walk(folder: string): Promise<string[]> {
  const files: string[] = [];
  const entries = await fs.promises.readdir(folder, { withFileTypes: true });
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) files.push(...(await walk(full)));
    else if (entry.isFile()) files.push(full);
  }
  return files;
}
