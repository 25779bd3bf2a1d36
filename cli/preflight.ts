/**
 * A command checks the input it is about to hand a workflow with the parsers the workflow itself
 * runs (workflows/contracts/*.input.ts) and the train step's hyperparameter schema, before it starts
 * anything: bad input exits 2 naming the flag and the field, instead of starting the stack and then
 * failing as a workflow.
 */
import { LonghaulError } from '../workflows/contracts/errors.js';
import { UsageError } from './command.js';

/** The flag that sets each input field, e.g. `{ 'settings.batchSize': 'batch' }`; a field without one falls back to its parent's. */
export type FlagsOfFields = Readonly<Record<string, string>>;

function flagOf(field: string, flags: FlagsOfFields): string | undefined {
  for (let path = field; path; path = path.includes('.') ? path.slice(0, path.lastIndexOf('.')) : '') {
    if (flags[path] !== undefined) return flags[path];
  }
  return undefined;
}

/** Run `check`; a refusal (non-retryable LonghaulError) becomes a UsageError "--flag (field): problem". */
export function preflight<T>(check: () => T, flags: FlagsOfFields): T {
  try {
    return check();
  } catch (error) {
    if (!LonghaulError.is(error) || error.retryable || error instanceof UsageError) throw error;
    const flag = error.field === undefined ? undefined : flagOf(error.field, flags);
    throw new UsageError(flag === undefined ? error.message : `--${flag} (${error.field}): ${error.detail}`);
  }
}

/** `--<flag> JSON`: an object, or a UsageError naming the flag. */
export function jsonObjectFlag(value: string | undefined, flag: string): Record<string, unknown> {
  if (value === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new UsageError(`--${flag} is not valid JSON (${(error as Error).message}); pass an object such as '{"ppo":{"clipEpsilon":0.3}}'`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new UsageError(`--${flag} expects a JSON object, got ${value.slice(0, 60)}`);
  return parsed as Record<string, unknown>;
}
