/** Activity input validation shared by every activity: a bad input fails at once, non-retryable, naming the field. */
import type { z } from 'zod';
import { toApplicationFailure } from '../workflows/contracts/application-failure.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

/** The parsed input, or a non-retryable "<activity>: <field path>: <problem>" failure. */
export function parseActivityInput<T>(activity: string, schema: z.ZodType<T>, raw: unknown): T {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw toApplicationFailure(
    new LonghaulError(errorTypes.invalidInput, issue.message, { field: issue.path.join('.') || 'input' }),
    activity,
  );
}
