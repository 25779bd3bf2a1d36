/** Activity input validation shared by every activity: a bad input fails at once, non-retryable, naming the field. */
import { ApplicationFailure } from '@temporalio/activity';
import type { z } from 'zod';
import { errorTypes } from '../workflows/contracts/errors.js';

/** The parsed input, or a non-retryable "<activity>: <field path>: <problem>" failure. */
export function parseActivityInput<T>(activity: string, schema: z.ZodType<T>, raw: unknown): T {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw ApplicationFailure.nonRetryable(`${activity}: ${issue.path.join('.') || 'input'}: ${issue.message}`, errorTypes.invalidInput);
}
