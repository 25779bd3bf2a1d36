/**
 * The search benchmark (`longhaul bench search`): retrieval quality of the supporting paragraphs of
 * HippoRAG's MuSiQue questions (recall@5, recall@10, MRR@10) and speed (queries per second, p50
 * latency) at 1 and 8 concurrent clients. Runs in its own Postgres schema so the user's corpus is
 * neither measured nor touched; `large` adds the default corpus with every city (≥100k passages).
 */
import fs from 'node:fs';
import type pg from 'pg';
import { z } from 'zod';
import type { SearchEngine } from '../activities/ports/search.port.js';
import { corpusCounts } from '../corpus/corpus-writer.pg.js';
import { buildDefaultCorpus } from '../corpus/default-corpus.js';
import { DocumentNormaliser } from '../corpus/documents.js';
import { ingestFile } from '../corpus/ingest.js';
import { createDenseSearchEngine, embedMissingPassages } from '../infra/search/dense-search.pg.js';
import { createHttpEmbeddingClient } from '../infra/search/embeddings.http.js';
import { createFtsSearchEngine } from '../infra/search/fts-search.pg.js';
import { createHybridSearchEngine } from '../infra/search/hybrid-search.js';
import { openSchemaPool } from '../infra/search/open.js';

const questionSchema = z.array(
  z
    .object({
      id: z.string(),
      question: z.string(),
      paragraphs: z.array(z.object({ title: z.string(), paragraph_text: z.string(), is_supporting: z.boolean() }).loose()),
    })
    .loose(),
);

export interface SearchBenchmarkOptions {
  readonly databaseUrl: string;
  readonly questionsFile: string;
  readonly corpusFile: string;
  readonly toolsDir: string;
  /** Also measure on the default corpus with every city plus this corpus (≥100k passages). */
  readonly large: boolean;
  /** Queries per speed measurement. @default 400 */
  readonly queries?: number;
  /** An OpenAI-compatible embeddings endpoint: adds dense and hybrid figures on the MuSiQue corpus. */
  readonly embeddings?: { readonly url: string; readonly model: string } | null;
  readonly log?: (message: string) => void;
}

export interface SpeedFigures {
  readonly qps: number;
  readonly p50_ms: number;
  readonly p95_ms: number;
}
export interface CorpusFigures {
  readonly engine: string;
  readonly docs: number;
  readonly passages: number;
  readonly recall_at_5: number;
  readonly recall_at_10: number;
  readonly mrr: number;
  readonly clients: Readonly<Record<'1' | '8', SpeedFigures>>;
}

interface Question {
  readonly text: string;
  readonly supporting: ReadonlySet<string>;
}

/** Questions with the document ids of their supporting paragraphs (ids as ingestion gives them). */
export function loadQuestions(questionsFile: string, corpusFile: string): Question[] {
  const normaliser = new DocumentNormaliser();
  const corpus = z.array(z.object({ title: z.string(), text: z.string() })).parse(JSON.parse(fs.readFileSync(corpusFile, 'utf8')));
  const idByContent = new Map<string, string>();
  for (const entry of corpus) {
    const document = normaliser.normalise(entry);
    if (!('error' in document)) idByContent.set(`${entry.title.trim()}\u0000${entry.text.trim()}`, document.id);
  }
  return questionSchema.parse(JSON.parse(fs.readFileSync(questionsFile, 'utf8'))).map((item) => {
    const supporting = item.paragraphs
      .filter((paragraph) => paragraph.is_supporting)
      .map((paragraph) => {
        const id = idByContent.get(`${paragraph.title.trim()}\u0000${paragraph.paragraph_text.trim()}`);
        if (id === undefined) throw new Error(`question ${item.id}: supporting paragraph "${paragraph.title}" is not in ${corpusFile}`);
        return id;
      });
    return { text: item.question, supporting: new Set(supporting) };
  });
}

/** Ranked distinct document ids (a document's pages count once, at its best rank). */
function rankedDocuments(hits: readonly { documentId: string }[]): string[] {
  return [...new Set(hits.map((hit) => hit.documentId))];
}

export async function measureQuality(engine: SearchEngine, questions: readonly Question[]) {
  let recall5 = 0;
  let recall10 = 0;
  let reciprocal = 0;
  for (const question of questions) {
    const ranked = rankedDocuments(await engine.search(question.text, 20)).slice(0, 10);
    const found = (k: number) => ranked.slice(0, k).filter((id) => question.supporting.has(id)).length / question.supporting.size;
    recall5 += found(5);
    recall10 += found(10);
    const first = ranked.findIndex((id) => question.supporting.has(id));
    reciprocal += first >= 0 ? 1 / (first + 1) : 0;
  }
  const round = (value: number) => Math.round((value / questions.length) * 10_000) / 10_000;
  return { recall_at_5: round(recall5), recall_at_10: round(recall10), mrr: round(reciprocal) };
}

export async function measureSpeed(
  engine: SearchEngine,
  queries: readonly string[],
  clients: number,
  total: number,
): Promise<SpeedFigures> {
  const latencies: number[] = [];
  let next = 0;
  const startedAt = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < total) {
        const query = queries[next % queries.length]!;
        next += 1;
        const began = performance.now();
        await engine.search(query, 10);
        latencies.push(performance.now() - began);
      }
    }),
  );
  const seconds = (performance.now() - startedAt) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]! * 100) / 100;
  return { qps: Math.round((total / seconds) * 10) / 10, p50_ms: at(0.5), p95_ms: at(0.95) };
}

async function measureCorpus(pool: pg.Pool, engine: SearchEngine, questions: readonly Question[], total: number): Promise<CorpusFigures> {
  const counts = await corpusCounts(pool);
  const quality = await measureQuality(engine, questions);
  const texts = questions.map((question) => question.text);
  await measureSpeed(engine, texts, 1, Math.min(50, total));
  const one = await measureSpeed(engine, texts, 1, total);
  const eight = await measureSpeed(engine, texts, 8, total);
  return { engine: engine.name, docs: counts.documents, passages: counts.passages, ...quality, clients: { 1: one, 8: eight } };
}

export async function runSearchBenchmark(options: SearchBenchmarkOptions) {
  const log = options.log ?? (() => undefined);
  const questions = loadQuestions(options.questionsFile, options.corpusFile);
  const total = options.queries ?? 400;
  const small = await openSchemaPool(options.databaseUrl, 'bench_search_musique');
  const engines: CorpusFigures[] = [];
  try {
    log(`ingesting ${options.corpusFile}`);
    await ingestFile(small, options.corpusFile);
    log(`measuring fts on ${questions.length} questions`);
    const fts = createFtsSearchEngine(small);
    engines.push(await measureCorpus(small, fts, questions, total));
    if (options.embeddings) engines.push(...(await measureDense(small, fts, options.embeddings, questions, Math.min(total, 200), log)));
  } finally {
    await small.end();
  }
  let large: CorpusFigures | null = null;
  if (options.large) {
    const pool = await openSchemaPool(options.databaseUrl, 'bench_search_large');
    try {
      log('building the default corpus with every city (first time: about two minutes)');
      await buildDefaultCorpus(pool, { toolsDir: options.toolsDir, minCityPopulation: 0 });
      await ingestFile(pool, options.corpusFile);
      log('large corpus ready; measuring fts');
      large = await measureCorpus(pool, createFtsSearchEngine(pool), questions, total);
    } finally {
      await pool.end();
    }
  }
  const fts = engines[0]!;
  return {
    engine: 'fts',
    questions: questions.length,
    docs: fts.docs,
    qps: fts.clients['8'].qps,
    p50_ms: fts.clients['1'].p50_ms,
    recall_at_10: fts.recall_at_10,
    engines,
    large,
  };
}

async function measureDense(
  pool: pg.Pool,
  fts: SearchEngine,
  embeddings: { url: string; model: string },
  questions: readonly Question[],
  total: number,
  log: (message: string) => void,
): Promise<CorpusFigures[]> {
  const client = createHttpEmbeddingClient({ url: embeddings.url, model: embeddings.model });
  const startedAt = Date.now();
  const embedded = await embedMissingPassages(pool, client, {
    onProgress: (done, all) => {
      if (done % 320 === 0 || done === all) log(`embedded ${done}/${all} passages`);
    },
  });
  log(`embedded ${embedded} passages in ${((Date.now() - startedAt) / 1000).toFixed(0)} s; measuring dense and hybrid`);
  const dense = createDenseSearchEngine(pool, client);
  await dense.reload();
  return [
    await measureCorpus(pool, dense, questions, total),
    await measureCorpus(pool, createHybridSearchEngine([fts, dense]), questions, total),
  ];
}
