/**
 * The openai backend against a real generator (`longhaul serve` on the tiny model, a child process)
 * and, for failure modes, a local HTTP server speaking the protocol.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { once } from 'node:events';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createOnnxBackend, type OnnxBackend } from '../../gpu/infer/onnx.backend.js';
import { tinyModelDir } from '../../gpu/infer/test-model.js';
import { repoRoot } from '../paths.js';
import { createOpenAIBackend, retryAfterMs } from './openai.backend.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

const prompt = 'Question: what is the tallest mountain?\nAnswer:';

async function startServe(modelDir: string): Promise<{ child: ChildProcess; baseUrl: string }> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'dist', 'cli', 'main.js'), 'serve', '--port', '0', '--model-dir', modelDir, '--version', '4'], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LONGHAUL_ONNX_THREADS: '1' },
  });
  let output = '';
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+\/v1)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`longhaul serve exited with ${code}:\n${output}`)));
  });
  return { child, baseUrl };
}

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
    serve = await startServe(dir);
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

  it('passes a bad request\'s reason from the server without retrying', async () => {
    const backend = createOpenAIBackend({ baseUrl: serve.baseUrl, model: 'tiny', api: 'chat' });
    await assert.rejects(backend.generate({ prompt: 'hi', maxNewTokens: 2, stop: Array<string>(3).fill('x'), temperature: 3 }), (error: unknown) =>
      (error instanceof LonghaulError && error.code === errorTypes.invalidInput) && error.message.endsWith('HTTP 400: temperature: Too big: expected number to be <=2'));
  });

  it('retries a 5xx with backoff and then succeeds', async () => {
    const server = await scriptedServer([{ status: 503, body: { error: { message: 'warming up' } } }, { status: 502, body: 'bad gateway' }, { status: 200, body: okCompletion }]);
    try {
      const result = await createOpenAIBackend({ baseUrl: server.baseUrl, model: 'm', initialBackoffMs: 50 }).generate({ prompt, maxNewTokens: 4 });
      assert.equal(result.text, ' Everest');
      assert.deepEqual(result.tokenIds, []);
      assert.equal(server.arrivals.length, 3);
      assert.ok(server.arrivals[2]! - server.arrivals[1]! >= 90, 'the second wait doubles the first');
    } finally {
      await server.close();
    }
  });

  it('waits for a 429\'s Retry-After before trying again', async () => {
    const server = await scriptedServer([{ status: 429, headers: { 'retry-after': '1' }, body: { error: 'slow down' } }, { status: 200, body: okCompletion }]);
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
    await assert.rejects(backend.generate({ prompt, maxNewTokens: 4 }), (error: unknown) =>
      (error instanceof LonghaulError && error.code === errorTypes.unavailable) && error.message === `OpenAI-compatible server at ${closed.baseUrl} is unreachable or failing (ECONNREFUSED) after 3 attempts`);
  });

  it('rejects a response without choices, naming the field', async () => {
    const server = await scriptedServer([{ status: 200, body: { choices: [] } }]);
    try {
      await assert.rejects(createOpenAIBackend({ baseUrl: server.baseUrl, model: 'm' }).generate({ prompt, maxNewTokens: 4 }), (error: unknown) =>
        (error instanceof LonghaulError && error.code === errorTypes.invalidInput) && error.message === '/completions response: choices: no choices');
    } finally {
      await server.close();
    }
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    assert.equal(retryAfterMs('2'), 2000);
    assert.equal(retryAfterMs(null), undefined);
    assert.equal(retryAfterMs('soon'), undefined);
    const inOneMinute = new Date(Date.now() + 60_000).toUTCString();
    assert.ok(Math.abs(retryAfterMs(inOneMinute)! - 60_000) < 1500);
  });
});
