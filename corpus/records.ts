/**
 * Streaming readers for corpus files: JSON Lines, or one JSON array of objects (HippoRAG corpora).
 * Neither reads the file into memory; each record carries the line it starts on, for error reports.
 */
import fs from 'node:fs';
import readline from 'node:readline';

export type RawRecord = { readonly line: number; readonly value: unknown } | { readonly line: number; readonly error: string };

export interface ReadOptions {
  /** Called with the bytes read so far (for a progress bar). */
  readonly onBytes?: (bytesRead: number) => void;
}

/** JSON.parse that reports instead of throwing. */
export function parseJson(text: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    return { error: `invalid JSON (${(error as Error).message})` };
  }
}

/** The file's layout, from its first non-blank character: "[" is a JSON array, anything else JSON Lines. */
export async function detectLayout(file: string): Promise<'json-array' | 'jsonl'> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const buffer = Buffer.alloc(4096);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const head = buffer
      .subarray(0, bytesRead)
      .toString('utf8')
      .replace(/^\uFEFF/, '')
      .trimStart();
    return head.startsWith('[') ? 'json-array' : 'jsonl';
  } finally {
    await handle.close();
  }
}

export async function* readRecords(file: string, options: ReadOptions = {}): AsyncGenerator<RawRecord> {
  const layout = await detectLayout(file);
  const stream = fs.createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 });
  let bytes = 0;
  stream.on('data', (chunk) => {
    bytes += Buffer.byteLength(chunk as string);
    options.onBytes?.(bytes);
  });
  yield* layout === 'json-array' ? readJsonArray(stream) : readJsonLines(stream);
}

async function* readJsonLines(stream: fs.ReadStream): AsyncGenerator<RawRecord> {
  const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
  let line = 0;
  for await (const text of lines) {
    line += 1;
    const trimmed = (line === 1 ? text.replace(/^\uFEFF/, '') : text).trim();
    if (trimmed === '') continue;
    const parsed = parseJson(trimmed);
    yield 'error' in parsed ? { line, error: parsed.error } : { line, value: parsed.value };
  }
}

/** A small state machine over the top-level array: it cuts out each element's text and parses it alone. */
async function* readJsonArray(stream: fs.ReadStream): AsyncGenerator<RawRecord> {
  let line = 1;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let element: string[] = [];
  let elementStart = 0;
  let sliceFrom = -1;
  for await (const chunk of stream as AsyncIterable<string>) {
    sliceFrom = depth >= 2 ? 0 : -1;
    for (let index = 0; index < chunk.length; index += 1) {
      const char = chunk[index]!;
      if (char === '\n') line += 1;
      if (inString) {
        if (escaped) escaped = false;
        else if (char === '\\') escaped = true;
        else if (char === '"') inString = false;
        continue;
      }
      if (char === '"') {
        inString = true;
      } else if (char === '{' || char === '[') {
        depth += 1;
        if (depth === 2) {
          sliceFrom = index;
          elementStart = line;
        }
      } else if (char === '}' || char === ']') {
        depth -= 1;
        if (depth === 1) {
          element.push(chunk.slice(sliceFrom, index + 1));
          sliceFrom = -1;
          const parsed = parseJson(element.join(''));
          element = [];
          yield 'error' in parsed ? { line: elementStart, error: parsed.error } : { line: elementStart, value: parsed.value };
        }
      }
    }
    if (depth >= 2 && sliceFrom >= 0) element.push(chunk.slice(sliceFrom));
  }
  if (depth !== 0 || inString) yield { line, error: 'the JSON array is not closed (file truncated?)' };
}
