import { errorTypes, LonghaulError } from './errors.js';

/**
 * Pure input checks for workflow arguments. Workflows may not use zod (DESIGN §5), yet anyone can
 * start them with hand-written JSON, so each workflow checks its input with these and fails fast
 * with a message naming the field.
 */
export class InputError extends LonghaulError {
  declare readonly field: string;
  constructor(field: string, message: string) {
    super(errorTypes.invalidInput, message, { field });
  }
}

export type Fields = Record<string, unknown>;

export function objectInput(value: unknown, what: string): Fields {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InputError(
      'input',
      `${what} takes one JSON object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`,
    );
  }
  return value as Fields;
}

export function rejectUnknown(input: Fields, known: readonly string[]): void {
  for (const key of Object.keys(input)) {
    if (!known.includes(key)) throw new InputError(key, `unknown field (expected one of: ${known.join(', ')})`);
  }
}

export function integerField(input: Fields, field: string, options: { min: number; max: number; default?: number }): number {
  const value = input[field];
  if (value === undefined) {
    if (options.default !== undefined) return options.default;
    throw new InputError(field, `required integer between ${options.min} and ${options.max} is missing`);
  }
  if (typeof value !== 'number' || !Number.isInteger(value) || value < options.min || value > options.max) {
    throw new InputError(field, `expected an integer between ${options.min} and ${options.max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function stringField(input: Fields, field: string, options: { maxLength: number; default?: string }): string {
  const value = input[field];
  if (value === undefined) {
    if (options.default !== undefined) return options.default;
    throw new InputError(field, 'required string is missing');
  }
  if (typeof value !== 'string' || value.length === 0 || value.length > options.maxLength) {
    throw new InputError(
      field,
      `expected a non-empty string of at most ${options.maxLength} characters, got ${JSON.stringify(value)?.slice(0, 60)}`,
    );
  }
  return value;
}

export function numberField(input: Fields, field: string, options: { min: number; max: number; default: number }): number {
  const value = input[field];
  if (value === undefined) return options.default;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < options.min || value > options.max) {
    throw new InputError(field, `expected a number between ${options.min} and ${options.max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function booleanField(input: Fields, field: string, fallback: boolean): boolean {
  const value = input[field];
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InputError(field, `expected true or false, got ${JSON.stringify(value)?.slice(0, 60)}`);
  return value;
}

export function enumField<T extends string>(input: Fields, field: string, allowed: readonly T[], fallback: T): T {
  const value = input[field];
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !allowed.includes(value as T))
    throw new InputError(field, `expected one of ${allowed.map((item) => JSON.stringify(item)).join(', ')}, got ${JSON.stringify(value)}`);
  return value as T;
}

export function stringListField(
  input: Fields,
  field: string,
  options: { maxItems: number; maxLength: number; default: readonly string[] },
): string[] {
  const value = input[field];
  if (value === undefined) return [...options.default];
  if (
    !Array.isArray(value) ||
    value.length > options.maxItems ||
    !value.every((item) => typeof item === 'string' && item.length <= options.maxLength)
  ) {
    throw new InputError(field, `expected a list of at most ${options.maxItems} strings of at most ${options.maxLength} characters`);
  }
  return value as string[];
}

/** A nested object field: validated by `parse`, with errors renamed to "field.inner". */
export function nestedField<T>(input: Fields, field: string, parse: (value: Fields) => T): T {
  const value = input[field] ?? {};
  try {
    return parse(objectInput(value, field));
  } catch (error) {
    if (error instanceof InputError) throw new InputError(error.field === 'input' ? field : `${field}.${error.field}`, error.detail);
    throw error;
  }
}
