/**
 * Where a batched decode step's time goes besides the onnxruntime session run, for docs/BENCHMARKS.md
 * (issue 12): at each row count, `rows` 64-token prompts are prefilled and then decode together for
 * `steps` steps, and each step's wall time is split into the session run (onnxruntime, inside
 * OnnxModel.runBatch), the decoder's own work (inputs, cache bookkeeping, handing the rows back) and
 * the policy's sampler over every row (greedy, top-p 0.9 and top-p 1 at temperature 0.8, timed on the
 * same logits). Last, the same feeds are run with every output fetched and with the logits only: the
 * difference is what handing the grown key/value cache back to JavaScript costs.
 * Run: `node dist/bench/decode-step-split.js <prepared model folder> [rows,…] [steps]`; one JSON line per row count.
 */
import os from 'node:os';
import type ort from 'onnxruntime-node';
import { BatchDecoder, type RunReport } from '../gpu/infer/batch-decoder.js';
import { readManifest } from '../gpu/infer/model-files.js';
import { OnnxModel } from '../gpu/infer/onnx-model.js';
import { chooseToken, seededRandom } from '../gpu/infer/sampling.js';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const round = (value: number) => Math.round(value * 100) / 100;

/** Wall time of `work` in ms. */
function timed(work: () => void): number {
  const started = performance.now();
  work();
  return performance.now() - started;
}

async function main(): Promise<void> {
  const [modelDir, rowsList = '1,8,32', stepsText = '16'] = process.argv.slice(2);
  if (!modelDir) throw new Error('usage: node dist/bench/decode-step-split.js <prepared model folder> [rows,…] [steps]');
  const model = await OnnxModel.load({
    modelDir,
    manifest: readManifest(modelDir),
    threads: Number(process.env.LONGHAUL_ONNX_THREADS ?? 0),
    spinning: ['1', 'true'].includes(process.env.LONGHAUL_ONNX_SPINNING ?? ''),
  });
  // The session is private to OnnxModel; this measurement wraps its run to time it.
  const session = (model as unknown as { session: ort.InferenceSession }).session;
  const run = session.run.bind(session) as (feeds: ort.InferenceSession.FeedsType, fetches?: string[]) => Promise<unknown>;
  let sessionMs: number[] = [];
  let lastFeeds: ort.InferenceSession.FeedsType | undefined;
  (session as { run: unknown }).run = async (feeds: ort.InferenceSession.FeedsType) => {
    lastFeeds = feeds;
    const started = performance.now();
    const outputs = await run(feeds);
    sessionMs.push(performance.now() - started);
    return outputs;
  };
  const random = seededRandom(1);
  for (const rows of rowsList.split(',').map(Number)) {
    const runs: RunReport[] = [];
    const decoder = new BatchDecoder({ model, maxBatchSize: Math.max(32, rows), onRun: (report) => runs.push(report) });
    const prompts = Array.from({ length: rows }, (_, row) =>
      Array.from({ length: 64 }, (_, index) => 100 + ((row * 31 + index * 7) % 5000)),
    );
    const prefilled = await Promise.all(prompts.map((prompt) => decoder.prefill(prompt)));
    let tokens = prefilled.map(({ logits }) => chooseToken(logits, { temperature: 0, topP: 1, random }).tokenId);
    sessionMs = [];
    runs.length = 0;
    const step: number[] = [];
    const greedy: number[] = [];
    const topP09: number[] = [];
    const topP1: number[] = [];
    for (let index = 0; index < Number(stepsText); index += 1) {
      const started = performance.now();
      const rowsLogits = await Promise.all(prefilled.map(({ sequence }, row) => decoder.decode(sequence, tokens[row]!)));
      step.push(performance.now() - started);
      greedy.push(timed(() => (tokens = rowsLogits.map((logits) => chooseToken(logits, { temperature: 0, topP: 1, random }).tokenId))));
      topP09.push(timed(() => rowsLogits.forEach((logits) => chooseToken(logits, { temperature: 0.8, topP: 0.9, random }))));
      topP1.push(timed(() => rowsLogits.forEach((logits) => chooseToken(logits, { temperature: 0.8, topP: 1, random }))));
    }
    const all: number[] = [];
    const logitsOnly: number[] = [];
    for (let repeat = 0; repeat < 7; repeat += 1) {
      let started = performance.now();
      await run(lastFeeds!);
      all.push(performance.now() - started);
      started = performance.now();
      await run(lastFeeds!, ['logits']);
      logitsOnly.push(performance.now() - started);
    }
    const runBatch = median(runs.filter((report) => report.kind === 'decode').map((report) => report.ms));
    console.log(
      JSON.stringify({
        rows,
        columns: runs.at(-1)?.columns,
        p50_step_ms: round(median(step)),
        p50_session_run_ms: round(median(sessionMs)),
        p50_decoder_own_ms: round(median(step) - median(sessionMs)),
        p50_run_batch_ms: round(runBatch),
        p50_sampling_all_rows_ms: { greedy: round(median(greedy)), t08_top_p_09: round(median(topP09)), t08_top_p_1: round(median(topP1)) },
        p50_run_every_output_ms: round(median(all)),
        p50_run_logits_only_ms: round(median(logitsOnly)),
        load_average: os.loadavg().map(round),
      }),
    );
    for (const { sequence } of prefilled) decoder.release(sequence);
    await decoder.close();
  }
  await model.close();
}

await main();
