/**
 * A local OpenAI-compatible chat server (plain node:http, the real protocol: POST /v1/chat/completions
 * with a JSON body, answered with `choices[0].message.content`) that replays recorded replies for the
 * LLM synthesizer's prompts. A request is routed by the prompt version the synthesizer puts at the head
 * of its system message (`[longhaul.synth.seed/1] …`); each prompt has a queue of replies, served in
 * order, then its fallback. Replies can be garbage on purpose: text that is not JSON, JSON cut short,
 * wrong fields, a response without choices, an HTTP error, or no response at all (a hang, which the
 * client's time limit must end). Every request is recorded.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReplayReply =
  /** 200 with this text as the assistant's message. */
  | { readonly content: string }
  /** An HTTP error status with an OpenAI-style error body. */
  | { readonly status: number; readonly message?: string }
  /** 200 with this raw (not JSON) body. */
  | { readonly raw: string }
  /** 200 with this JSON body as it is (e.g. no `choices`). */
  | { readonly body: unknown }
  /** Never answer. */
  | { readonly hang: true };

export interface ReplayCall {
  /** The prompt name (seed, inject, …) from the system message's version tag; '' when none. */
  readonly prompt: string;
  readonly model: string;
  readonly messages: { role: string; content: string }[];
  readonly reply: string;
  /** The usage the server reported for a 200 with content (prompt 50, completion ⌈length / 4⌉); null for any other reply. */
  readonly usage: { readonly promptTokens: number; readonly completionTokens: number } | null;
}

export interface ChatReplayServer {
  /** Base URL ending in /v1. */
  readonly baseUrl: string;
  readonly calls: ReplayCall[];
  /** Queue more replies for a prompt. */
  enqueue(prompt: string, ...replies: ReplayReply[]): void;
  close(): Promise<void>;
}

/** `content` as JSON text. */
export const jsonReply = (value: unknown): ReplayReply => ({ content: JSON.stringify(value) });

export async function startChatReplayServer(options: {
  readonly script?: Readonly<Record<string, readonly ReplayReply[]>>;
  /** The reply when a prompt's queue is empty. @default a 404-like error naming the prompt */
  readonly fallback?: Readonly<Record<string, ReplayReply>>;
}): Promise<ChatReplayServer> {
  const queues = new Map<string, ReplayReply[]>(Object.entries(options.script ?? {}).map(([name, replies]) => [name, [...replies]]));
  const calls: ReplayCall[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const send = (status: number, body: string, type = 'application/json') => {
        response.writeHead(status, { 'content-type': type });
        response.end(body);
      };
      if (request.method !== 'POST' || request.url !== '/v1/chat/completions')
        return send(404, JSON.stringify({ error: { message: `no route ${request.method} ${request.url}`, type: 'not_found' } }));
      let body: { model?: string; messages?: { role: string; content: string }[] };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        return send(400, JSON.stringify({ error: { message: 'body is not JSON', type: 'invalid_request_error' } }));
      }
      if (!Array.isArray(body.messages) || typeof body.model !== 'string')
        return send(400, JSON.stringify({ error: { message: 'model and messages are required', type: 'invalid_request_error' } }));
      const system = body.messages.find((message) => message.role === 'system')?.content ?? '';
      const prompt = /^\[longhaul\.synth\.([a-z]+)\/\d+\]/.exec(system)?.[1] ?? '';
      const reply: ReplayReply = queues.get(prompt)?.shift() ??
        options.fallback?.[prompt] ?? { status: 404, message: `no recorded reply for prompt "${prompt}"` };
      const usage = 'content' in reply ? { promptTokens: 50, completionTokens: Math.ceil(reply.content.length / 4) } : null;
      calls.push({ prompt, model: body.model, messages: body.messages, reply: JSON.stringify(reply).slice(0, 200), usage });
      if ('hang' in reply) return; // the client's time limit ends it
      if ('status' in reply)
        return send(reply.status, JSON.stringify({ error: { message: reply.message ?? 'Internal Server Error', type: 'server_error' } }));
      if ('raw' in reply) return send(200, reply.raw, 'text/plain');
      if ('body' in reply) return send(200, JSON.stringify(reply.body));
      send(
        200,
        JSON.stringify({
          id: `chatcmpl-replay-${calls.length}`,
          object: 'chat.completion',
          created: 0,
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: reply.content }, finish_reason: 'stop' }],
          usage: {
            prompt_tokens: usage!.promptTokens,
            completion_tokens: usage!.completionTokens,
            total_tokens: usage!.promptTokens + usage!.completionTokens,
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    calls,
    enqueue(prompt, ...replies) {
      queues.set(prompt, [...(queues.get(prompt) ?? []), ...replies]);
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
