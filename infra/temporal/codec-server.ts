/**
 * A Temporal codec server: the HTTP protocol the Temporal Web UI and `temporal --codec-endpoint`
 * speak. `POST /encode` and `POST /decode` (also under a namespace segment, `/<namespace>/decode`)
 * take and return `{"payloads": [{"metadata": {"<key>": "<base64>"}, "data": "<base64>"}]}`
 * (proto3 JSON); decoding runs the codecs in reverse order, encoding in order, as the SDK does.
 * CORS answers the listed origins (the Web UI calls from the browser). Whoever can reach it reads
 * decrypted payloads: bind it to loopback or put it behind your authentication.
 */
import http from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';

export interface CodecServerOptions {
  /** Browser origins allowed to call (the Web UI's address, e.g. http://127.0.0.1:8233). */
  readonly origins: readonly string[];
  /** Largest request body read, in bytes. @default 64 MiB */
  readonly maxBodyBytes?: number;
  readonly log?: (line: string) => void;
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

export function createCodecServer(codecs: readonly PayloadCodec[], options: CodecServerOptions): http.Server {
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024 * 1024;
  return http.createServer((request, response) => {
    const origin = request.headers.origin;
    if (origin && options.origins.includes(origin)) {
      response.setHeader('access-control-allow-origin', origin);
      response.setHeader('vary', 'origin');
      response.setHeader('access-control-allow-methods', 'POST, OPTIONS');
      response.setHeader('access-control-allow-headers', 'content-type, x-namespace, authorization');
      response.setHeader('access-control-allow-credentials', 'true');
    }
    const path = new URL(request.url ?? '/', 'http://codec').pathname;
    const operation = /^(?:\/[^/]+)?\/(encode|decode)$/.exec(path)?.[1];
    const answer = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (!operation) return answer(404, { error: `unknown path ${path}: POST /encode or /decode` });
    if (request.method === 'OPTIONS') return void response.writeHead(204).end();
    if (request.method !== 'POST') return answer(405, { error: `${request.method} ${path}: use POST` });
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBodyBytes) chunks.push(chunk);
    });
    request.on('end', () => {
      void (async () => {
        if (size > maxBodyBytes) return answer(413, { error: `body larger than ${maxBodyBytes} bytes` });
        let payloads: Payload[];
        try {
          payloads = parseBody(Buffer.concat(chunks).toString('utf8'));
        } catch (error) {
          return answer(400, { error: (error as Error).message });
        }
        try {
          let result = payloads;
          if (operation === 'encode') for (const codec of codecs) result = await codec.encode(result);
          else for (const codec of [...codecs].reverse()) result = await codec.decode(result);
          answer(200, { payloads: result.map(toJson) });
        } catch (error) {
          options.log?.(`[codec-server] ${operation} failed: ${(error as Error).message}`);
          answer(400, { error: (error as Error).message });
        }
      })();
    });
  });
}

function parseBody(text: string): Payload[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error('body is not JSON: expected {"payloads": [...]}');
  }
  const list = (body as { payloads?: unknown }).payloads;
  if (!Array.isArray(list)) throw new Error('body needs "payloads": an array of {metadata, data}');
  return list.map((item: JsonPayload, index) => {
    if (item === null || typeof item !== 'object') throw new Error(`payloads[${index}] is not an object`);
    const metadata: Record<string, Uint8Array> = {};
    for (const [key, value] of Object.entries(item.metadata ?? {})) {
      if (typeof value !== 'string') throw new Error(`payloads[${index}].metadata.${key} should be base64 text`);
      metadata[key] = new Uint8Array(Buffer.from(value, 'base64'));
    }
    if (item.data !== undefined && typeof item.data !== 'string') throw new Error(`payloads[${index}].data should be base64 text`);
    return { metadata, data: new Uint8Array(Buffer.from(item.data ?? '', 'base64')) };
  });
}

function toJson(payload: Payload): JsonPayload {
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(payload.metadata ?? {})) if (value) metadata[key] = Buffer.from(value).toString('base64');
  return { metadata, data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64') };
}
