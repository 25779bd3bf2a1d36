/**
 * Evidence spans: the sentence of a stored document that states a fact, found mechanically (the
 * fact's object, or a predicate's fixed wording, inside a sentence that names the predicate), and
 * re-verified later against the stored text by content hash and span hash.
 */
import { createHash } from 'node:crypto';
import type { KnowledgeBaseRelation, StoredDocument } from '../ports/knowledge-base.port.js';
import type { Evidence } from '../../workflows/contracts/synthesis.contract.js';

/** Words a sentence stating the predicate contains, beside the object. */
const PREDICATE_WORDS: Readonly<Record<string, readonly string[]>> = {
  capital: ['capital'],
  capital_of: ['capital'],
  area_km2: ['area'],
  borders: ['borders'],
  official_language: ['language'],
  currency: ['currency'],
  demonym: ['people'],
  internet_tld: ['internet'],
  calling_code: ['calling'],
  population: ['population'],
  symbol: ['symbol'],
  atomic_number: ['atomic number'],
  atomic_weight: ['atomic weight'],
};

/** What a sentence must contain for predicates whose object text is not in the document (yes/no). */
function anchorOf(relation: Pick<KnowledgeBaseRelation, 'predicate' | 'objectText'>): string {
  if (relation.predicate === 'landlocked') return relation.objectText === 'yes' ? 'is landlocked' : 'has a coastline';
  if (relation.predicate === 'un_member')
    return relation.objectText === 'yes' ? 'is a member of the United Nations' : 'is not a member of the United Nations';
  return relation.objectText;
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Sentence boundaries: after ". " / "! " / "? " or a newline. */
function sentences(text: string): { start: number; end: number }[] {
  const spans: { start: number; end: number }[] = [];
  let start = 0;
  const boundary = /[.!?](?=\s+[A-Z0-9"“(])|\n/g;
  for (let match = boundary.exec(text); match; match = boundary.exec(text)) {
    const end = match[0] === '\n' ? match.index : match.index + 1;
    if (end > start) spans.push({ start, end });
    start = match.index + match[0].length;
    while (start < text.length && /\s/.test(text[start]!)) start += 1;
  }
  if (start < text.length) spans.push({ start, end: text.length });
  return spans;
}

/** The span that states the relation in its document, or null when no sentence does. */
export function findEvidence(relation: KnowledgeBaseRelation, document: StoredDocument): Evidence | null {
  const anchor = anchorOf(relation);
  const words = PREDICATE_WORDS[relation.predicate] ?? [];
  const candidates = sentences(document.text).filter((span) => containsWord(document.text.slice(span.start, span.end), anchor));
  const best =
    candidates.find((span) => words.some((word) => document.text.slice(span.start, span.end).toLowerCase().includes(word))) ??
    candidates[0];
  if (!best) return null;
  const text = document.text.slice(best.start, best.end);
  return {
    documentId: document.documentId,
    contentHash: document.contentHash,
    start: best.start,
    end: best.end,
    spanSha256: sha256(text),
    text,
  };
}

/** `needle` in `haystack` not inside a longer word ("Niger" is not in "Nigeria"). */
export function containsWord(haystack: string, needle: string): boolean {
  if (needle === '') return false;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + 1)) {
    const before = at === 0 ? '' : haystack[at - 1]!;
    const after = haystack[at + needle.length] ?? '';
    if (!/[\p{L}\p{N}]/u.test(before) && !/[\p{L}\p{N}]/u.test(after)) return true;
  }
  return false;
}

/** Re-verification of a span against the stored document: null when it holds, else why not. */
export function verifyEvidence(
  evidence: Evidence,
  relation: Pick<KnowledgeBaseRelation, 'predicate' | 'objectText'>,
  document: StoredDocument | undefined,
): string | null {
  if (!document) return `document ${evidence.documentId} is not in the corpus`;
  if (document.contentHash !== evidence.contentHash)
    return `document ${evidence.documentId} changed (content hash ${document.contentHash}, evidence has ${evidence.contentHash})`;
  if (evidence.start < 0 || evidence.end > document.text.length || evidence.start >= evidence.end)
    return `span [${evidence.start}, ${evidence.end}) is outside document ${evidence.documentId} (${document.text.length} characters)`;
  const text = document.text.slice(evidence.start, evidence.end);
  if (sha256(text) !== evidence.spanSha256)
    return `span [${evidence.start}, ${evidence.end}) of ${evidence.documentId} no longer hashes to the recorded sha256`;
  if (text !== evidence.text) return `span text of ${evidence.documentId} differs from the recorded text`;
  if (!containsWord(text, anchorOf(relation))) return `span of ${evidence.documentId} does not state "${anchorOf(relation)}"`;
  return null;
}

/** The evidence of `[start, end)` of a stored document: its ids, hashes and text. */
export function evidenceAt(document: StoredDocument, start: number, end: number): Evidence {
  const text = document.text.slice(start, end);
  return { documentId: document.documentId, contentHash: document.contentHash, start, end, spanSha256: sha256(text), text };
}

/**
 * Where a quoted passage stands in a stored document, found mechanically: the exact text, else the
 * same words with any whitespace between them (models re-flow line breaks). Null when the document
 * does not contain it: a claim without a stored passage is ungrounded.
 */
export function locateQuote(document: StoredDocument, quote: string): { start: number; end: number } | null {
  const trimmed = quote.trim();
  if (trimmed === '') return null;
  const exact = document.text.indexOf(trimmed);
  if (exact >= 0) return { start: exact, end: exact + trimmed.length };
  const words = trimmed.split(/\s+/).map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const match = new RegExp(words.join('\\s+')).exec(document.text);
  return match ? { start: match.index, end: match.index + match[0].length } : null;
}
