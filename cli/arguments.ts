import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './command.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** node:util parseArgs, with its errors turned into one-line UsageErrors (exit 2). */
export function parseFlags<T extends Options>(args: string[], options: T, allowPositionals = false) {
  try {
    return parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0]!.replace(/\. To specify a positional argument.*$/, ''));
  }
}

export function integerFlag(value: string | undefined, flag: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min || parsed > max)
    throw new UsageError(`--${flag} expects an integer between ${min} and ${max}, got "${value}"`);
  return parsed;
}

/** A rate such as a learning rate: a number strictly between 0 and 1. */
export function rateFlag(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const rate = Number(value);
  if (!(rate > 0 && rate < 1)) throw new UsageError(`--${flag} expects a number between 0 and 1, got "${value}"`);
  return rate;
}
