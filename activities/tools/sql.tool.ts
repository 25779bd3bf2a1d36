/**
 * `sql`: read-only SQL over a user's database — the plug-in shape applied to "swap the search engine
 * for a professional database". The adapter runs each query in a READ ONLY transaction with a
 * statement timeout and a row limit.
 */
import { z } from 'zod';
import type { ReadOnlySql } from '../ports/search.port.js';
import type { ToolPlugin } from './registry.js';

export interface SqlToolInput {
  readonly query: string;
}

export function createSqlTool(database: ReadOnlySql, schemaHint = ''): ToolPlugin<SqlToolInput> {
  return {
    name: 'sql',
    description: `Run one read-only SQL query (SELECT) on the reference database and see the rows.${schemaHint ? ` Tables: ${schemaHint}` : ''}`,
    inputSchema: z.strictObject({
      query: z
        .string()
        .trim()
        .min(1)
        .max(4000)
        .refine((sql) => !sql.replace(/;\s*$/, '').includes(';'), 'expected a single statement')
        .describe('One SQL SELECT statement.'),
    }),
    successCriterion: 'the query ran (zero rows is still a success)',
    cacheable: true,
    async execute(input) {
      const result = await database.query(input.query);
      const header = result.columns.join(' | ');
      const lines = result.rows.map((row) =>
        row.map((cell) => (cell === null ? 'NULL' : typeof cell === 'object' ? JSON.stringify(cell) : String(cell))).join(' | '),
      );
      const more = result.cut ? '\n[… more rows not shown]' : '';
      return { observation: `${result.rows.length} rows\n${header}\n${lines.join('\n')}${more}` };
    },
    judge: (output) => /^\d+ rows/.test(output.observation),
  };
}
