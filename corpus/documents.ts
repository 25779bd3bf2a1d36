/**
 * Corpus layouts users have, normalised into one document shape, and documents split into pages.
 * Layouts: {"id","contents"} (ASearcher / FlashRAG / Search-R1; a first line in quotes is the title),
 * {"id","title","text"[,"url"]}, HippoRAG {"title","text"} (id = title, repeats numbered), and KILT
 * pages {"wikipedia_id"?,"wikipedia_title","text":[paragraphs]}.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';

export interface CorpusDocument {
  readonly id: string;
  readonly title: string;
  readonly text: string;
  readonly url: string | null;
}

const identifier = z.union([z.string().trim().min(1), z.number()]).transform(String);
const contentsLayout = z.object({ id: identifier, contents: z.string() });
const titleTextLayout = z.object({ id: identifier.optional(), title: z.string(), text: z.string(), url: z.string().nullish() });
const kiltLayout = z.object({ wikipedia_id: identifier.optional(), wikipedia_title: z.string(), text: z.array(z.string()) });

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0]!;
  const field = issue.path.join('.') || 'record';
  return `"${field}": ${issue.message}`;
}

/** Turns raw records into documents; remembers titles used as ids so a repeated title gets "title (2)". */
export class DocumentNormaliser {
  private readonly titleCounts = new Map<string, number>();

  normalise(value: unknown): CorpusDocument | { error: string } {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return { error: 'expected a JSON object' };
    const keys = new Set(Object.keys(value));
    if (keys.has('contents')) return this.fromContents(value);
    if (keys.has('wikipedia_title')) return this.fromKilt(value);
    if (keys.has('title') || keys.has('text')) return this.fromTitleText(value);
    return { error: 'unknown layout: expected {"id","contents"}, {"id","title","text"}, {"title","text"} or a KILT page' };
  }

  private fromContents(value: object): CorpusDocument | { error: string } {
    const parsed = contentsLayout.safeParse(value);
    if (!parsed.success) return { error: describeIssue(parsed.error) };
    const { id, contents } = parsed.data;
    const newline = contents.indexOf('\n');
    const firstLine = newline >= 0 ? contents.slice(0, newline).trim() : '';
    const quoted = /^".*"$/.test(firstLine);
    const title = quoted ? firstLine.slice(1, -1) : '';
    const text = quoted ? contents.slice(newline + 1).trim() : contents.trim();
    return text === '' ? { error: '"contents": empty text' } : { id, title, text, url: null };
  }

  private fromTitleText(value: object): CorpusDocument | { error: string } {
    const parsed = titleTextLayout.safeParse(value);
    if (!parsed.success) return { error: describeIssue(parsed.error) };
    const { title, text, url } = parsed.data;
    if (text.trim() === '') return { error: '"text": empty text' };
    return { id: parsed.data.id ?? this.idFromTitle(title), title: title.trim(), text: text.trim(), url: url ?? null };
  }

  private fromKilt(value: object): CorpusDocument | { error: string } {
    const parsed = kiltLayout.safeParse(value);
    if (!parsed.success) return { error: describeIssue(parsed.error) };
    const title = parsed.data.wikipedia_title.trim();
    const paragraphs = parsed.data.text.map((paragraph) => paragraph.trim()).filter((paragraph) => paragraph !== '');
    if (paragraphs[0] === title) paragraphs.shift();
    if (paragraphs.length === 0) return { error: '"text": no paragraphs' };
    return { id: parsed.data.wikipedia_id ?? this.idFromTitle(title), title, text: paragraphs.join('\n'), url: null };
  }

  private idFromTitle(title: string): string {
    const base = title.trim() === '' ? 'untitled' : title.trim();
    const count = (this.titleCounts.get(base) ?? 0) + 1;
    this.titleCounts.set(base, count);
    return count === 1 ? base : `${base} (${count})`;
  }
}

/**
 * Splits a document's text into pages of at most `pageWords` words, cutting between paragraphs
 * where it can and between words where a paragraph alone is too long.
 */
export function splitPages(text: string, pageWords: number): string[] {
  const pages: string[] = [];
  let current: string[] = [];
  let currentWords = 0;
  const flush = () => {
    if (current.length > 0) pages.push(current.join('\n'));
    current = [];
    currentWords = 0;
  };
  for (const paragraph of text
    .split(/\n+/)
    .map((part) => part.trim())
    .filter((part) => part !== '')) {
    const words = paragraph.split(/\s+/);
    if (currentWords > 0 && currentWords + words.length > pageWords) flush();
    for (let start = 0; start < words.length; start += pageWords) {
      const piece = words.slice(start, start + pageWords);
      if (start > 0) flush();
      current.push(piece.join(' '));
      currentWords += piece.length;
    }
  }
  flush();
  return pages.length > 0 ? pages : [''];
}

export function contentHash(document: CorpusDocument): string {
  return createHash('sha256')
    .update(`${document.title}\u0000${document.url ?? ''}\u0000${document.text}`)
    .digest('hex')
    .slice(0, 32);
}
