/**
 * A small grounded question set from the knowledge base of the default corpus: every answer is a
 * fact stated by a document the agent can search, with a gold solution path for the warm start.
 * Split deterministically into train and held-out.
 */
import type pg from 'pg';
import type { QuestionRow } from '../workflows/contracts/learner.contract.js';

export interface QuestionSplit {
  readonly train: QuestionRow[];
  readonly heldOut: QuestionRow[];
}

/**
 * The gold solution path of a capital question: search the country, then answer from what the search
 * returned (the country's document states "Its capital is …"). The warm start replays it through the
 * real search tool and keeps it only when the real reward confirms it.
 */
export function goldPath(country: string, capital: string): string[] {
  return [
    `<think>I need the capital of ${country}. I will search for it.</think>\n<search>${country} capital</search>`,
    `<think>The documents say the capital of ${country} is ${capital}.</think>\n<answer>${capital}</answer>`,
  ];
}

/** Countries with one capital, in a stable order; every third goes to the held-out set. */
export async function capitalQuestions(pool: pg.Pool, trainCount: number, heldOutCount: number): Promise<QuestionSplit> {
  const { rows } = await pool.query<{ id: string; name: string; capital: string }>(
    `SELECT e.id, e.name, min(r.object_text) AS capital
       FROM kb_relations r JOIN kb_entities e ON e.id = r.subject_id
      WHERE r.predicate = 'capital' AND e.kind = 'country'
      GROUP BY e.id, e.name HAVING count(*) = 1
      ORDER BY md5(e.id)`,
  );
  if (rows.length < trainCount + heldOutCount) {
    throw new Error(
      `the knowledge base has ${rows.length} countries with a capital; ${trainCount + heldOutCount} are needed (run longhaul corpus build)`,
    );
  }
  const all = rows.map((row): QuestionRow => ({
    id: `capital:${row.id}`,
    question: `What is the capital of ${row.name}?`,
    answers: [row.capital],
    goldTurns: goldPath(row.name, row.capital),
  }));
  const heldOut = all.filter((_, index) => index % 3 === 2).slice(0, heldOutCount);
  const train = all.filter((_, index) => index % 3 !== 2).slice(0, trainCount);
  return { train, heldOut };
}
