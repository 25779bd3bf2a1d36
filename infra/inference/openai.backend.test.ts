/**
 * The openai backend against a real generator (`longhaul serve` on the tiny model, a child process)
 * and, for failure modes, a local HTTP server speaking the protocol.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { createOnnxBackend, type OnnxBackend } from '../../gpu/infer/onnx.backend.js';
import { tinyModelDir } from '../../test/doubles/test-model.js';
import { startLonghaulServe, startTokenlessServer } from '../../test/helpers/inference-servers.js';
import { createOpenAIBackend, retryAfterMs } from './openai.backend.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

const prompt = 'Question: what is the tallest mountain?\nAnswer:';

/** A protocol server that answers from a script of (status, headers, body), recording arrival times. */
async function scriptedServer(script: { status: number; headers?: Record<string, string>; body: unknown }[]) {
  const arrivals: number[] = [];
  const server = http.createServer((request, response) => {
    request.resume();
    arrivals.push(Date.now());
    const step = script[Math.min(arrivals.length - 1, script.length - 1)]!;
    response.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
    response.end(JSON.stringify(step.body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return { baseUrl: `http://127.0.0.1:${port}/v1`, arrivals, close: () => new Promise((resolve) => server.close(resolve)) };
}

const okCompletion = { choices: [{ text: ' Everest', finish_reason: 'stop' }] };

describe('the openai backend', () => {
  let serve: { child: ChildProcess; baseUrl: string };
  let local: OnnxBackend;

  before(async () => {
    const dir = await tinyModelDir();
    serve = await startLonghaulServe(dir, 4);
    local = await createOnnxBackend({ modelDir: dir, version: 4, threads: 1 });
  });
  after(async () => {
    serve.child.kill('SIGTERM');
    await local.close();
  });

  it('completes through longhaul serve with the same tokens and logprobs as the local policy', async () => {
    const backend = createOpenAIBackend({ baseUrl: serve.baseUrl, model: 'tiny' });
    const remote = await backend.generate({ prompt, maxNewTokens: 8 });
    const direct = await local.generate({ prompt, maxNewTokens: 8 });
    assert.deepEqual(remote.tokenIds, direct.tokenIds);
    assert.deepEqual(remote.promptTokenIds, direct.promptTokenIds);
    assert.equal(remote.text, direct.text);
    assert.equal(remote.finishReason, 'length');
    remote.logprobs.forEach((logprob, index) => assert.ok(Math.abs(logprob - direct.logprobs[index]!) < 1e-6));
    assert.deepEqual(remote.tokenVersions, Array<number>(8).fill(4));
    assert.equal(await backend.currentVersion(), 4);
  });

  it('chats through longhaul serve with logprobs and the chat template applied', async () => {
    const backend = createOpenAIBackend({ baseUrl: serve.baseUrl, model: 'tiny', requestTokenIds: false });
    const messages = [{ role: 'user' as const, content: 'Hello there' }];
    const remote = await backend.generate({ prompt: '', messages, maxNewTokens: 5, temperature: 0.7, seed: 3 });
    const direct = await local.generate({ prompt: '', messages, maxNewTokens: 5, temperature: 0.7, seed: 3 });
    assert.equal(remote.text, direct.text);
    assert.deepEqual(remote.tokenIds, direct.tokenIds);
    assert.equal(remote.logprobs.length, 5);
  });

  it("passes a bad request's reason from the server without retrying", async () => {
    const backend = createOpenAIBackend({ baseUrl: serve.baseUrl, model: 'tiny', api: 'chat' });
    await assert.rejects(
      backend.generate({ prompt: 'hi', maxNewTokens: 2, stop: Array<string>(3).fill('x'), temperature: 3 }),
      (error: unknown) =>
        error instanceof LonghaulError &&
        error.code === errorTypes.invalidInput &&
        error.message.endsWith('HTTP 400: temperature: Too big: expected number to be <=2'),
    );
  });

  it('retries a 5xx with backoff and then succeeds', async () => {
    const server = await scriptedServer([
      { status: 503, body: { error: { message: 'warming up' } } },
      { status: 502, body: 'bad gateway' },
      { status: 200, body: okCompletion },
    ]);
    try {
      const result = await createOpenAIBackend({ baseUrl: server.baseUrl, model: 'm', initialBackoffMs: 50 }).generate({
        prompt,
        maxNewTokens: 4,
      });
      assert.equal(result.text, ' Everest');
      assert.deepEqual(result.tokenIds, []);
      assert.equal(server.arrivals.length, 3);
      assert.ok(server.arrivals[2]! - server.arrivals[1]! >= 90, 'the second wait doubles the first');
    } finally {
      await server.close();
    }
  });

  it("waits for a 429's Retry-After before trying again", async () => {
    const server = await scriptedServer([
      { status: 429, headers: { 'retry-after': '1' }, body: { error: 'slow down' } },
      { status: 200, body: okCompletion },
    ]);
    try {
      await createOpenAIBackend({ baseUrl: server.baseUrl, model: 'm', initialBackoffMs: 10 }).generate({ prompt, maxNewTokens: 4 });
      assert.ok(server.arrivals[1]! - server.arrivals[0]! >= 950, `waited ${server.arrivals[1]! - server.arrivals[0]!} ms`);
    } finally {
      await server.close();
    }
  });

  it('fails with a clear error when the server is unreachable', async () => {
    const closed = await scriptedServer([]);
    await closed.close();
    const backend = createOpenAIBackend({ baseUrl: closed.baseUrl, model: 'm', maxAttempts: 3, initialBackoffMs: 10 });
    await assert.rejects(
      backend.generate({ prompt, maxNewTokens: 4 }),
      (error: unknown) =>
        error instanceof LonghaulError &&
        error.code === errorTypes.unavailable &&
        error.message === `OpenAI-compatible server at ${closed.baseUrl} is unreachable or failing (ECONNREFUSED) after 3 attempts`,
    );
  });

  it('rejects a response without choices, naming the field', async () => {
    const server = await scriptedServer([{ status: 200, body: { choices: [] } }]);
    try {
      await assert.rejects(
        createOpenAIBackend({ baseUrl: server.baseUrl, model: 'm' }).generate({ prompt, maxNewTokens: 4 }),
        (error: unknown) =>
          error instanceof LonghaulError &&
          error.code === errorTypes.invalidInput &&
          error.message === '/completions response: choices: no choices',
      );
    } finally {
      await server.close();
    }
  });

  it("counts a token-less server's tokens from usage.completion_tokens and marks the generation untrainable", async () => {
    const server = await startTokenlessServer({ reply: () => ' Mount Everest, in Nepal', completionTokens: () => 7 });
    try {
      for (const api of ['completions', 'chat'] as const) {
        const result = await createOpenAIBackend({ baseUrl: `${server.url}/v1`, model: 'gguf', api }).generate({
          prompt,
          maxNewTokens: 32,
        });
        assert.equal(result.text, ' Mount Everest, in Nepal');
        assert.deepEqual(result.tokenIds, []);
        assert.deepEqual(result.untrainable, { missing: ['tokenIds', 'logprobs'], generatedTokens: 7, countedFrom: 'usage' });
      }
      assert.deepEqual(
        server.calls.map((call) => call.path),
        ['/v1/completions', '/v1/chat/completions'],
      );
    } finally {
      await server.close();
    }
  });

  it('estimates the count from the text (4 characters a token) when the server sends neither token ids nor usage', async () => {
    const server = await startTokenlessServer({ reply: () => 'x'.repeat(41), completionTokens: null });
    try {
      const result = await createOpenAIBackend({ baseUrl: `${server.url}/v1`, model: 'gguf' }).generate({ prompt, maxNewTokens: 32 });
      assert.deepEqual(result.untrainable, { missing: ['tokenIds', 'logprobs'], generatedTokens: 11, countedFrom: 'estimate' });
    } finally {
      await server.close();
    }
  });

  it('reports capabilities by probing: longhaul serve gives token ids and logprobs, a token-less server neither', async () => {
    const served = await createOpenAIBackend({ baseUrl: serve.baseUrl, model: 'tiny' }).capabilities();
    assert.deepEqual([served.tokenIds, served.logprobs], [true, true]);
    assert.equal(served.detail, `probed ${serve.baseUrl}/completions (model "tiny"): token ids and logprobs present`);
    const server = await startTokenlessServer({ reply: () => ' Paris', completionTokens: () => 1 });
    try {
      const tokenless = await createOpenAIBackend({ baseUrl: `${server.url}/v1`, model: 'gguf' }).capabilities();
      assert.deepEqual([tokenless.tokenIds, tokenless.logprobs], [false, false]);
      assert.match(tokenless.detail, /no token ids and no logprobs in the response/);
    } finally {
      await server.close();
    }
  });

  it('streams from longhaul serve as server-sent events: the same tokens and text as the plain answer, then usage and [DONE]', async () => {
    const post = (path: string, body: object) =>
      fetch(`${serve.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const chatBody = { model: 'tiny', messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 6, temperature: 0, logprobs: true };
    const plain = (await (await post('/chat/completions', chatBody)).json()) as {
      choices: { message: { content: string }; token_ids: number[] }[];
    };
    const streamed = await post('/chat/completions', { ...chatBody, stream: true, stream_options: { include_usage: true } });
    assert.equal(streamed.status, 200);
    assert.equal(streamed.headers.get('content-type'), 'text/event-stream');
    const lines = (await streamed.text()).split('\n').filter((line) => line !== '');
    assert.ok(
      lines.every((line) => line.startsWith('data: ')),
      'every line is an SSE data line',
    );
    assert.equal(lines.at(-1), 'data: [DONE]');
    type Chunk = {
      object: string;
      choices: {
        delta: { role?: string; content?: string };
        token_ids?: number[];
        logprobs: { content: unknown[] } | null;
        finish_reason: string | null;
      }[];
      usage?: { completion_tokens: number };
    };
    const chunks = lines.slice(0, -1).map((line) => JSON.parse(line.slice('data: '.length)) as Chunk);
    assert.ok(chunks.every((chunk) => chunk.object === 'chat.completion.chunk'));
    assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
    const choices = chunks.flatMap((chunk) => chunk.choices);
    assert.equal(choices.map((choice) => choice.delta.content ?? '').join(''), plain.choices[0]!.message.content);
    assert.deepEqual(
      choices.flatMap((choice) => choice.token_ids ?? []),
      plain.choices[0]!.token_ids,
    );
    assert.equal(choices.filter((choice) => choice.logprobs !== null).length, plain.choices[0]!.token_ids.length, 'one logprob per token');
    assert.equal(choices.at(-1)!.finish_reason, plain.choices[0]!.token_ids.length === 6 ? 'length' : 'stop');
    assert.equal(chunks.at(-1)!.usage?.completion_tokens, plain.choices[0]!.token_ids.length);

    const completion = (await (await post('/completions', { model: 'tiny', prompt, max_tokens: 5, temperature: 0 })).json()) as {
      choices: { text: string }[];
    };
    const completionLines = (
      await (await post('/completions', { model: 'tiny', prompt, max_tokens: 5, temperature: 0, stream: true })).text()
    )
      .split('\n')
      .filter((line) => line !== '');
    assert.equal(completionLines.at(-1), 'data: [DONE]');
    const texts = completionLines
      .slice(0, -1)
      .map((line) => JSON.parse(line.slice('data: '.length)) as { object: string; choices: { text: string }[] });
    assert.ok(texts.every((chunk) => chunk.object === 'text_completion'));
    assert.equal(texts.map((chunk) => chunk.choices[0]!.text).join(''), completion.choices[0]!.text);
    assert.equal(texts.length, 6, 'five token chunks and the finish chunk');
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    assert.equal(retryAfterMs('2'), 2000);
    assert.equal(retryAfterMs(null), undefined);
    assert.equal(retryAfterMs('soon'), undefined);
    const inOneMinute = new Date(Date.now() + 60_000).toUTCString();
    assert.ok(Math.abs(retryAfterMs(inOneMinute)! - 60_000) < 1500);
  });
});
