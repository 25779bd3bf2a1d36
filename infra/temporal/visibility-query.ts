/** A string literal for a Temporal visibility (list) query: single-quoted, with backslashes and quotes escaped. */
export function visibilityString(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
