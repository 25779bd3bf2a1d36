/**
 * Weight-sync adapters against local servers that speak SGLang's and vLLM's real HTTP shapes
 * (test/helpers/inference-servers.ts), the syncWeights activity's failure mapping, and the config
 * that picks an adapter. Needs no stack.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { type WeightSync } from '../activities/ports/weight-sync.port.js';
import { createWeightSyncActivities } from '../activities/weight-sync.activities.js';
import { loadConfig } from '../infra/config.js';
import { createWeightSync, loraAdapterName } from '../infra/inference/weight-sync.js';
import type { SyncWeightsResult } from '../workflows/contracts/learner.contract.js';
import { startSglangServer, startVllmServer, type ProtocolServer } from './helpers/inference-servers.js';
import { errorTypes, LonghaulError } from '../workflows/contracts/errors.js';

const noProgress = () => undefined;

/** A port nothing listens on. */
async function closedPortUrl(): Promise<string> {
  const server = await startSglangServer();
  const url = server.url;
  await server.close();
  return url;
}

describe('weight-sync adapters against SGLang and vLLM protocol servers', () => {
  let root: string;
  const folders = new Map<number, string>();
  const reloaded: number[] = [];
  const local = {
    reload: async (version: number) => {
      reloaded.push(version);
      return { previous: null, reloaded: true };
    },
  };
  const folderOf = async (version: number) => {
    const folder = folders.get(version);
    if (!folder) throw new LonghaulError(errorTypes.notFound, `policy version ${version} is not registered`);
    return folder;
  };
  const make = (kind: 'sglang' | 'vllm', url: string) => createWeightSync({ kind, url }, { local, folderOf });

  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'longhaul-weight-sync-'));
    // Versions 1-4: full weights plus a LoRA adapter; version 5: neither (what a broken export leaves).
    for (let version = 1; version <= 5; version += 1) {
      const folder = path.join(root, `v${version}`);
      fs.mkdirSync(folder);
      if (version <= 4) {
        fs.writeFileSync(path.join(folder, 'config.json'), '{"architectures":["LlamaForCausalLM"]}');
        fs.writeFileSync(path.join(folder, 'model.safetensors'), 'weights');
        fs.writeFileSync(path.join(folder, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', r: 8, lora_alpha: 16 }));
      }
      folders.set(version, folder);
    }
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  describe('sglang', () => {
    let server: ProtocolServer;
    before(async () => {
      server = await startSglangServer();
    });
    after(() => server.close());

    it('posts the version folder to /update_weights_from_disk, then switches the local backend', async () => {
      reloaded.length = 0;
      await make('sglang', server.url).sync(2, noProgress);
      assert.deepEqual(server.calls.at(-1), {
        method: 'POST',
        path: '/update_weights_from_disk',
        contentType: 'application/json',
        body: { model_path: folders.get(2) },
        status: 200,
      });
      assert.deepEqual(reloaded, [2]);
    });

    it("surfaces the server's message when it refuses a folder, and does not switch the local backend", async () => {
      reloaded.length = 0;
      await assert.rejects(make('sglang', server.url).sync(5, noProgress), (error: unknown) => {
        assert.ok(error instanceof LonghaulError && error.code === errorTypes.invalidInput);
        assert.match(
          error.message,
          new RegExp(
            `^SGLang refused policy version 5 from ${folders.get(5)}: Failed to get weights iterator: .* has no config\\.json and \\*\\.safetensors weights\\. Fix: the folder must hold Hugging Face weights`,
          ),
        );
        return true;
      });
      assert.deepEqual(reloaded, []);
    });

    it('reads success from the body when an older server answers a failure with HTTP 200', async () => {
      const legacy = await startSglangServer({ legacyStatus: true });
      try {
        await assert.rejects(
          make('sglang', legacy.url).sync(5, noProgress),
          (error: unknown) => error instanceof LonghaulError && error.code === errorTypes.invalidInput,
        );
        assert.equal(legacy.calls.at(-1)?.status, 200);
      } finally {
        await legacy.close();
      }
    });

    it('the protocol server rejects wrong shapes the way FastAPI does', async () => {
      const missing = await fetch(`${server.url}/update_weights_from_disk`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ path: '/x' }),
      });
      assert.equal(missing.status, 422);
      assert.deepEqual(await missing.json(), { detail: [{ loc: ['body', 'model_path'], msg: 'Field required', type: 'missing' }] });
      const wrongType = await fetch(`${server.url}/update_weights_from_disk`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model_path: 3 }),
      });
      assert.equal(wrongType.status, 422);
      assert.equal((await fetch(`${server.url}/update_weights`, { method: 'POST' })).status, 404);
    });

    it('an unknown version is refused before the server is called', async () => {
      const before = server.calls.length;
      await assert.rejects(
        make('sglang', server.url).sync(99, noProgress),
        /^LonghaulError: policy version 99 cannot be served: policy version 99 is not registered; sync only registered versions/,
      );
      assert.equal(server.calls.length, before);
    });

    it('a 503 and an unreachable server are retryable', async () => {
      server.failNext(1);
      await assert.rejects(
        make('sglang', server.url).sync(2, noProgress),
        (error: unknown) =>
          error instanceof LonghaulError && error.code === errorTypes.unavailable && /failed with HTTP 503/.test(error.message),
      );
      await assert.rejects(make('sglang', await closedPortUrl()).sync(2, noProgress), (error: unknown) => {
        assert.ok(error instanceof LonghaulError && error.code === errorTypes.unavailable);
        assert.match(
          error.message,
          /^SGLang at http:\/\/127\.0\.0\.1:\d+\/update_weights_from_disk is unreachable \(ECONNREFUSED\); start it or fix LONGHAUL_WEIGHT_SYNC_URL$/,
        );
        return true;
      });
    });
  });

  describe('vllm', () => {
    it('loads each version as a LoRA adapter, keeps the newest two, and treats a repeated load as done', async () => {
      const server = await startVllmServer();
      try {
        reloaded.length = 0;
        const sync = make('vllm', server.url);
        for (const version of [1, 2, 2, 3]) await sync.sync(version, noProgress);
        assert.deepEqual(server.loaded, [loraAdapterName(2), loraAdapterName(3)]);
        assert.deepEqual(
          server.calls.map((call) => [call.path, call.body, call.status]),
          [
            ['/v1/load_lora_adapter', { lora_name: 'longhaul-v1', lora_path: folders.get(1) }, 200],
            ['/v1/load_lora_adapter', { lora_name: 'longhaul-v2', lora_path: folders.get(2) }, 200],
            ['/v1/load_lora_adapter', { lora_name: 'longhaul-v2', lora_path: folders.get(2) }, 400],
            ['/v1/load_lora_adapter', { lora_name: 'longhaul-v3', lora_path: folders.get(3) }, 200],
            ['/v1/unload_lora_adapter', { lora_name: 'longhaul-v1' }, 200],
          ],
        );
        assert.deepEqual(reloaded, [1, 2, 2, 3]);
      } finally {
        await server.close();
      }
    });

    it("surfaces vLLM's error message (either error shape) when it refuses an adapter", async () => {
      for (const legacyErrors of [false, true]) {
        const server = await startVllmServer({ legacyErrors });
        try {
          await assert.rejects(make('vllm', server.url).sync(5, noProgress), (error: unknown) => {
            assert.ok(error instanceof LonghaulError && error.code === errorTypes.invalidInput);
            assert.equal(
              error.message,
              `vLLM refused LoRA adapter longhaul-v5 (policy version 5, ${folders.get(5)}): HTTP 404: Loading lora longhaul-v5 failed: No adapter found for ${folders.get(5)}. ` +
                'Fix: the folder must hold a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors) of the served base model, readable by the server, within its --max-lora-rank',
            );
            return true;
          });
        } finally {
          await server.close();
        }
      }
    });

    it('says how to start vLLM when runtime LoRA updating is off', async () => {
      const server = await startVllmServer({ runtimeLoraUpdating: false });
      try {
        await assert.rejects(
          make('vllm', server.url).sync(1, noProgress),
          /is not routed \(HTTP 404\): start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora/,
        );
      } finally {
        await server.close();
      }
    });

    it('the protocol server rejects wrong shapes the way vLLM does', async () => {
      const server = await startVllmServer();
      try {
        const post = (body: unknown, contentType = 'application/json') =>
          fetch(`${server.url}/v1/load_lora_adapter`, {
            method: 'POST',
            headers: { 'content-type': contentType },
            body: JSON.stringify(body),
          });
        const missing = await post({ lora_name: 'x' });
        assert.equal(missing.status, 400);
        assert.equal(((await missing.json()) as { error: { type: string } }).error.type, 'BadRequestError');
        assert.equal((await post({ lora_name: 'x', lora_path: '/x' }, 'text/plain')).status, 415);
        const empty = await post({ lora_name: '', lora_path: '' });
        assert.equal(
          ((await empty.json()) as { error: { message: string } }).error.message,
          "Both 'lora_name' and 'lora_path' must be provided.",
        );
      } finally {
        await server.close();
      }
    });

    it('an unreachable server is retryable', async () => {
      await assert.rejects(
        make('vllm', await closedPortUrl()).sync(1, noProgress),
        (error: unknown) => error instanceof LonghaulError && error.code === errorTypes.unavailable,
      );
    });
  });
});

describe('the syncWeights activity', () => {
  const fake = (kind: WeightSync['kind'], failure?: Error): WeightSync => ({
    kind,
    async sync(_version, progress) {
      progress('loading');
      await new Promise((resolve) => setTimeout(resolve, 30));
      if (failure) throw failure;
    },
  });
  const run = (weightSync: WeightSync, input: unknown) => {
    const environment = new MockActivityEnvironment();
    const beats: unknown[] = [];
    environment.on('heartbeat', (details: unknown) => beats.push(details));
    return { beats, result: environment.run(createWeightSyncActivities({ weightSync, heartbeatMs: 10 }).syncWeights, input as never) };
  };

  it('returns the adapter, version and seconds, heartbeating while it loads', async () => {
    const { beats, result } = run(fake('sglang'), { runId: 'r1', version: 4 });
    const outcome = (await result) as SyncWeightsResult;
    assert.equal(outcome.adapter, 'sglang');
    assert.equal(outcome.version, 4);
    assert.ok(outcome.seconds >= 0.02 && outcome.seconds < 5, `seconds ${outcome.seconds}`);
    assert.ok((outcome.phases?.loading ?? 0) >= 0.02, `the loading phase is timed: ${JSON.stringify(outcome.phases)}`);
    assert.deepEqual(beats[0], { runId: 'r1', version: 4, adapter: 'sglang', phase: 'starting' });
    assert.ok(beats.some((beat) => (beat as { phase: string }).phase === 'loading'));
  });

  it('fails a refused version without retries, naming the version, and retries an unreachable server', async () => {
    const refused = await run(
      fake(
        'vllm',
        new LonghaulError(
          errorTypes.invalidInput,
          'policy version 7 cannot be served: policy version 7 is not registered; sync only registered versions',
        ),
      ),
      { runId: 'r1', version: 7 },
    ).result.catch((error: unknown) => error);
    assert.ok(refused instanceof ApplicationFailure);
    assert.equal(refused.nonRetryable, true);
    assert.equal(refused.type, 'LonghaulInvalidInput');
    assert.equal(
      refused.message,
      'syncWeights (vllm): policy version 7 cannot be served: policy version 7 is not registered; sync only registered versions',
    );
    const down = await run(fake('sglang', new LonghaulError(errorTypes.unavailable, 'SGLang at http://x is unreachable (ECONNREFUSED)')), {
      runId: 'r1',
      version: 7,
    }).result.catch((error: unknown) => error);
    assert.ok(down instanceof ApplicationFailure);
    assert.equal(down.nonRetryable, false);
    assert.equal(down.type, 'LonghaulUnavailable');
  });

  it('refuses a bad input naming the field', async () => {
    for (const [input, message] of [
      [{ runId: 'r', version: -1 }, 'syncWeights: version: expected a policy version ≥ 0'],
      [{ runId: 'r', version: 1.5 }, 'syncWeights: version: expected an integer policy version'],
      [{ runId: '', version: 1 }, 'syncWeights: runId: expected the learner run id'],
    ] as const) {
      const failure = await run(fake('onnx'), input).result.catch((error: unknown) => error);
      assert.ok(failure instanceof ApplicationFailure && failure.nonRetryable);
      assert.equal(failure.message, message);
    }
  });
});

describe('weight-sync config', () => {
  it('defaults to onnx, derives the server URL from LONGHAUL_OPENAI_BASE_URL, and names a bad value', () => {
    assert.deepEqual(loadConfig({}).weightSync, { kind: 'onnx', url: null });
    assert.deepEqual(loadConfig({ LONGHAUL_WEIGHT_SYNC: 'sglang', LONGHAUL_OPENAI_BASE_URL: 'http://gpu:30000/v1' }).weightSync, {
      kind: 'sglang',
      url: 'http://gpu:30000',
    });
    assert.deepEqual(loadConfig({ LONGHAUL_WEIGHT_SYNC: 'vllm', LONGHAUL_WEIGHT_SYNC_URL: 'http://gpu:8000' }).weightSync, {
      kind: 'vllm',
      url: 'http://gpu:8000',
    });
    assert.throws(
      () => loadConfig({ LONGHAUL_WEIGHT_SYNC: 'deepspeed' }),
      (error: unknown) =>
        error instanceof LonghaulError &&
        error.code === errorTypes.invalidInput &&
        /^LONGHAUL_WEIGHT_SYNC="deepspeed" is invalid: .* Fix or unset LONGHAUL_WEIGHT_SYNC/.test(error.message),
    );
    assert.throws(
      () => loadConfig({ LONGHAUL_WEIGHT_SYNC_URL: 'gpu 8000' }),
      /LONGHAUL_WEIGHT_SYNC_URL="gpu 8000" is invalid: expected a URL such as http:\/\/127\.0\.0\.1:30000/,
    );
  });

  it('a server adapter without a URL, or onnx without a reloadable backend, is a LonghaulInvalidInput naming the variable', () => {
    const folderOf = async () => '/nowhere';
    assert.throws(
      () => createWeightSync({ kind: 'sglang', url: null }, { folderOf }),
      (error: unknown) =>
        error instanceof LonghaulError &&
        error.code === errorTypes.invalidInput &&
        error.message.startsWith('LONGHAUL_WEIGHT_SYNC_URL is required when LONGHAUL_WEIGHT_SYNC=sglang'),
    );
    assert.throws(
      () => createWeightSync({ kind: 'onnx', url: null }, { folderOf }),
      /LONGHAUL_WEIGHT_SYNC=onnx needs a worker whose backend can reload/,
    );
    assert.equal(createWeightSync({ kind: 'none', url: null }, { folderOf }).kind, 'none');
  });

  it('onnx sync in a worker that serves an openai server is refused per sync, saying which adapter fits', async () => {
    const local = {
      reload: async () => {
        throw new Error('must not reload');
      },
    };
    const sync = createWeightSync({ kind: 'onnx', url: null }, { local, backend: 'openai', folderOf: async () => '/nowhere' });
    await assert.rejects(
      sync.sync(3, noProgress),
      (error: unknown) =>
        error instanceof LonghaulError &&
        error.code === errorTypes.invalidInput &&
        error.message.startsWith(
          'policy version 3 not synced: LONGHAUL_WEIGHT_SYNC=onnx reloads a local ONNX model, but this worker serves LONGHAUL_POLICY_BACKEND=openai',
        ),
    );
  });
});
