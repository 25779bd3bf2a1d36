/**
 * WebSearchClient over HTTP: SearXNG's JSON API (GET <url>?q=…&format=json) or a Serper-compatible
 * API (POST <url> {"q","num"} with X-API-KEY). Responses are parsed leniently (external data).
 */
import { z } from 'zod';
import type { WebSearchClient, WebSearchResult } from '../../activities/ports/search.port.js';
import { parseRetryAfter, ToolUnavailable } from '../../activities/ports/tool-errors.port.js';

export interface WebSearchOptions {
  readonly url: string;
  readonly api: 'searxng' | 'serper';
  readonly apiKey: string | null;
  readonly timeoutMs: number;
  /** Bytes of one answer read at most (a larger answer is refused, not parsed). @default 2 MiB */
  readonly maxBytes?: number;
}

const searxngEntry = z.object({ title: z.string().nullish(), url: z.string().nullish(), content: z.string().nullish() }).passthrough();
const serperEntry = z.object({ title: z.string().nullish(), link: z.string().nullish(), snippet: z.string().nullish() }).passthrough();

export function createHttpWebSearchClient(options: WebSearchOptions): WebSearchClient {
  return {
    async search(query, k, callerSignal) {
      const timeout = AbortSignal.timeout(options.timeoutMs);
      const signal = callerSignal ? AbortSignal.any([timeout, callerSignal]) : timeout;
      const response = await send(query, k, signal).catch((error: Error) => {
        throw new ToolUnavailable(`search API unreachable: ${signal.aborted ? `no answer within ${options.timeoutMs} ms` : error.message}`);
      });
      if (response.status === 429 || response.status >= 500) {
        await response.body?.cancel();
        throw new ToolUnavailable(`search API answered HTTP ${response.status}`, parseRetryAfter(response.headers.get('retry-after')));
      }
      if (!response.ok) throw new Error(`search API answered HTTP ${response.status}`);
      const text = await readCapped(response, options.maxBytes ?? 2 * 1024 * 1024, signal, options.timeoutMs);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        const type = response.headers.get('content-type') ?? 'none';
        throw new Error(`the search API answered something that is not JSON (content type ${type}, ${text.length} characters)`);
      }
      // An answer without the list (a captcha page as JSON, an error object) says so instead of "no results".
      const list = options.api === 'searxng' ? 'results' : 'organic';
      if (body === null || typeof body !== 'object' || Array.isArray(body))
        throw new Error(`the search API answered JSON without a list of results (${JSON.stringify(body).slice(0, 60)})`);
      const entries = (body as Record<string, unknown>)[list];
      if (!Array.isArray(entries) && entries !== null && entries !== undefined)
        throw new Error(`the search API answered JSON without a list of results ("${list}" is ${typeof entries}, not a list)`);
      const results: WebSearchResult[] =
        options.api === 'searxng'
          ? (Array.isArray(entries) ? entries : []).flatMap((entry) => {
              const r = searxngEntry.safeParse(entry).data;
              return r ? [{ title: r.title ?? '', url: r.url ?? '', snippet: r.content ?? '' }] : [];
            })
          : (Array.isArray(entries) ? entries : []).flatMap((entry) => {
              const r = serperEntry.safeParse(entry).data;
              return r ? [{ title: r.title ?? '', url: r.link ?? '', snippet: r.snippet ?? '' }] : [];
            });
      return results.filter((result) => result.url !== '').slice(0, k);
    },
  };

  function send(query: string, k: number, signal: AbortSignal): Promise<Response> {
    return options.api === 'searxng'
      ? fetch(`${options.url}${options.url.includes('?') ? '&' : '?'}${new URLSearchParams({ q: query, format: 'json' })}`, { signal })
      : fetch(options.url, {
          method: 'POST',
          signal,
          headers: { 'content-type': 'application/json', ...(options.apiKey ? { 'x-api-key': options.apiKey } : {}) },
          body: JSON.stringify({ q: query, num: k }),
        });
  }
}

/** The body as text, refusing one larger than `maxBytes` without reading the rest. */
async function readCapped(response: Response, maxBytes: number, signal: AbortSignal, timeoutMs: number): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new Error(`search API answer of ${declared} bytes is larger than the ${maxBytes} bytes read at most`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += chunk.length;
      if (size > maxBytes) {
        await response.body?.cancel().catch(() => undefined);
        throw new Error(`search API answer is larger than the ${maxBytes} bytes read at most`);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (signal.aborted) throw new ToolUnavailable(`search API answer not complete within ${timeoutMs} ms`);
    throw error;
  }
  return Buffer.concat(chunks).toString('utf8');
}
