/**
 * Question sets in the layouts people actually have (docs/DATASETS.md): parsing text into
 * `QuestionItem`s, layout detection, and row-by-row validation. Pure (no file I/O): the file loader
 * is `composition/question-sets.ts`, and an activity can parse a set it read from the blob store.
 *
 * A bad row is reported with its line number and skipped, or refused with `strict` (a
 * LonghaulInvalidInput error naming the file, the line and the field).
 */
import { createHash } from 'node:crypto';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';
import type { QuestionRow } from '../../workflows/contracts/learner.contract.js';

export interface QuestionItem {
  readonly id: string;
  readonly question: string;
  /** Accepted answers: any of them is right (FanOutQA's structured answers are rendered as one string; see metadata). */
  readonly answers: string[];
  /** Where the item comes from: the row's own `source` field, else the set's name. */
  readonly source?: string;
  /** Layout-specific extras kept small (no passages): decompositions, supporting titles, gold turns, raw structured answers. */
  readonly metadata?: Record<string, unknown>;
}

export interface SkippedRow {
  /** 1-based line where the row starts. */
  readonly line: number;
  /** The field at fault (`answers`, `question`, `row`…). */
  readonly field: string;
  readonly reason: string;
}

export interface QuestionSet {
  readonly path: string;
  /** The file name without its extension (e.g. `bamboogle`). */
  readonly name: string;
  readonly layout: QuestionSetLayout;
  readonly items: QuestionItem[];
  readonly skipped: SkippedRow[];
  /** sha256 (hex) of the file's bytes. */
  readonly sha256: string;
}

export interface ParseOptions {
  /** Skip detection and read the text as this layout. */
  readonly layout?: string;
  /** Refuse the whole set at the first bad row instead of skipping it. */
  readonly strict?: boolean;
  /** Stop after this many items. */
  readonly limit?: number;
}

/** One entry per layout: how rows look and where they come from. */
export const questionSetLayouts = {
  longhaul: { container: 'jsonl', describe: 'Longhaul question rows: {"id","question","answers":[…], "goldTurns"?:[…]}' },
  asearcher: {
    container: 'jsonl',
    describe: 'ASearcher: {"question","answer", "id"?, "source"?, "aug_answer"?} (answer a string or a list)',
  },
  'r1-searcher': { container: 'jsonl', describe: 'R1-Searcher eval_set: {"idx","question","answer"}' },
  flashrag: { container: 'jsonl', describe: 'FlashRAG: {"id","question","golden_answers":[…], "metadata"?}' },
  kilt: { container: 'jsonl', describe: 'KILT: {"id","input","output":[{"answer", "provenance"?}…]}' },
  simpledeepsearcher: {
    container: 'json',
    describe: 'SimpleDeepSearcher: a JSON array of {"id","Question","answer":[…], "source"?} (FRAMES adds links)',
  },
  fanoutqa: { container: 'json', describe: 'FanOutQA: a JSON array of {"id","question","answer","decomposition","categories"}' },
  hipporag: {
    container: 'json',
    describe:
      'HippoRAG: a JSON array of MuSiQue rows {"id","question","answer","answer_aliases","paragraphs"} or HotpotQA rows {"_id","question","answer","supporting_facts"}',
  },
} as const satisfies Record<string, { container: 'jsonl' | 'json'; describe: string }>;

export type QuestionSetLayout = keyof typeof questionSetLayouts;

export const questionSetLayoutNames = Object.keys(questionSetLayouts) as QuestionSetLayout[];

export function isQuestionSetLayout(name: string): name is QuestionSetLayout {
  return Object.hasOwn(questionSetLayouts, name);
}

/** The error for a layout name nobody knows, listing the known ones. */
export function unknownLayoutError(field: string, name: string): LonghaulError {
  return new LonghaulError(errorTypes.invalidInput, `unknown layout "${name}"; known layouts: ${questionSetLayoutNames.join(', ')}`, {
    field,
  });
}

type Row = Record<string, unknown>;

/** A row that cannot become an item: the field at fault and why. */
class RowError extends Error {
  constructor(
    readonly field: string,
    reason: string,
  ) {
    super(reason);
  }
}

/**
 * Parse a question set's text. `path` names it in errors and gives its name; `bytes`, when given,
 * is what the sha256 is taken over (the file's exact bytes), else the text's UTF-8 encoding.
 */
export function parseQuestionSet(text: string, path: string, options: ParseOptions = {}, bytes?: Uint8Array): QuestionSet {
  if (options.limit !== undefined && !(Number.isInteger(options.limit) && options.limit >= 0))
    throw new LonghaulError(errorTypes.invalidInput, `expected an integer ≥ 0, got ${options.limit}`, { field: 'limit' });
  if (options.layout !== undefined && !isQuestionSetLayout(options.layout)) throw unknownLayoutError('layout', options.layout);
  const sha256 = createHash('sha256')
    .update(bytes ?? Buffer.from(text, 'utf8'))
    .digest('hex');
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const rows = splitRows(body, path);
  const layout = (options.layout as QuestionSetLayout | undefined) ?? detectLayout(rows, path);
  const expected = questionSetLayouts[layout].container;
  if (rows.container !== expected)
    throw new LonghaulError(
      errorTypes.invalidInput,
      `layout ${layout} is ${expected === 'json' ? 'a JSON array' : 'JSON Lines'}, but the file is ${rows.container === 'json' ? 'a JSON array' : 'JSON Lines'}; ` +
        `give the right --layout or leave it out to detect it`,
      { field: path },
    );
  const name = baseName(path);
  const items: QuestionItem[] = [];
  const skipped: SkippedRow[] = [];
  const seen = new Map<string, number>();
  for (const row of rows.rows) {
    if (options.limit !== undefined && items.length >= options.limit) break;
    let item: QuestionItem;
    try {
      if (row.error !== undefined) throw new RowError('row', row.error);
      if (row.value === null || typeof row.value !== 'object' || Array.isArray(row.value))
        throw new RowError('row', 'expected a JSON object');
      item = toItem(layout, row.value as Row, name, row.index);
      const first = seen.get(item.id);
      if (first !== undefined) throw new RowError('id', `"${item.id}" repeats the id of line ${first}`);
    } catch (error) {
      if (!(error instanceof RowError)) throw error;
      if (options.strict)
        throw new LonghaulError(
          errorTypes.invalidInput,
          `${error.field}: ${error.message} (fix the row, or load without --strict to skip bad rows)`,
          { field: `${path}:${row.line}` },
        );
      skipped.push({ line: row.line, field: error.field, reason: error.message });
      continue;
    }
    seen.set(item.id, row.line);
    items.push(item);
  }
  return { path, name, layout, items, skipped, sha256 };
}

/** A Longhaul QuestionRow (the learner's and warm start's input) from an item; gold turns ride in metadata. */
export function toQuestionRow(item: QuestionItem): QuestionRow {
  const goldTurns = item.metadata?.goldTurns;
  const hops = item.metadata?.hops;
  return {
    id: item.id,
    question: item.question,
    answers: item.answers,
    ...(Array.isArray(goldTurns) && goldTurns.every((turn) => typeof turn === 'string') ? { goldTurns } : {}),
    ...(typeof hops === 'number' ? { hops } : {}),
  };
}

interface RawRow {
  readonly line: number;
  /** Position in the file (0-based), used for ids of rows that have none. */
  readonly index: number;
  readonly value?: unknown;
  readonly error?: string;
}

interface Rows {
  readonly container: 'json' | 'jsonl';
  readonly rows: RawRow[];
}

/** JSON array (each element with the line it starts on) or JSON Lines (each non-blank line). */
function splitRows(text: string, path: string): Rows {
  const start = text.search(/\S/);
  if (start === -1) throw new LonghaulError(errorTypes.invalidInput, 'the file is empty', { field: path });
  if (text[start] === '[') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new LonghaulError(errorTypes.invalidInput, `starts like a JSON array but is not valid JSON (${(error as Error).message})`, {
        field: path,
      });
    }
    const lines = arrayElementLines(text, start);
    return { container: 'json', rows: (parsed as unknown[]).map((value, index) => ({ line: lines[index] ?? 1, index, value })) };
  }
  const rows: RawRow[] = [];
  const lines = text.split('\n');
  // One JSON object spread over several lines (the HippoRAG corpus, a pretty-printed object) is not JSON Lines.
  if (text[start] === '{' && lines.length > 1) {
    const firstLine = lines.find((line) => line.trim() !== '')!;
    if (!parses(firstLine) && parses(text))
      throw new LonghaulError(
        errorTypes.invalidInput,
        'is one JSON object, not a question set (expected JSON Lines or a JSON array of rows)',
        {
          field: path,
        },
      );
  }
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    try {
      rows.push({ line: index + 1, index: rows.length, value: JSON.parse(line) });
    } catch {
      rows.push({ line: index + 1, index: rows.length, error: 'not valid JSON' });
    }
  });
  return { container: 'jsonl', rows };
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The 1-based line on which each top-level element of a (valid) JSON array starts. */
function arrayElementLines(text: string, open: number): number[] {
  const lines: number[] = [];
  let line = 1;
  for (let i = 0; i < open; i += 1) if (text.charCodeAt(i) === 10) line += 1;
  let depth = 0;
  let inString = false;
  let expectElement = false;
  for (let i = open; i < text.length; i += 1) {
    const char = text[i]!;
    if (char === '\n') line += 1;
    if (inString) {
      if (char === '\\') i += 1;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === ' ' || char === '\t' || char === '\r' || char === '\n') continue;
    if (depth === 1 && expectElement && char !== ']') {
      lines.push(line);
      expectElement = false;
    }
    if (char === '"') inString = true;
    else if (char === '[' || char === '{') {
      depth += 1;
      if (depth === 1) expectElement = true;
    } else if (char === ']' || char === '}') depth -= 1;
    else if (char === ',' && depth === 1) expectElement = true;
  }
  return lines;
}

/** The layout of a set from its first object row; a passage corpus or an unknown shape is a clear error. */
function detectLayout(rows: Rows, path: string): QuestionSetLayout {
  const sample = rows.rows.find((row) => row.value !== null && typeof row.value === 'object' && !Array.isArray(row.value))?.value as
    Row | undefined;
  const known = `known layouts: ${questionSetLayoutNames.join(', ')} (give one with --layout / { layout })`;
  if (sample === undefined)
    throw new LonghaulError(errorTypes.invalidInput, `no JSON object row to detect the layout from; ${known}`, { field: path });
  const has = (key: string) => Object.hasOwn(sample, key);
  const keys = Object.keys(sample).slice(0, 8).join(', ');
  if (rows.container === 'jsonl') {
    if (has('golden_answers')) return 'flashrag';
    if (has('input') && has('output')) return 'kilt';
    if (has('question') && has('answers')) return 'longhaul';
    if (has('question') && has('answer')) return has('idx') && !has('id') ? 'r1-searcher' : 'asearcher';
  } else {
    if (has('Question')) return 'simpledeepsearcher';
    if (has('question') && has('decomposition')) return 'fanoutqa';
    if (has('question') && (has('paragraphs') || has('context') || has('supporting_facts') || has('answer_aliases'))) return 'hipporag';
  }
  if (has('contents') || has('wikipedia_title') || (has('title') && has('text')))
    throw new LonghaulError(errorTypes.invalidInput, `holds passages (fields ${keys}), not questions: ingest it as a corpus instead`, {
      field: path,
    });
  throw new LonghaulError(errorTypes.invalidInput, `unrecognised question-set layout (first row's fields: ${keys}); ${known}`, {
    field: path,
  });
}

/**
 * A Longhaul row's hop count: its own `hops`, else its synthesis provenance's (`provenance.hops`, what the grounded
 * synthesizer writes); undefined when it has neither. A value that is not a whole number from 1 is a bad row.
 */
export function questionHops(row: Readonly<Record<string, unknown>>): number | undefined {
  const provenance = row.provenance;
  const [field, value] =
    row.hops !== undefined
      ? ['hops', row.hops]
      : provenance !== null && typeof provenance === 'object' && (provenance as Record<string, unknown>).hops !== undefined
        ? ['provenance.hops', (provenance as Record<string, unknown>).hops]
        : [undefined, undefined];
  if (field === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw new RowError(field, 'expected a whole number of hops from 1');
  return value;
}

function toItem(layout: QuestionSetLayout, row: Row, name: string, index: number): QuestionItem {
  switch (layout) {
    case 'longhaul': {
      const goldTurns = row.goldTurns === undefined ? undefined : stringList(row.goldTurns, 'goldTurns');
      if (!Array.isArray(row.answers)) throw new RowError('answers', row.answers === undefined ? 'missing' : 'expected a list of strings');
      const hops = questionHops(row);
      return item(rowId(row, 'id', index), text(row, 'question'), answerList(row.answers, 'answers'), row, name, {
        ...(goldTurns ? { goldTurns } : {}),
        ...(hops !== undefined ? { hops } : {}),
      });
    }
    case 'asearcher': {
      const answers = answerList(row.answer, 'answer');
      const extra = row.aug_answer === undefined || row.aug_answer === null ? [] : answerList(row.aug_answer, 'aug_answer', true);
      return item(rowId(row, 'id', index), text(row, 'question'), [...answers, ...extra], row, name, {});
    }
    case 'r1-searcher':
      return item(rowId(row, 'idx', index), text(row, 'question'), answerList(row.answer, 'answer'), row, name, {});
    case 'flashrag': {
      const metadata = row.metadata !== null && typeof row.metadata === 'object' ? { flashrag: row.metadata } : {};
      return item(rowId(row, 'id', index), text(row, 'question'), answerList(row.golden_answers, 'golden_answers'), row, name, metadata);
    }
    case 'kilt': {
      if (!Array.isArray(row.output)) throw new RowError('output', 'expected a list of {"answer"} objects');
      const answers = row.output.flatMap((output: unknown) =>
        output !== null && typeof output === 'object' && typeof (output as Row).answer === 'string' && (output as Row).answer !== ''
          ? [(output as Row).answer as string]
          : [],
      );
      if (answers.length === 0) throw new RowError('output', 'no entry with a non-empty "answer"');
      return item(rowId(row, 'id', index), text(row, 'input'), answers, row, name, {});
    }
    case 'simpledeepsearcher': {
      const answers = answerList(row.answer ?? row.Answer, 'answer');
      const links = Object.entries(row)
        .filter(([key, value]) => key.startsWith('wikipedia_link') && typeof value === 'string' && value !== '')
        .map(([, value]) => value as string);
      const metadata = {
        ...(links.length > 0 ? { wikipediaLinks: links } : {}),
        ...(typeof row.reasoning_types === 'string' ? { reasoningTypes: row.reasoning_types } : {}),
      };
      return item(rowId(row, 'id', index), text(row, 'Question'), answers, row, name, metadata);
    }
    case 'fanoutqa': {
      const { rendered, parts } = renderStructuredAnswer(row.answer);
      return item(rowId(row, 'id', index), text(row, 'question'), [rendered], row, name, {
        answer: row.answer,
        answerParts: parts,
        structuredAnswer: typeof row.answer === 'object',
        ...(Array.isArray(row.categories) ? { categories: row.categories } : {}),
        ...(Array.isArray(row.decomposition) ? { decomposition: row.decomposition } : {}),
      });
    }
    case 'hipporag': {
      const answers = answerList(row.answer, 'answer');
      if (row.answer_aliases !== undefined) answers.push(...answerList(row.answer_aliases, 'answer_aliases', true));
      const metadata: Record<string, unknown> = {};
      if (Array.isArray(row.paragraphs)) {
        metadata.supportingTitles = row.paragraphs
          .filter((paragraph: unknown) => (paragraph as Row | null)?.is_supporting === true)
          .map((paragraph: unknown) => (paragraph as Row).title);
      }
      if (Array.isArray(row.supporting_facts)) metadata.supportingFacts = row.supporting_facts;
      if (Array.isArray(row.question_decomposition)) metadata.decomposition = row.question_decomposition;
      for (const key of ['type', 'level', 'answerable']) if (row[key] !== undefined) metadata[key] = row[key];
      return item(rowId(row, row.id === undefined ? '_id' : 'id', index), text(row, 'question'), answers, row, name, metadata);
    }
  }
}

function item(id: string, question: string, answers: string[], row: Row, name: string, metadata: Record<string, unknown>): QuestionItem {
  const unique = [...new Set(answers)];
  const source = typeof row.source === 'string' && row.source !== '' ? row.source : name;
  return Object.keys(metadata).length > 0 ? { id, question, answers: unique, source, metadata } : { id, question, answers: unique, source };
}

/** The row's id as a string; a row without one gets its position (1-based) in the file. */
function rowId(row: Row, field: string, index: number): string {
  const value = row[field];
  if (value === undefined || value === null) return String(index + 1);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string' && value.trim() !== '') return value;
  throw new RowError(field, `expected a non-empty string or a number, got ${JSON.stringify(value)}`);
}

function text(row: Row, field: string): string {
  const value = row[field];
  if (typeof value !== 'string' || value.trim() === '')
    throw new RowError(field, value === undefined ? 'missing' : 'expected a non-empty string');
  return value.trim();
}

/** A string or a list of strings (numbers are accepted as their text), with at least one non-empty answer unless `mayBeEmpty`. */
function answerList(value: unknown, field: string, mayBeEmpty = false): string[] {
  const values = Array.isArray(value) ? value : [value];
  if (value === undefined) throw new RowError(field, 'missing');
  const answers: string[] = [];
  for (const entry of values) {
    if (typeof entry === 'number' && Number.isFinite(entry)) answers.push(String(entry));
    else if (typeof entry === 'string') {
      if (entry.trim() !== '') answers.push(entry.trim());
    } else throw new RowError(field, `expected a string or a list of strings, got ${JSON.stringify(entry)?.slice(0, 60)}`);
  }
  if (answers.length === 0 && !mayBeEmpty) throw new RowError(field, 'no non-empty answer');
  return answers;
}

function stringList(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((entry) => typeof entry === 'string' && entry.trim() !== ''))
    throw new RowError(field, 'expected a non-empty list of non-empty strings');
  return value as string[];
}

/**
 * FanOutQA answers are a string, a number, a boolean, a list or an entity → value object. One string
 * for `answers` ("k: v; k2: v2", "a, b"), and every leaf value for metrics that check coverage.
 */
function renderStructuredAnswer(answer: unknown): { rendered: string; parts: string[] } {
  const parts: string[] = [];
  const render = (value: unknown): string => {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      const leaf = String(value).trim();
      if (leaf !== '') parts.push(leaf);
      return leaf;
    }
    if (Array.isArray(value)) return value.map(render).join(', ');
    if (value !== null && typeof value === 'object')
      return Object.entries(value)
        .map(([key, inner]) => `${key}: ${render(inner)}`)
        .join('; ');
    throw new RowError('answer', `expected a string, number, boolean, list or object, got ${JSON.stringify(value)}`);
  };
  const rendered = render(answer).trim();
  if (rendered === '') throw new RowError('answer', 'no non-empty answer');
  return { rendered, parts };
}

function baseName(path: string): string {
  const file = path.split(/[\\/]/).pop() ?? path;
  return file.replace(/\.(jsonl|json)$/i, '');
}

/**
 * The layout of a set from the first bytes of its file (a JSON Lines line or a JSON array's first
 * element), or null when that prefix is not a question set (a passage corpus, another JSON document,
 * a row too long for the prefix). Lets a data root be listed without reading whole corpora.
 */
export function sniffQuestionSetLayout(prefix: string): QuestionSetLayout | null {
  const body = prefix.charCodeAt(0) === 0xfeff ? prefix.slice(1) : prefix;
  const start = body.search(/\S/);
  if (start === -1) return null;
  let rows: Rows;
  if (body[start] === '[') {
    const element = firstArrayElement(body, start);
    if (element === null || !parses(element)) return null;
    rows = { container: 'json', rows: [{ line: 1, index: 0, value: JSON.parse(element) }] };
  } else {
    const line = body.slice(start).split('\n')[0]!;
    if (!parses(line)) return null;
    rows = { container: 'jsonl', rows: [{ line: 1, index: 0, value: JSON.parse(line) }] };
  }
  try {
    return detectLayout(rows, 'prefix');
  } catch {
    return null;
  }
}

/** The text of a JSON array's first element, or null when the prefix ends before it does. */
function firstArrayElement(text: string, open: number): string | null {
  let depth = 0;
  let inString = false;
  let begin = -1;
  for (let i = open + 1; i < text.length; i += 1) {
    const char = text[i]!;
    if (inString) {
      if (char === '\\') i += 1;
      else if (char === '"') inString = false;
      continue;
    }
    if (begin === -1) {
      if (/\s/.test(char)) continue;
      if (char === ']') return null;
      begin = i;
    }
    if (char === '"') inString = true;
    else if (char === '[' || char === '{') depth += 1;
    else if (char === ']' || char === '}') {
      if (depth === 0) return text.slice(begin, i);
      depth -= 1;
      if (depth === 0) return text.slice(begin, i + 1);
    } else if (char === ',' && depth === 0) return text.slice(begin, i);
  }
  return null;
}
