import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { GenerateRequest, GenerateResult } from '../../activities/ports/policy.port.js';
import type { PrefixReuse, RunReport } from './batch-decoder.js';
import { createOnnxBackend, type OnnxBackend } from './onnx.backend.js';
import { tinyModelDir } from '../../test/doubles/test-model.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

/**
 * Batched and unbatched decoding of the same requests must agree: same tokens, logprobs within
 * 1e-4 (padding and batch shape change the float32 summation order in onnxruntime, nothing else;
 * measured differences are below 1e-5).
 */
const tolerance = 1e-4;

function assertSameGeneration(batched: GenerateResult, alone: GenerateResult, label: string): void {
  assert.deepEqual(batched.tokenIds, alone.tokenIds, `${label}: token ids`);
  assert.equal(batched.text, alone.text, `${label}: text`);
  assert.equal(batched.finishReason, alone.finishReason, `${label}: finish reason`);
  assert.equal(batched.logprobs.length, alone.logprobs.length);
  batched.logprobs.forEach((logprob, index) =>
    assert.ok(Math.abs(logprob - alone.logprobs[index]!) < tolerance, `${label} token ${index}: ${logprob} vs ${alone.logprobs[index]}`),
  );
}

describe('continuous batching in the onnx policy (tiny model)', () => {
  let backend: OnnxBackend;
  const runs: RunReport[] = [];
  const prompts = [
    'Question: who wrote Hamlet?\nAnswer:',
    'The capital of France is',
    'List three prime numbers greater than one hundred, then explain why each of them is prime in one short sentence.',
    'Hi',
    'Temporal keeps workflow histories durable while activities do the input and output of a long-horizon agent.',
    'Once upon a time',
  ];
  // Mixed settings: greedy and sampled, different seeds, top-p, stop strings and lengths per sequence.
  const requests: GenerateRequest[] = prompts.map((prompt, index) => ({
    prompt,
    maxNewTokens: 10 + 3 * index,
    ...(index % 2 === 1 ? { temperature: 0.8, seed: 100 + index, topP: 0.9 } : {}),
    ...(index === 2 ? { stop: ['the', 'a'] } : {}),
  }));

  before(async () => {
    backend = await createOnnxBackend({ modelDir: await tinyModelDir(), version: 1, threads: 1, onRun: (run) => runs.push(run) });
  });
  after(() => backend.close());

  it('gives every sequence of a batch the tokens and logprobs it gets alone', async () => {
    const alone: GenerateResult[] = [];
    for (const request of requests) alone.push(await backend.generate(request));
    runs.length = 0;
    const batched = await Promise.all(requests.map((request) => backend.generate(request)));
    batched.forEach((result, index) => assertSameGeneration(result, alone[index]!, `sequence ${index}`));
    const decodeRows = Math.max(...runs.filter((run) => run.kind === 'decode').map((run) => run.active));
    // A sequence that stops on its first token (here the stop string) never needs a decode step.
    const decoding = alone.filter((result) => result.tokenIds.length > 1).length;
    assert.ok(decoding >= 4, `${decoding} sequences decode`);
    assert.equal(decodeRows, decoding, 'every decoding sequence in one run at least once');
    assert.ok(
      runs.some((run) => run.kind === 'prefill' && run.active > 1),
      'prompts prefilled together',
    );
  });

  it('lets sequences join a running batch between steps and leave it when done', async () => {
    const alone: GenerateResult[] = [];
    for (const request of requests.slice(0, 3)) alone.push(await backend.generate(request));
    runs.length = 0;
    // The second starts after the first has 3 tokens, the third after the second has 2.
    let second: Promise<GenerateResult> | undefined;
    let third: Promise<GenerateResult> | undefined;
    let firstTokens = 0;
    let secondTokens = 0;
    const first = backend.generate(requests[0]!, undefined, () => {
      firstTokens += 1;
      if (firstTokens === 3)
        second = backend.generate(requests[1]!, undefined, () => {
          secondTokens += 1;
          if (secondTokens === 2) third = backend.generate(requests[2]!);
        });
    });
    const firstResult = await first;
    const until = async (get: () => Promise<GenerateResult> | undefined) => {
      while (!get()) await new Promise((resolve) => setImmediate(resolve));
      return get()!;
    };
    const [secondResult, thirdResult] = await Promise.all([until(() => second), until(() => third)]).then((started) =>
      Promise.all(started),
    );
    assertSameGeneration(firstResult, alone[0]!, 'first');
    assertSameGeneration(secondResult, alone[1]!, 'joined second');
    assertSameGeneration(thirdResult, alone[2]!, 'joined third');
    const sizes = runs.filter((run) => run.kind === 'decode').map((run) => run.active);
    assert.ok(sizes.includes(1) && sizes.some((size) => size >= 2), `decode batch sizes ${sizes.join(',')}`);
  });

  it('interrupts one sequence of a batch without disturbing the others', async () => {
    const alone = await backend.generate(requests[4]!);
    const controller = new AbortController();
    let seen = 0;
    const [interrupted, others] = await Promise.all([
      backend.generate({ prompt: prompts[0]!, maxNewTokens: 40 }, controller.signal, () => {
        seen += 1;
        if (seen === 4) controller.abort();
      }),
      backend.generate(requests[4]!),
    ]);
    assert.equal(interrupted.finishReason, 'interrupted');
    assert.equal(interrupted.tokenIds.length, 4);
    assertSameGeneration(others, alone, 'neighbour of an interrupted sequence');
  });

  it('drops a prompt whose caller aborted while it waited for the prefill: it is never run', async () => {
    const alone = await backend.generate(requests[1]!);
    runs.length = 0;
    // 12 prompts at once: 8 fit the first prefill run (maxPrefillRows), 4 wait in the queue and are aborted there
    // (a timed-out activity's retry would otherwise leave its old prompt to be prefilled for nobody).
    const controllers = Array.from({ length: 12 }, () => new AbortController());
    const pending = controllers.map((controller, index) =>
      backend.generate(index < 8 ? requests[1]! : { prompt: prompts[index % prompts.length]!, maxNewTokens: 5 }, controller.signal),
    );
    for (const controller of controllers.slice(8)) controller.abort();
    const results = await Promise.all(pending);
    results.slice(0, 8).forEach((result, index) => assertSameGeneration(result, alone, `live sequence ${index}`));
    for (const result of results.slice(8)) {
      assert.equal(result.finishReason, 'interrupted');
      assert.equal(result.tokenIds.length, 0);
    }
    const prefilled = runs.filter((run) => run.kind === 'prefill').reduce((sum, run) => sum + run.active, 0);
    assert.equal(prefilled, 8, 'only the live prompts were prefilled');
  });

  it('fails a request beyond the context window alone, never the batch it came with', async () => {
    assert.equal(backend.contextWindow, 8192);
    const alone = await backend.generate(requests[0]!);
    const tooLongPrompt = 'word '.repeat(9000);
    const [good, longPrompt, tooManyTokens, forcedTooLong, emptyStop] = await Promise.allSettled([
      backend.generate(requests[0]!),
      backend.generate({ prompt: tooLongPrompt, maxNewTokens: 4 }),
      backend.generate({ prompt: prompts[1]!, maxNewTokens: 9000 }),
      backend.generate({ prompt: prompts[1]!, maxNewTokens: 1, forcedText: tooLongPrompt }),
      backend.generate({ prompt: prompts[1]!, maxNewTokens: 4, stop: ['.', ''] }),
    ]);
    assert.equal(good.status, 'fulfilled');
    assertSameGeneration(good.value, alone, 'good request beside bad ones');
    const reason = (settled: PromiseSettledResult<GenerateResult>) => {
      assert.equal(settled.status, 'rejected');
      const error = settled.reason as unknown;
      assert.ok(error instanceof LonghaulError && error.code === errorTypes.invalidInput, String(error));
      return error.message;
    };
    assert.match(
      reason(longPrompt),
      /^prompt: 9\d{3} prompt tokens leave no room in the model's context window of 8192 tokens; shorten the prompt$/,
    );
    const promptLength = backend.tokenizer.encode(prompts[1]!).length;
    assert.equal(
      reason(tooManyTokens),
      `maxNewTokens: ${promptLength} prompt tokens + 9000 new tokens exceed the model's context window of 8192 tokens; at most ${8192 - promptLength} fit after this prompt`,
    );
    assert.match(
      reason(forcedTooLong),
      /^forcedText: \d+ prompt tokens \+ \d+ forced tokens exceed the model's context window of 8192 tokens/,
    );
    assert.equal(reason(emptyStop), 'stop.1: Too small: expected string to have >=1 characters');
  });

  it('scores forced text while other sequences decode', async () => {
    const sampled = await backend.generate(requests[0]!);
    const scoredAlone = await backend.generate({ prompt: prompts[0]!, maxNewTokens: 1, forcedText: sampled.text });
    const [scored, decoded] = await Promise.all([
      backend.generate({ prompt: prompts[0]!, maxNewTokens: 1, forcedText: sampled.text }),
      backend.generate(requests[3]!),
    ]);
    assertSameGeneration(scored, scoredAlone, 'forced text in a batch');
    assert.equal(decoded.tokenIds.length > 0, true);
  });

  it('holds no scored sequence once its result is back, however many are scored with no decode between', async () => {
    // Warm-start replays score every gold turn and generate nothing: a released sequence that never
    // decoded stayed queued to join the decode batch, with its prompt's keys and values (session 29: 14–20 GB).
    for (let turn = 0; turn < 12; turn += 1)
      await Promise.all(
        prompts.map((prompt, index) => backend.generate({ prompt, maxNewTokens: 1, forcedText: ` turn ${turn} of sequence ${index}.` })),
      );
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(
      backend.decoder.heldSequences() <= prompts.length,
      `${backend.decoder.heldSequences()} sequences held after 72 scored prompts (at most the last prefill group's ${prompts.length})`,
    );
  });

  it('keeps at most maxBatchSize sequences in a decode run; the others wait for a row', async () => {
    const small: RunReport[] = [];
    const limited = await createOnnxBackend({
      modelDir: await tinyModelDir(),
      version: 1,
      threads: 1,
      maxBatchSize: 2,
      onRun: (run) => small.push(run),
    });
    try {
      const alone: GenerateResult[] = [];
      for (const request of requests.slice(0, 4)) alone.push(await limited.generate(request));
      small.length = 0;
      const batched = await Promise.all(requests.slice(0, 4).map((request) => limited.generate(request)));
      batched.forEach((result, index) => assertSameGeneration(result, alone[index]!, `sequence ${index} (batch of at most 2)`));
      const decodeRuns = small.filter((run) => run.kind === 'decode');
      assert.ok(
        decodeRuns.every((run) => run.rows <= 2),
        `rows ${decodeRuns.map((run) => run.rows).join(',')}`,
      );
      assert.ok(decodeRuns.some((run) => run.active === 2));
    } finally {
      await limited.close();
    }
  });
});

describe('the decoder keeps the batch cache itself (format 4) and agrees with taking the grown cache back', () => {
  // 45 new tokens: more than the 32 spare columns a rebuilt cache gets, so the buffer grows mid-decode.
  const requests: GenerateRequest[] = [
    { prompt: 'The capital of France is', maxNewTokens: 45 },
    { prompt: 'Once upon a time', maxNewTokens: 40, temperature: 0.8, seed: 7, topP: 0.9 },
    { prompt: 'Hi', maxNewTokens: 12 },
  ];

  it('gives the same tokens and logprobs, alone and batched, with fewer columns handed back', async () => {
    const modelDir = await tinyModelDir();
    const results: Record<string, GenerateResult[][]> = {};
    const columns: Record<string, number[]> = {};
    for (const keepOwnCache of [true, false]) {
      const runs: RunReport[] = [];
      const backend = await createOnnxBackend({ modelDir, version: 1, threads: 1, keepOwnCache, onRun: (run) => runs.push(run) });
      try {
        if (keepOwnCache) assert.equal(backend.model.keepsOwnCache, true, 'the tiny model is prepared as format 4');
        const alone: GenerateResult[] = [];
        for (const request of requests) alone.push(await backend.generate(request));
        const batched = await Promise.all(requests.map((request) => backend.generate(request)));
        results[String(keepOwnCache)] = [alone, batched];
        columns[String(keepOwnCache)] = runs.filter((run) => run.kind === 'decode').map((run) => run.columns);
      } finally {
        await backend.close();
      }
    }
    const [ownAlone, ownBatched] = results.true!;
    const [presentAlone, presentBatched] = results.false!;
    requests.forEach((_, index) => {
      assertSameGeneration(ownAlone![index]!, presentAlone![index]!, `sequence ${index} alone, own cache vs grown cache`);
      assertSameGeneration(ownBatched![index]!, presentBatched![index]!, `sequence ${index} batched, own cache vs grown cache`);
      assertSameGeneration(ownBatched![index]!, ownAlone![index]!, `sequence ${index} own cache, batched vs alone`);
    });
    // Kept: the graph sees the buffer's capacity, which grows in steps (a copy every 32 decode steps at most);
    // taken back: a new column every step.
    const steps = (list: number[]) => list.filter((value, index) => index > 0 && value !== list[index - 1]).length;
    assert.ok(
      steps(columns.true!) < steps(columns.false!) / 4,
      `column changes: own ${steps(columns.true!)}, grown ${steps(columns.false!)}`,
    );
  });
});

describe('the prefix cache: a prompt that extends a finished generation is prefilled from where they part', () => {
  it('gives the next turn the same tokens and logprobs as a prefill from the start, and prefills only the new tokens', async () => {
    const modelDir = await tinyModelDir();
    const first: GenerateRequest = { prompt: 'Question: what is the capital of Peru?\nThink, then search.\n', maxNewTokens: 14 };
    const turns = async (prefixCacheBytes: number) => {
      const runs: RunReport[] = [];
      const backend = await createOnnxBackend({ modelDir, version: 1, threads: 1, prefixCacheBytes, onRun: (run) => runs.push(run) });
      const reuses: PrefixReuse[] = [];
      backend.decoder.onPrefixReuse = (reuse) => reuses.push(reuse);
      try {
        const one = await backend.generate(first);
        // The next turn: the transcript so far, then a tool result; two samples of it at once (a group).
        const next: GenerateRequest = {
          prompt: `${first.prompt}${one.text}\n<result>Lima is the capital and largest city of Peru.</result>\n`,
          maxNewTokens: 10,
          temperature: 0.8,
          seed: 3,
        };
        runs.length = 0;
        const two = await Promise.all([backend.generate(next), backend.generate({ ...next, seed: 4 })]);
        const prefilled = runs.filter((run) => run.kind === 'prefill').reduce((sum, run) => sum + run.newTokens * run.active, 0);
        return { one, two, reuses, prefilled, promptTokens: two[0]!.promptTokenIds.length, state: backend.decoder.prefixCacheState() };
      } finally {
        await backend.close();
      }
    };
    const cached = await turns(64 * 1024 * 1024);
    const plain = await turns(0);
    assertSameGeneration(cached.one, plain.one, 'first turn');
    cached.two.forEach((result, index) => assertSameGeneration(result, plain.two[index]!, `next turn, sample ${index}`));
    assert.equal(plain.reuses.length, 0);
    assert.equal(cached.reuses.length, 2, 'both samples of the next turn start from the first turn');
    const firstLength = cached.one.promptTokenIds.length + cached.one.tokenIds.length - 1; // the last sampled token was never fed
    for (const reuse of cached.reuses)
      assert.ok(reuse.reused >= cached.one.promptTokenIds.length && reuse.reused <= firstLength, JSON.stringify(reuse));
    assert.ok(
      cached.prefilled <= 2 * (cached.promptTokens - cached.one.promptTokenIds.length),
      `prefilled ${cached.prefilled} tokens with the cache, ${plain.prefilled} without`,
    );
    assert.equal(plain.prefilled, 2 * plain.promptTokens);
    // One entry per finished generation at most (an entry that a later one extends token for token is dropped;
    // here the transcript's text re-tokenizes differently where the generated text ends, so the first stays).
    assert.ok(cached.state.entries >= 1 && cached.state.entries <= 3 && cached.state.bytes > 0, JSON.stringify(cached.state));
  });

  it('keeps no more than its bytes, dropping the least recently used entry first', async () => {
    const backend = await createOnnxBackend({ modelDir: await tinyModelDir(), version: 1, threads: 1, prefixCacheBytes: 1 });
    try {
      await backend.generate({ prompt: 'A prompt long enough to be worth keeping in the cache, twice over.', maxNewTokens: 4 });
      assert.deepEqual(backend.decoder.prefixCacheState(), { entries: 0, bytes: 0 }, 'an entry larger than the budget is not kept');
    } finally {
      await backend.close();
    }
  });
});
