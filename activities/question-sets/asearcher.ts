/**
 * ASearcher's JSONL question layout, written: one `{"question","answer","source","id","aug_answer"}`
 * object a line, `answer` the first accepted answer and `aug_answer` the others. Read back through
 * `parseQuestionSet` (layout `asearcher`), which accepts `answer` as a string or a list.
 */
import type { QuestionItem } from './question-set.js';

export interface ASearcherRow {
  readonly question: string;
  readonly answer: string;
  readonly source: string;
  readonly id: string;
  readonly aug_answer: string[];
}

export function toASearcherRow(item: QuestionItem): ASearcherRow {
  const [answer = '', ...others] = item.answers;
  return { question: item.question, answer, source: item.source ?? '', id: item.id, aug_answer: others };
}

/** The items as ASearcher JSONL, one row a line, ending with a newline (empty string for no items). */
export function toASearcherJsonl(items: readonly QuestionItem[]): string {
  return items.map((item) => JSON.stringify(toASearcherRow(item)) + '\n').join('');
}
