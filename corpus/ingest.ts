/**
 * `ingestFile`: stream a corpus file into the search tables. Malformed rows are reported by line
 * number and either skipped or fail the run (`onBadRow`); documents are written in atomic batches,
 * so a failure leaves whole documents only, and a re-run resumes where it stopped (unchanged
 * documents are skipped by content hash).
 */
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { refreshTermStatistics } from '../infra/search/fts-search.pg.js';
import { writeDocuments } from './corpus-writer.pg.js';
import { DocumentNormaliser, type CorpusDocument } from './documents.js';
import { readRecords } from './records.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

export interface IngestOptions {
  /** Label stored with each document. @default the file's base name */
  readonly source?: string;
  /** "skip" reports a bad row and goes on; "fail" stops at it. @default "skip" */
  readonly onBadRow?: 'skip' | 'fail';
  /** Documents per transaction. @default 500 */
  readonly batchSize?: number;
  /** Words per page. @default 200 */
  readonly pageWords?: number;
  readonly onProgress?: (bytesRead: number, totalBytes: number, documents: number) => void;
}

export interface BadRow {
  readonly line: number;
  readonly message: string;
}

export interface IngestReport {
  readonly file: string;
  readonly read: number;
  readonly written: number;
  readonly unchanged: number;
  readonly passages: number;
  readonly badRows: number;
  /** The first 20 bad rows. */
  readonly errors: readonly BadRow[];
  readonly seconds: number;
}

export class IngestError extends LonghaulError {
  constructor(
    readonly file: string,
    readonly line: number,
    detail: string,
  ) {
    super(errorTypes.invalidInput, detail, { field: `${file}:${line}` });
    this.name = 'IngestError';
  }
}

export async function ingestFile(pool: pg.Pool, file: string, options: IngestOptions = {}): Promise<IngestReport> {
  const startedAt = Date.now();
  const totalBytes = (await fs.promises.stat(file)).size;
  const source = options.source ?? path.basename(file);
  const batchSize = options.batchSize ?? 500;
  const pageWords = options.pageWords ?? 200;
  const normaliser = new DocumentNormaliser();
  const totals = { read: 0, written: 0, unchanged: 0, passages: 0, badRows: 0 };
  const errors: BadRow[] = [];
  let batch: CorpusDocument[] = [];
  let bytesRead = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const result = await writeDocuments(pool, batch, source, pageWords);
    totals.written += result.written;
    totals.unchanged += result.unchanged;
    totals.passages += result.passages;
    batch = [];
    options.onProgress?.(bytesRead, totalBytes, totals.read);
  };
  for await (const record of readRecords(file, {
    onBytes: (bytes) => {
      bytesRead = bytes;
    },
  })) {
    const document = 'error' in record ? record : normaliser.normalise(record.value);
    if ('error' in document) {
      if (options.onBadRow === 'fail') throw new IngestError(file, record.line, document.error);
      totals.badRows += 1;
      if (errors.length < 20) errors.push({ line: record.line, message: document.error });
      continue;
    }
    totals.read += 1;
    batch.push(document);
    if (batch.length >= batchSize) await flush();
  }
  await flush();
  if (totals.written > 0) await refreshTermStatistics(pool);
  return { file, ...totals, errors, seconds: (Date.now() - startedAt) / 1000 };
}
