/** `web_fetch`: URL → readable text, through a PageFetcher that enforces SSRF, size and time limits. */
import { z } from 'zod';
import type { PageFetcher } from '../ports/search.port.js';
import type { ToolPlugin } from './registry.js';

export interface WebFetchToolInput {
  readonly url: string;
}

export function createWebFetchTool(fetcher: PageFetcher, maxChars = 5000): ToolPlugin<WebFetchToolInput> {
  return {
    name: 'web_fetch',
    description: `Fetch a web page and return its readable text (the first ${maxChars} characters; use access with a page number for more).`,
    inputSchema: z.strictObject({
      url: z
        .string()
        .trim()
        .max(2048)
        .url()
        .regex(/^https?:\/\//i, 'expected an http(s) URL')
        .describe('The http(s) URL to fetch.'),
    }),
    successCriterion: 'the page was fetched and has text',
    cacheable: true,
    async execute(input, context) {
      const page = await fetcher.fetch(input.url, context?.signal);
      const text =
        page.text.length > maxChars ? `${page.text.slice(0, maxChars)}\n[… ${page.text.length - maxChars} more characters]` : page.text;
      const cut = page.cut ? '\n[… page cut at the byte limit]' : '';
      return { observation: `${page.title || page.url} (${page.url})\n${text}${cut}`, documentIds: [page.url] };
    },
    judge: (output) => output.observation.includes('\n') && output.observation.split('\n').slice(1).join('').trim() !== '',
  };
}
