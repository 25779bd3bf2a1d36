import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './command.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** A command-line word that is a negative number ("-0.1", "-2", "-.5", "-1e-3"), not a flag. */
const negativeNumber = /^-(?:\d|\.\d)/;

/**
 * Joins a string-valued flag and a negative number after it ("--unanswered-reward -0.1" becomes
 * "--unanswered-reward=-0.1"): parseArgs reads any word that starts with "-" as a flag, so a negative
 * value written the ordinary way was rejected as "ambiguous" even where negatives are the only sane values.
 */
export function joinNegativeValues(args: readonly string[], options: Options): string[] {
  const takesValue = (word: string): boolean => {
    if (word.startsWith('--')) return !word.includes('=') && options[word.slice(2)]?.type === 'string';
    if (/^-[A-Za-z]$/.test(word)) return Object.values(options).some((option) => option.short === word[1] && option.type === 'string');
    return false;
  };
  const joined: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const word = args[index]!;
    const next = args[index + 1];
    if (word === '--') {
      joined.push(...args.slice(index));
      break;
    }
    if (next !== undefined && negativeNumber.test(next) && takesValue(word)) {
      joined.push(`${word}${word.startsWith('--') ? '=' : ''}${next}`);
      index += 1;
    } else joined.push(word);
  }
  return joined;
}

/** node:util parseArgs, with its errors turned into one-line UsageErrors (exit 2); a negative number may follow a flag that takes a value. */
export function parseFlags<T extends Options>(args: string[], options: T, allowPositionals = false) {
  try {
    return parseArgs({
      args: joinNegativeValues(args, options),
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals,
      strict: true,
    });
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
