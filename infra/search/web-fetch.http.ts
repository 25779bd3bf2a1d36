/**
 * PageFetcher over HTTP(S) with the safety rules of the web tools: only http(s); every host
 * (the first and each redirect target) is resolved and checked against the AddressGuard, and the
 * connection goes to the checked address (no DNS rebinding between check and connect); at most
 * `maxRedirects` redirects; a byte cap and one time limit for the whole fetch; text-like content only.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { FetchedPage, PageFetcher } from '../../activities/ports/search.port.js';
import { parseRetryAfter } from '../../activities/ports/tool-errors.port.js';
import { AddressGuard } from './address-guard.js';
import { htmlToText } from './html-text.js';

export interface WebFetchOptions {
  readonly maxBytes: number;
  readonly timeoutMs: number;
  readonly maxRedirects: number;
  readonly allow: readonly string[];
  readonly userAgent?: string;
  /**
   * DNS servers (host or host:port) to resolve names with, instead of the system's resolver
   * (getaddrinfo). Either way each name is resolved once per hop and the connection goes to the
   * address that was checked.
   */
  readonly dnsServers?: readonly string[];
}

export class WebFetchError extends Error {
  /** True when a retry may help (HTTP 429 or 5xx, a timeout, a network error): the tool limiter retries these. */
  readonly transient: boolean;

  constructor(
    readonly code: 'REFUSED' | 'HTTP_STATUS' | 'CONTENT_TYPE' | 'TOO_MANY_REDIRECTS' | 'TIMEOUT' | 'NETWORK',
    message: string,
    options: { status?: number; retryAfterMs?: number | null; transient?: boolean } = {},
  ) {
    super(message);
    this.name = 'WebFetchError';
    this.retryAfterMs = options.retryAfterMs ?? null;
    const status = options.status ?? 0;
    this.transient =
      options.transient ?? (code === 'TIMEOUT' || code === 'NETWORK' || (code === 'HTTP_STATUS' && (status === 429 || status >= 500)));
  }

  /** What the server's Retry-After asked for (429, 503), in ms. */
  readonly retryAfterMs: number | null;
}

const TEXT_TYPES = /^(text\/[a-z0-9.+-]+|application\/(xhtml\+xml|xml|json|ld\+json|rss\+xml|atom\+xml))$/i;

interface RawResponse {
  status: number;
  location: string | null;
  retryAfter: string | null;
  contentType: string;
  body: Buffer;
  cut: boolean;
}

export function createHttpPageFetcher(options: WebFetchOptions): PageFetcher {
  const guard = new AddressGuard(options.allow);
  const lookup = createLookup(options.dnsServers ?? []);
  return {
    async fetch(rawUrl, callerSignal) {
      const timeout = AbortSignal.timeout(options.timeoutMs);
      const signal = callerSignal ? AbortSignal.any([timeout, callerSignal]) : timeout;
      let url = parseHttpUrl(rawUrl);
      for (let hop = 0; ; hop += 1) {
        const address = await resolveChecked(url, guard, lookup);
        const response = await request(url, address, options, signal);
        if (response.status >= 300 && response.status < 400 && response.location !== null) {
          if (hop >= options.maxRedirects)
            throw new WebFetchError('TOO_MANY_REDIRECTS', `refused: more than ${options.maxRedirects} redirects`);
          url = parseHttpUrl(new URL(response.location, url).toString());
          continue;
        }
        if (response.status < 200 || response.status >= 300)
          throw new WebFetchError('HTTP_STATUS', `HTTP ${response.status} from ${url.toString()}`, {
            status: response.status,
            retryAfterMs: parseRetryAfter(response.retryAfter),
          });
        return toPage(url.toString(), response);
      }
    },
  };
}

function parseHttpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebFetchError('REFUSED', `refused: "${raw}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new WebFetchError('REFUSED', `refused: only http and https URLs, not ${url.protocol}`);
  if (url.username || url.password) throw new WebFetchError('REFUSED', 'refused: URLs with credentials');
  return url;
}

type Lookup = (host: string) => Promise<dns.LookupAddress[]>;

/** The system resolver, or the given DNS servers (A and AAAA records); IP literals are not resolved. */
function createLookup(servers: readonly string[]): Lookup {
  if (servers.length === 0) return (host) => dns.promises.lookup(host, { all: true, verbatim: true });
  const resolver = new dns.promises.Resolver({ timeout: 2000, tries: 2 });
  resolver.setServers([...servers]);
  return async (host) => {
    const family = net.isIP(host);
    if (family !== 0) return [{ address: host, family }];
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const found = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (found.length === 0) throw v4.status === 'rejected' ? v4.reason : new Error(`no address for ${host}`);
    return found;
  };
}

async function resolveChecked(url: URL, guard: AddressGuard, lookup: Lookup): Promise<{ address: string; family: number }> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: dns.LookupAddress[];
  try {
    addresses = await lookup(host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // A name that does not exist stays so; a resolver that failed for now (EAI_AGAIN) may answer later.
    throw new WebFetchError('NETWORK', `cannot resolve ${host}: ${code ?? (error as Error).message}`, { transient: code === 'EAI_AGAIN' });
  }
  const blocked = addresses.find((entry) => !guard.permits(entry.address));
  if (blocked || addresses.length === 0) {
    throw new WebFetchError(
      'REFUSED',
      `refused: ${host} resolves to ${blocked?.address ?? 'nothing'}, a private, loopback or link-local address (allow it with LONGHAUL_WEB_FETCH_ALLOW)`,
    );
  }
  return addresses[0]!;
}

function request(
  url: URL,
  target: { address: string; family: number },
  options: WebFetchOptions,
  signal: AbortSignal,
): Promise<RawResponse> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const outgoing = client.request(
      url,
      {
        method: 'GET',
        signal,
        headers: { 'user-agent': options.userAgent ?? 'longhaul-web-fetch/0.1', accept: 'text/html,text/plain;q=0.9,*/*;q=0.1' },
        lookup: (_hostname, lookupOptions, callback) => {
          if ((lookupOptions as { all?: boolean }).all) (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, [target]);
          else callback(null, target.address, target.family);
        },
      },
      (incoming) => {
        const status = incoming.statusCode ?? 0;
        const location = typeof incoming.headers.location === 'string' ? incoming.headers.location : null;
        const retryAfter = typeof incoming.headers['retry-after'] === 'string' ? incoming.headers['retry-after'] : null;
        const contentType = (incoming.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if ((status >= 300 && status < 400) || status < 200 || status >= 300) {
          incoming.resume();
          resolve({ status, location, retryAfter, contentType, body: Buffer.alloc(0), cut: false });
          return;
        }
        const encoding = String(incoming.headers['content-encoding'] ?? 'identity')
          .trim()
          .toLowerCase();
        if (encoding !== '' && encoding !== 'identity') {
          // We never ask for compression (no accept-encoding), so compressed bytes would reach the agent as garbage.
          incoming.destroy();
          reject(new WebFetchError('CONTENT_TYPE', `refused: content encoding "${encoding}" was not asked for`));
          return;
        }
        if (!TEXT_TYPES.test(contentType)) {
          incoming.destroy();
          reject(new WebFetchError('CONTENT_TYPE', `refused: content type "${contentType || 'none'}" is not text`));
          return;
        }
        readCapped(incoming, options.maxBytes).then(
          (read) => resolve({ status, location, retryAfter, contentType, ...read }),
          (error: unknown) => reject(signal.aborted ? new WebFetchError('TIMEOUT', `timed out after ${options.timeoutMs} ms`) : error),
        );
      },
    );
    outgoing.on('error', (error) =>
      reject(
        signal.aborted
          ? new WebFetchError('TIMEOUT', `timed out after ${options.timeoutMs} ms`)
          : error instanceof WebFetchError
            ? error
            : new WebFetchError('NETWORK', `network error: ${error.message}`),
      ),
    );
    outgoing.end();
  });
}

function readCapped(incoming: http.IncomingMessage, maxBytes: number): Promise<{ body: Buffer; cut: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    incoming.on('data', (chunk: Buffer) => {
      if (size >= maxBytes) return;
      chunks.push(chunk);
      size += chunk.length;
      if (size >= maxBytes) {
        incoming.destroy();
        resolve({ body: Buffer.concat(chunks).subarray(0, maxBytes), cut: true });
      }
    });
    incoming.on('end', () => resolve({ body: Buffer.concat(chunks), cut: false }));
    incoming.on('error', (error) => reject(new WebFetchError('NETWORK', `network error: ${error.message}`)));
  });
}

function toPage(url: string, response: RawResponse): FetchedPage {
  const raw = response.body.toString('utf8');
  const isHtml = /html|xml/.test(response.contentType);
  const { title, text } = isHtml ? htmlToText(raw) : { title: '', text: raw.trim() };
  return { url, title, text, contentType: response.contentType, cut: response.cut };
}
