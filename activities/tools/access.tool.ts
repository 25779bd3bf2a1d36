/**
 * `access`: read a document of the local corpus (by id) or a web page (by URL), one page at a time,
 * as ASearcher's agent reads pages in chunks. Page texts are cut at `pageChars` with a marker.
 */
import { z } from 'zod';
import type { PageFetcher, SearchEngine } from '../ports/search.port.js';
import type { AccessToolInput } from '../../workflows/contracts/tools.contract.js';
import { ToolFailure, type ToolPlugin } from './registry.js';

export interface AccessToolOptions {
  /** Characters of one page shown to the agent (a local page longer than this is cut; a web page is split into pages of this size). @default 5000 */
  readonly pageChars?: number;
  /** Fetcher for http(s) targets; without one, URLs are refused. */
  readonly fetcher?: PageFetcher;
  /** Whether the engine's pages are on this machine (Postgres): then reading a document id may run as a local activity (a URL never does). @default false */
  readonly localEngine?: boolean;
}

export function createAccessTool(engine: SearchEngine, options: AccessToolOptions = {}): ToolPlugin<AccessToolInput> {
  const pageChars = options.pageChars ?? 5000;
  const inputSchema = z.strictObject({
    target: z.string().trim().min(1).max(2000).describe('A document id from search results, or an http(s) URL.'),
    page: z.number().int().min(1).max(100_000).optional().describe('Which page to read, from 1 (default 1).'),
  });
  return {
    name: 'access',
    description:
      'Read a document (by id from search results) or a web page (by URL), one page at a time; the reply says how many pages there are.',
    inputSchema,
    successCriterion: 'the page exists and has text',
    cacheable: true,
    runsLocally: (input) => (options.localEngine ?? false) && !/^https?:\/\//i.test(input.target),
    async execute(input, context) {
      const page = input.page ?? 1;
      if (/^https?:\/\//i.test(input.target)) return accessUrl(input.target, page, pageChars, options.fetcher, context?.signal);
      const found = await engine.page(input.target, page);
      if (!found) {
        const first = page === 1 ? null : await engine.page(input.target, 1);
        throw new ToolFailure(
          first
            ? `Document ${input.target} has ${first.pages} pages; page ${page} does not exist.`
            : `No document with id "${input.target}".`,
        );
      }
      const text =
        found.text.length > pageChars ? `${found.text.slice(0, pageChars)}\n[… page cut at ${pageChars} characters]` : found.text;
      return {
        observation: `${found.title} (id: ${found.documentId}) — page ${found.page} of ${found.pages}\n${text}`,
        documentIds: [found.documentId],
      };
    },
    judge: (output) => output.observation.trim() !== '',
  };
}

async function accessUrl(url: string, page: number, pageChars: number, fetcher: PageFetcher | undefined, signal?: AbortSignal) {
  if (!fetcher) throw new ToolFailure('Web access is not configured; only document ids can be accessed.');
  const fetched = await fetcher.fetch(url, signal);
  const pages = Math.max(1, Math.ceil(fetched.text.length / pageChars));
  if (page > pages) throw new ToolFailure(`${url} has ${pages} pages; page ${page} does not exist.`);
  const text = fetched.text.slice((page - 1) * pageChars, page * pageChars);
  return {
    observation: `${fetched.title || fetched.url} (${fetched.url}) — page ${page} of ${pages}\n${text}`,
    documentIds: [fetched.url],
  };
}
