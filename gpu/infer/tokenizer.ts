/**
 * A byte-level BPE tokenizer read from a Hugging Face `tokenizer.json` (the GPT-2 family layout
 * SmolLM2 uses): special tokens split out first, the GPT-2 pre-tokenizer regex, bytes mapped to
 * printable characters, merges applied by rank. Checked against the Python tokenizer's ids in
 * tokenizer.test.ts.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

const tokenizerFileSchema = z.object({
  added_tokens: z.array(z.object({ id: z.number().int(), content: z.string(), special: z.boolean().nullish() })).default([]),
  pre_tokenizer: z.object({ type: z.string() }).passthrough().nullish(),
  model: z.object({
    type: z.literal('BPE'),
    vocab: z.record(z.string(), z.number().int()),
    merges: z.array(z.union([z.string(), z.tuple([z.string(), z.string()])])),
  }),
});

/** GPT-2's pre-tokenizer: contractions, letters, numbers, other symbols, whitespace. */
const preTokenizerPattern = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/** GPT-2's reversible map from bytes to printable characters. */
function byteToCharacterTable(): string[] {
  const table: string[] = new Array<string>(256);
  const printable = (byte: number) => (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174 && byte <= 255);
  let next = 256;
  for (let byte = 0; byte < 256; byte += 1) table[byte] = String.fromCharCode(printable(byte) ? byte : next++);
  return table;
}

export class BpeTokenizer {
  private readonly byteToChar = byteToCharacterTable();
  private readonly charToByte = new Map(this.byteToChar.map((char, byte) => [char, byte]));
  private readonly tokenToId: Map<string, number>;
  private readonly idToToken: string[] = [];
  private readonly mergeRanks = new Map<string, number>();
  private readonly special = new Map<string, number>();
  private readonly specialPattern: RegExp | undefined;
  private readonly wordCache = new Map<string, number[]>();

  constructor(file: unknown) {
    const parsed = tokenizerFileSchema.safeParse(file);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new LonghaulError(errorTypes.invalidInput, `tokenizer.json: ${issue.path.join('.')}: ${issue.message}`);
    }
    const { model, added_tokens: added } = parsed.data;
    this.tokenToId = new Map(Object.entries(model.vocab));
    for (const [token, id] of this.tokenToId) this.idToToken[id] = token;
    model.merges.forEach((merge, rank) => {
      const [left, right] = typeof merge === 'string' ? merge.split(' ') : merge;
      this.mergeRanks.set(`${left} ${right}`, rank);
    });
    for (const token of added) {
      this.special.set(token.content, token.id);
      this.idToToken[token.id] = token.content;
    }
    const escaped = [...this.special.keys()].sort((a, b) => b.length - a.length).map((text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    this.specialPattern = escaped.length > 0 ? new RegExp(`(${escaped.join('|')})`) : undefined;
  }

  static fromFile(path: string): BpeTokenizer {
    return new BpeTokenizer(JSON.parse(fs.readFileSync(path, 'utf8')) as unknown);
  }

  get vocabularySize(): number {
    return this.idToToken.length;
  }

  /** Token ids of `text`; special tokens written literally (e.g. `<|im_start|>`) become their ids. */
  encode(text: string): number[] {
    const ids: number[] = [];
    const pieces = this.specialPattern ? text.split(this.specialPattern) : [text];
    for (const piece of pieces) {
      if (piece === '') continue;
      const specialId = this.special.get(piece);
      if (specialId !== undefined) {
        ids.push(specialId);
        continue;
      }
      for (const match of piece.matchAll(preTokenizerPattern)) ids.push(...this.encodeWord(match[0]));
    }
    return ids;
  }

  /** The UTF-8 bytes a token stands for (special tokens: their text). */
  tokenBytes(id: number): Buffer {
    const token = this.idToToken[id];
    if (token === undefined)
      throw new LonghaulError(errorTypes.invalidInput, `token id ${id} is outside the vocabulary (0..${this.idToToken.length - 1})`);
    if (this.special.has(token)) return Buffer.from(token, 'utf8');
    const bytes: number[] = [];
    for (const char of token) {
      const byte = this.charToByte.get(char);
      if (byte === undefined) return Buffer.from(token, 'utf8');
      bytes.push(byte);
    }
    return Buffer.from(bytes);
  }

  decode(ids: readonly number[]): string {
    return Buffer.concat(ids.map((id) => this.tokenBytes(id))).toString('utf8');
  }

  /** The id of a token written as text (a special token such as `<|im_end|>`), or undefined. */
  idOf(token: string): number | undefined {
    return this.special.get(token) ?? this.tokenToId.get(token);
  }

  private encodeWord(word: string): number[] {
    const cached = this.wordCache.get(word);
    if (cached) return cached;
    let parts = [...Buffer.from(word, 'utf8')].map((byte) => this.byteToChar[byte]!);
    while (parts.length > 1) {
      let best = -1;
      let bestRank = Number.POSITIVE_INFINITY;
      for (let index = 0; index < parts.length - 1; index += 1) {
        const rank = this.mergeRanks.get(`${parts[index]} ${parts[index + 1]}`);
        if (rank !== undefined && rank < bestRank) {
          bestRank = rank;
          best = index;
        }
      }
      if (best < 0) break;
      parts = [...parts.slice(0, best), parts[best]! + parts[best + 1]!, ...parts.slice(best + 2)];
    }
    const ids = parts.map((part) => {
      const id = this.tokenToId.get(part);
      if (id === undefined) throw new LonghaulError(errorTypes.invalidInput, `no token for "${part}" after merges`);
      return id;
    });
    if (this.wordCache.size < 100_000) this.wordCache.set(word, ids);
    return ids;
  }
}
