import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOnnxBackend, type OnnxBackend } from './onnx.backend.js';
import { pythonJson, tinyModelDir } from '../../test/doubles/test-model.js';
import { errorTypes, LonghaulError } from '../../workflows/contracts/errors.js';

/** Log-probabilities of `generated` after `prompt` under the PyTorch model (safetensors), for comparison. */
const pythonLogprobs = `
import json, sys, torch
from transformers import AutoModelForCausalLM
arg = json.loads(sys.argv[1])
model = AutoModelForCausalLM.from_pretrained(arg["dir"], dtype=torch.float32).eval()
ids = arg["prompt"] + arg["generated"]
with torch.no_grad():
    logits = model(input_ids=torch.tensor([ids])).logits[0].double()
logprobs = torch.log_softmax(logits, dim=-1)
start = len(arg["prompt"])
print(json.dumps([float(logprobs[start - 1 + i, token]) for i, token in enumerate(arg["generated"])]))
`;

/** A signal that reports "aborted" from its n-th check on: interrupts deterministically after n - 1 tokens. */
function abortAfterChecks(checks: number): AbortSignal {
  let reads = 0;
  return {
    get aborted() {
      reads += 1;
      return reads >= checks;
    },
    addEventListener: () => undefined,
    removeEventListener: () => undefined,
  } as unknown as AbortSignal;
}

describe('the onnx policy backend on the tiny model', () => {
  let backend: OnnxBackend;
  let dir: string;
  const prompt = 'Question: who wrote Hamlet?\nAnswer:';

  before(async () => {
    dir = await tinyModelDir();
    backend = await createOnnxBackend({ modelDir: dir, version: 3, threads: 1 });
  });
  after(() => backend.close());

  it('generates the same tokens every time when greedy', async () => {
    const first = await backend.generate({ prompt, maxNewTokens: 24 });
    const second = await backend.generate({ prompt, maxNewTokens: 24 });
    assert.equal(first.tokenIds.length, 24);
    assert.deepEqual(second.tokenIds, first.tokenIds);
    assert.equal(first.finishReason, 'length');
    assert.equal(first.text, backend.tokenizer.decode(first.tokenIds));
    assert.deepEqual(first.promptTokenIds, backend.tokenizer.encode(prompt));
  });

  it('generates the same tokens and logprobs with spinning threads (LONGHAUL_ONNX_SPINNING), two of them', async () => {
    const spinning = await createOnnxBackend({ modelDir: dir, version: 3, threads: 2, spinning: true });
    try {
      const spun = await spinning.generate({ prompt, maxNewTokens: 12 });
      const plain = await backend.generate({ prompt, maxNewTokens: 12 });
      assert.deepEqual(spun.tokenIds, plain.tokenIds);
      spun.logprobs.forEach((logprob, index) => assert.ok(Math.abs(logprob - plain.logprobs[index]!) < 1e-4, `token ${index}`));
    } finally {
      await spinning.close();
    }
  });

  it('returns behaviour logprobs that match the PyTorch model within 1e-3', async () => {
    const result = await backend.generate({ prompt, maxNewTokens: 16 });
    const reference = (await pythonJson(pythonLogprobs, { dir, prompt: result.promptTokenIds, generated: result.tokenIds })) as number[];
    assert.equal(result.logprobs.length, 16);
    result.logprobs.forEach((logprob, index) =>
      assert.ok(Math.abs(logprob - reference[index]!) < 1e-3, `token ${index}: ${logprob} vs ${reference[index]}`),
    );
  });

  it('scores forced text (teacher forcing) exactly as if it had been generated', async () => {
    const sampled = await backend.generate({ prompt, maxNewTokens: 12 });
    const forced = await backend.generate({ prompt, maxNewTokens: 1, forcedText: sampled.text });
    assert.deepEqual(forced.tokenIds, backend.tokenizer.encode(sampled.text));
    assert.equal(forced.text, sampled.text);
    assert.equal(forced.finishReason, 'stop');
    assert.deepEqual(
      forced.tokenVersions,
      forced.tokenIds.map(() => 3),
    );
    if (forced.tokenIds.join() === sampled.tokenIds.join()) {
      forced.logprobs.forEach((logprob, index) =>
        assert.ok(Math.abs(logprob - sampled.logprobs[index]!) < 1e-4, `token ${index}: ${logprob} vs ${sampled.logprobs[index]}`),
      );
    }
    const reference = (await pythonJson(pythonLogprobs, { dir, prompt: forced.promptTokenIds, generated: forced.tokenIds })) as number[];
    forced.logprobs.forEach((logprob, index) =>
      assert.ok(Math.abs(logprob - reference[index]!) < 1e-3, `token ${index}: ${logprob} vs ${reference[index]}`),
    );
    await assert.rejects(
      backend.generate({ prompt, maxNewTokens: 4, forcedText: 'x', prefixTokenIds: [1] }),
      /forcedText: cannot be combined with prefixTokenIds/,
    );
    await assert.rejects(backend.generate({ prompt, maxNewTokens: 4, forcedText: '' }), /forcedText/);
  });

  it('tags every generated token with the serving policy version', async () => {
    const result = await backend.generate({ prompt, maxNewTokens: 5 });
    assert.deepEqual(result.tokenVersions, [3, 3, 3, 3, 3]);
    assert.equal(result.policyVersion, 3);
    assert.equal(await backend.currentVersion(), 3);
  });

  it('samples reproducibly for a seed and differently for another seed', async () => {
    const request = { prompt, maxNewTokens: 12, temperature: 1, topP: 0.95 };
    const first = await backend.generate({ ...request, seed: 11 });
    const again = await backend.generate({ ...request, seed: 11 });
    const other = await backend.generate({ ...request, seed: 12 });
    assert.deepEqual(again.tokenIds, first.tokenIds);
    assert.notDeepEqual(other.tokenIds, first.tokenIds);
    for (const logprob of first.logprobs) assert.ok(logprob <= 0 && Number.isFinite(logprob), `logprob ${logprob}`);
  });

  it('stops right after a stop string and includes it in the text', async () => {
    const full = await backend.generate({ prompt, maxNewTokens: 20 });
    const stop = backend.tokenizer.decode(full.tokenIds.slice(4, 6));
    const stopped = await backend.generate({ prompt, maxNewTokens: 20, stop: [stop] });
    assert.equal(stopped.finishReason, 'stop');
    assert.ok(stopped.text.endsWith(stop), `${JSON.stringify(stopped.text)} ends with ${JSON.stringify(stop)}`);
    assert.ok(full.text.startsWith(stopped.text));
    assert.ok(stopped.tokenIds.length <= 6);
  });

  it('renders chat messages through the chat template', async () => {
    const result = await backend.generate({ prompt: '', messages: [{ role: 'user', content: 'Hi' }], maxNewTokens: 2 });
    assert.equal(
      backend.tokenizer.decode(result.promptTokenIds),
      '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('ends an aborted generation as interrupted, and resuming from its tokens gives the uninterrupted result', async () => {
    const whole = await backend.generate({ prompt, maxNewTokens: 20 });
    const interrupted = await backend.generate({ prompt, maxNewTokens: 20 }, abortAfterChecks(8));
    assert.equal(interrupted.finishReason, 'interrupted');
    assert.deepEqual(interrupted.tokenIds, whole.tokenIds.slice(0, 6));
    const resumed = await backend.generate({
      prompt,
      maxNewTokens: 20,
      prefixTokenIds: interrupted.tokenIds,
      prefixLogprobs: interrupted.logprobs,
      prefixTokenVersions: interrupted.tokenIds.map(() => 2),
    });
    assert.deepEqual(resumed.tokenIds, whole.tokenIds);
    assert.equal(resumed.text, whole.text);
    assert.deepEqual(resumed.tokenVersions, [...Array<number>(6).fill(2), ...Array<number>(14).fill(3)]);
    resumed.logprobs.forEach((logprob, index) => assert.ok(Math.abs(logprob - whole.logprobs[index]!) < 1e-4));
  });

  it('recomputes prefix logprobs when a resumed request does not carry them', async () => {
    const whole = await backend.generate({ prompt, maxNewTokens: 8 });
    const resumed = await backend.generate({ prompt, maxNewTokens: 8, prefixTokenIds: whole.tokenIds.slice(0, 3) });
    resumed.logprobs.forEach((logprob, index) => assert.ok(Math.abs(logprob - whole.logprobs[index]!) < 1e-4, `token ${index}`));
  });

  it('rejects bad requests with an error naming the field', async () => {
    await assert.rejects(
      backend.generate({ prompt, maxNewTokens: 0 }),
      (error: unknown) =>
        error instanceof LonghaulError &&
        error.code === errorTypes.invalidInput &&
        error.message === 'maxNewTokens: Too small: expected number to be >=1',
    );
    await assert.rejects(
      backend.generate({ prompt: '', maxNewTokens: 3 }),
      (error: unknown) =>
        error instanceof LonghaulError &&
        error.code === errorTypes.invalidInput &&
        error.message === 'prompt: empty prompt and no messages',
    );
    await assert.rejects(
      backend.generate({ prompt, maxNewTokens: 3, prefixTokenIds: [99_999_999] }),
      (error: unknown) =>
        error instanceof LonghaulError &&
        error.code === errorTypes.invalidInput &&
        error.message === 'prefixTokenIds: token id 99999999 is outside the vocabulary (0..49151)',
    );
  });
});
