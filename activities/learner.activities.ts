/**
 * Activities the learner needs besides the buffer: reading its question set from the blob store
 * (JSONL of {"id","question","answers"} with an optional "goldTurns" solution path), parsed once
 * per worker and validated row by row.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { z } from 'zod';
import type { BlobStore } from './ports/blob-store.port.js';
import type { QuestionRow } from '../workflows/contracts/learner.contract.js';
import { errorTypes } from '../workflows/contracts/errors.js';

const rowSchema = z
  .object({
    id: z.union([z.string().min(1), z.number()]).transform(String),
    question: z.string().refine((question) => question.trim() !== '', 'expected a non-empty string (not only spaces)'),
    answers: z.array(z.string().refine((answer) => answer.trim() !== '', 'an answer must not be empty or only spaces')).min(1),
    goldTurns: z
      .array(z.string().refine((turn) => turn.trim() !== '', 'a gold turn must not be empty'))
      .min(1)
      .max(1000)
      .optional(),
  })
  .strip();

/** Parse a questions JSONL; a bad line is reported by number and field. */
export function parseQuestions(text: string, source: string): QuestionRow[] {
  const rows: QuestionRow[] = [];
  text.split('\n').forEach((line, index) => {
    if (!line.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw ApplicationFailure.nonRetryable(`${source}:${index + 1}: row: not valid JSON`, errorTypes.invalidInput);
    }
    const parsed = rowSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw ApplicationFailure.nonRetryable(
        `${source}:${index + 1}: ${issue.path.join('.') || 'row'}: ${issue.message}`,
        errorTypes.invalidInput,
      );
    }
    rows.push(parsed.data);
  });
  return rows;
}

export function createLearnerActivities({ blobs }: { blobs: BlobStore }) {
  const cache = new Map<string, QuestionRow[]>();
  return {
    async loadQuestion({ datasetKey, index }: { datasetKey: string; index: number }): Promise<QuestionRow | null> {
      let rows = cache.get(datasetKey);
      if (!rows) {
        if (!(await blobs.exists(datasetKey)))
          throw ApplicationFailure.nonRetryable(`datasetKey: no blob "${datasetKey}" in the blob store`, errorTypes.invalidInput);
        rows = parseQuestions((await blobs.get(datasetKey)).toString('utf8'), datasetKey);
        cache.set(datasetKey, rows);
      }
      return rows[index] ?? null;
    },
  };
}
